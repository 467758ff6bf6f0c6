// Shapes of the agent-profile admin API (lib/server/routes/agent-profiles-api.ts) and the small
// conversions the profile, grant and audit sections share.
import { t } from '../../l10n.ts';

/** The tool families a profile may use; the server accepts exactly these. */
export const PROFILE_FAMILIES = ['files', 'sharing', 'calendar', 'deck', 'collectives'] as const;
export type ProfileFamily = (typeof PROFILE_FAMILIES)[number];

/** A registered tool server (MCP or companion, GET /api/v1/admin/mcp-servers), as a profile names it. */
export interface ToolServerRef {
  id: string;
  name: string;
  kind: 'mcp' | 'companion';
}

/** The profile's tool-family entry of a tool server (lib/agent-profiles/profile-coverage.ts). */
export function serverFamily(serverId: string): string {
  return `mcp:${serverId}`;
}

/** A first-party family, or a tool server by its current name (servers: the registered ones; null: not loaded). */
export function familyLabel(f: string, servers: readonly ToolServerRef[] | null = null): string {
  if (f.startsWith('mcp:')) {
    const id = f.slice('mcp:'.length);
    const server = servers?.find((s) => s.id === id);
    if (server) return t('educai', 'Tool server: {name}', { name: server.name });
    return servers === null ? t('educai', 'Tool server {id}', { id }) : t('educai', 'Tool server no longer registered ({id})', { id });
  }
  switch (f) {
    case 'files':
      return t('educai', 'Files');
    case 'sharing':
      return t('educai', 'Sharing');
    case 'calendar':
      return t('educai', 'Calendar');
    case 'deck':
      return t('educai', 'Deck');
    case 'collectives':
      return t('educai', 'Collectives');
    default:
      return f;
  }
}

export interface AgentProfile {
  id: string;
  label: string;
  accountUid: string;
  scopeDescription: string;
  toolFamilies: string[];
  triggerGroups: string[];
  confirmGroups: string[];
  enabled: boolean;
  /** Names only: values are write-only. */
  credentials: Array<{ name: string; set: true }>;
  createdAt: number;
  updatedAt: number;
}

export interface Scope {
  folders?: string[];
  calendars?: string[];
  boards?: number[];
  collectives?: number[];
}

export interface Grant {
  id: string;
  botId: string | null;
  ownerUid: string | null;
  maxScope: Scope;
  approvedBy: string;
  createdAt: number;
}

export interface AuditEntry {
  id: string;
  at: number;
  mode: 'user' | 'agent';
  profileId: string | null;
  invokerUid: string | null;
  actingUid: string | null;
  botId: string;
  roomToken: string | null;
  tool: string;
  argsHash: string;
  outcome: 'ok' | 'error' | 'refused' | 'confirmation-requested';
  detail: string;
}

export interface AdminBotRef {
  id: string;
  displayName: string;
  mention: string;
  ownerUid: string;
}

export interface GroupOption {
  id: string;
  displayName: string;
}

export type ScopeKind = keyof Scope;
export const SCOPE_KINDS: readonly ScopeKind[] = ['folders', 'calendars', 'boards', 'collectives'];

/** One scope kind in a form: unrestricted, or limited to the listed entries (none listed: nothing). */
export interface ScopeDraftKind {
  limited: boolean;
  text: string;
}
export type ScopeDraft = Record<ScopeKind, ScopeDraftKind>;

export function emptyScopeDraft(): ScopeDraft {
  return {
    folders: { limited: true, text: '' },
    calendars: { limited: false, text: '' },
    boards: { limited: false, text: '' },
    collectives: { limited: false, text: '' },
  };
}

function entries(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Ids of boards and collectives stay as typed when they are not numbers, so the server can name the problem. */
function idOrText(s: string): number | string {
  return /^\d{1,15}$/.test(s) ? Number(s) : s;
}

export function scopeFromDraft(d: ScopeDraft): Scope {
  const scope: Record<string, unknown> = {};
  if (d.folders.limited) scope['folders'] = entries(d.folders.text);
  if (d.calendars.limited) scope['calendars'] = entries(d.calendars.text);
  if (d.boards.limited) scope['boards'] = entries(d.boards.text).map(idOrText);
  if (d.collectives.limited) scope['collectives'] = entries(d.collectives.text).map(idOrText);
  return scope as Scope;
}

export function scopeKindLabel(kind: ScopeKind): string {
  switch (kind) {
    case 'folders':
      return t('educai', 'Folders');
    case 'calendars':
      return t('educai', 'Calendars');
    case 'boards':
      return t('educai', 'Deck boards');
    default:
      return t('educai', 'Collectives');
  }
}

/** "Folders: Shared/AI · Calendars: any · …" */
export function scopeSummary(scope: Scope): string {
  return SCOPE_KINDS.map((kind) => {
    const list = scope[kind];
    const value = list === undefined ? t('educai', 'any') : list.length === 0 ? t('educai', 'none') : list.join(', ');
    return `${scopeKindLabel(kind)}: ${value}`;
  }).join(' · ');
}

export function formatTime(ms: number): string {
  return new Date(ms).toLocaleString(document.documentElement.lang || undefined);
}

/** A date picker's day (local) as its first or last millisecond. */
export function dayBoundary(day: Date, end: boolean): number {
  const d = new Date(day.getFullYear(), day.getMonth(), day.getDate());
  if (end) d.setHours(23, 59, 59, 999);
  return d.getTime();
}
