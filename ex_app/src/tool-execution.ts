// The execution policy of one tool assignment, as the bot editor edits it: the reserved config keys
// `agentProfile` (a profile id), `scope` and `confirmation` (lib/tools/tool-registry.ts). The server
// checks all of it again on save and at every call; this module only shapes what the form sends.
import type { AgentProfileOption, CatalogueTool, ToolScope } from './types.ts';

export type ScopeKind = 'folders' | 'calendars' | 'boards' | 'collectives';
export type ConfirmationPolicy = 'always' | 'destructive' | 'never';

export const SCOPE_KINDS: readonly ScopeKind[] = ['folders', 'calendars', 'boards', 'collectives'];
export const CONFIRMATION_POLICIES: readonly ConfirmationPolicy[] = ['always', 'destructive', 'never'];
/** The config keys this module owns; the tool picker shows their server errors at these fields. */
export const EXECUTION_KEYS = /\.(agentProfile|confirmation|scope)(\..*)?$/;

/** Families whose tools take an execution policy (the first-party ones), and the scope kinds each uses. */
const KINDS_OF_FAMILY: Record<string, ScopeKind[]> = {
  files: ['folders'],
  sharing: ['folders'],
  calendar: ['calendars'],
  deck: ['boards'],
  collectives: ['collectives'],
};

export function hasExecutionPolicy(family: string | null): boolean {
  return family !== null && Object.hasOwn(KINDS_OF_FAMILY, family);
}

export function scopeKindsOf(family: string | null): ScopeKind[] {
  return family !== null && Object.hasOwn(KINDS_OF_FAMILY, family) ? KINDS_OF_FAMILY[family]! : [];
}

/** A tool of a registered tool server (MCP or companion): its provider id is `mcp:<server id>`. */
export function isToolServer(provider: string): boolean {
  return provider.startsWith('mcp:');
}

/**
 * What the bot editor offers for a tool: the whole policy (first-party: Run as, scope, confirmation),
 * Run as only (tool servers: the server uses no scope, and when it asks for confirmation follows the
 * server's declarations and the admin's policy, not the assignment), or nothing.
 */
export type ExecutionFields = 'policy' | 'run-as' | null;

export function executionFieldsOf(tool: Pick<CatalogueTool, 'provider' | 'family'>): ExecutionFields {
  if (isToolServer(tool.provider)) return 'run-as';
  return tool.provider === 'first-party' && hasExecutionPolicy(tool.family) ? 'policy' : null;
}

/** The profiles covering a tool: a tool server's by its provider id (as the server checks), else its family. */
export function profilesFor(profiles: readonly AgentProfileOption[], tool: Pick<CatalogueTool, 'provider' | 'family'>): AgentProfileOption[] {
  if (isToolServer(tool.provider)) return profiles.filter((p) => p.toolFamilies.includes(tool.provider));
  const family = tool.family;
  return family === null ? [] : profiles.filter((p) => p.toolFamilies.includes(family));
}

/** Whether a tool's execution fields are worth showing: always for first-party ones, for a tool server only when a profile covers it or one is chosen. */
export function showsExecution(
  tool: Pick<CatalogueTool, 'provider' | 'family'>,
  profiles: readonly AgentProfileOption[],
  config: Record<string, unknown>,
): boolean {
  const fields = executionFieldsOf(tool);
  if (fields === 'policy') return true;
  return fields === 'run-as' && (config['agentProfile'] !== undefined || profilesFor(profiles, tool).length > 0);
}

/** Server errors shown at the execution fields (so not again in the tool's general list). */
export function shownAtExecutionField(tool: Pick<CatalogueTool, 'provider' | 'family'>, key: string): boolean {
  const fields = executionFieldsOf(tool);
  if (fields === 'policy') return EXECUTION_KEYS.test(key);
  return fields === 'run-as' && /\.agentProfile$/.test(key);
}

export function scopeOf(config: Record<string, unknown>): ToolScope {
  const scope = config['scope'];
  return scope !== null && typeof scope === 'object' && !Array.isArray(scope) ? (scope as ToolScope) : {};
}

/** The policy in force: `confirmation`, else the older "always ask" switch, else the server's default. */
export function confirmationOf(config: Record<string, unknown>): ConfirmationPolicy {
  const value = config['confirmation'];
  if (typeof value === 'string' && (CONFIRMATION_POLICIES as readonly string[]).includes(value)) return value as ConfirmationPolicy;
  return config['requireConfirmation'] === true ? 'always' : 'destructive';
}

/** One entry per line; numbers for boards and collectives (anything else is left for the server to refuse). */
export function parseScopeLines(kind: ScopeKind, text: string): Array<string | number> {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (kind === 'folders' || kind === 'calendars') return lines;
  return lines.map((l) => (/^\d{1,15}$/.test(l) ? Number(l) : l));
}

export function formatScope(values: ReadonlyArray<string | number> | undefined): string {
  return (values ?? []).join('\n');
}

function segments(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

/** Whether `inner` lies within `outer` for one kind (undefined = unrestricted), as the server's ResourceScope.covers. */
export function kindCovered(kind: ScopeKind, outer: ReadonlyArray<string | number> | undefined, inner: ReadonlyArray<string | number> | undefined): boolean {
  if (outer === undefined) return true;
  if (inner === undefined || inner.length === 0) return false;
  if (kind !== 'folders') return inner.every((v) => outer.includes(v));
  return inner.every((f) => {
    const path = segments(String(f));
    return outer.some((o) => {
      const prefix = segments(String(o));
      return prefix.length <= path.length && prefix.every((s, i) => s === path[i]);
    });
  });
}

function withScope(config: Record<string, unknown>, scope: ToolScope): Record<string, unknown> {
  const next = { ...config };
  if (Object.keys(scope).length === 0) delete next['scope'];
  else next['scope'] = scope;
  return next;
}

/** Sets one scope kind; an empty list means no limit for that kind. */
export function setScopeKind(config: Record<string, unknown>, kind: ScopeKind, values: Array<string | number>): Record<string, unknown> {
  const scope: Record<string, unknown> = { ...scopeOf(config) };
  if (values.length === 0) delete scope[kind];
  else scope[kind] = values;
  return withScope(config, scope as ToolScope);
}

/**
 * Chooses a profile (or null: the person who writes). A profile brings its maximum scope: the
 * owner's entries that lie inside it stay, every other kind it limits starts at its allowed values
 * (also kinds the tool does not use: the server wants the whole scope inside the grant). Back in
 * user mode, only the kinds the tool uses stay.
 */
export function chooseProfile(config: Record<string, unknown>, profile: AgentProfileOption | null, family: string | null): Record<string, unknown> {
  const current = scopeOf(config);
  const next = { ...config };
  if (profile === null) {
    delete next['agentProfile'];
    const kept: Record<string, unknown> = {};
    for (const kind of scopeKindsOf(family)) if (current[kind] !== undefined) kept[kind] = current[kind];
    return withScope(next, kept as ToolScope);
  }
  next['agentProfile'] = profile.id;
  const scope: Record<string, unknown> = {};
  for (const kind of SCOPE_KINDS) {
    const allowed = profile.maxScope[kind] as Array<string | number> | undefined;
    const mine = scopeKindsOf(family).includes(kind) ? (current[kind] as Array<string | number> | undefined) : undefined;
    if (allowed === undefined) {
      if (mine !== undefined) scope[kind] = mine;
    } else scope[kind] = kindCovered(kind, allowed, mine) ? mine : [...allowed];
  }
  return withScope(next, scope as ToolScope);
}

/** Sets the policy explicitly; it replaces the older "always ask" switch. */
export function setConfirmation(config: Record<string, unknown>, policy: ConfirmationPolicy): Record<string, unknown> {
  const next: Record<string, unknown> = { ...config, confirmation: policy };
  delete next['requireConfirmation'];
  return next;
}
