// Every call goes through AppAPI's proxy with Nextcloud's request token,
// which the ExApp's CSRF guard requires on state-changing requests.
import { getRequestToken } from '@nextcloud/auth';
import { generateUrl } from '@nextcloud/router';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** Field-specific messages from the server's validation (`error.details.fields`). */
  readonly fields: Record<string, string>;

  constructor(status: number, code: string, message: string, fields: Record<string, string>) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields;
  }
}

export function proxyBase(appId = 'educai'): string {
  return generateUrl(`/apps/app_api/proxy/${appId}`);
}

/** Field messages: `details.fields` (bots, knowledge) or a flat `details` map (tools, traces). */
function fieldsOf(details: unknown): Record<string, string> {
  if (details === null || typeof details !== 'object') return {};
  const d = details as { fields?: unknown };
  const source = d.fields !== null && typeof d.fields === 'object' ? (d.fields as Record<string, unknown>) : (details as Record<string, unknown>);
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(source)) if (typeof value === 'string') out[key] = value;
  return out;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', requesttoken: getRequestToken() ?? '' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${proxyBase()}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const err = (json as { error?: { code?: string; message?: string; details?: unknown } } | null)?.error;
    throw new ApiError(res.status, err?.code ?? 'http_' + res.status, err?.message ?? `The server answered ${res.status}`, fieldsOf(err?.details));
  }
  return json as T;
}

export type Visibility = 'personal' | 'groups' | 'teams' | 'global';

export interface Me {
  uid: string;
  admin: boolean;
  version: string;
  language: string | null;
}

export interface Bot {
  id: string;
  mention: string;
  displayName: string;
  description: string;
  systemPrompt: string;
  model: string | null;
  temperature: number | null;
  visibility: Visibility;
  allowedGroups: string[];
  allowedTeams: string[];
  active: boolean;
  approvalStatus: 'personal' | 'draft' | 'pending' | 'approved';
  rejectionReason: string | null;
  ownerUid: string;
  updatedAt: number;
}

export interface CatalogBot {
  id: string;
  mention: string;
  displayName: string;
  description: string;
  ownerUid: string;
  visibility: Visibility;
  access: { type: 'owner' | 'tester' | 'global' | 'group' | 'team'; names: string[] };
  toolCount: number;
  tools: string[];
  /** Tools that act as a service account, with the agent profile's label only. */
  runsAs?: Array<{ tool: string; profileLabel: string }>;
  knowledgeEnabled: boolean;
  knowledgeSourceCount: number;
  hasOnboarding: boolean;
}

export interface ModelOption {
  ref: string;
  label: string;
}

export interface TraceSummary {
  id: string;
  botId?: string;
  startedAt?: number;
  status?: string;
  [key: string]: unknown;
}
