// All tool providers in one place: which tools a bot may use now, and how a call reaches its provider.

import { normalizeArguments } from './argument-normalizer.ts';
import { toolResultText } from './tool-output.ts';
import type { Logger } from '../log/logger.ts';
import { redactString } from '../log/redact.ts';
import { isPlainObject, serializeToolsForModel, setOwn, type ModelToolDefinition } from './json-schema.ts';
import { CONFIRMATION_POLICIES, ResourceScope, type ResourceScopeInput } from './resource-scope.ts';
import type { ToolPolicy } from './tool-policy.ts';
import {
  errorResult,
  textResult,
  resultOutcome,
  isInvocationContext,
  isValidToolName,
  type ConfigValidation,
  type InvocationContext,
  type ToolDefinition,
  type ToolMetadata,
  type ToolProvider,
  type ToolResult,
} from './tool-provider.ts';

/** Core tools are listed first and can never be shadowed; then first-party tools; then MCP servers and companions. */
export type ProviderTier = 'core' | 'first-party' | 'external';

export interface ToolAssignment {
  name: string;
  config: Record<string, unknown>;
}

export interface UnavailableTool {
  name: string;
  reason: string;
}

export type RegistryToolMetadata = ToolMetadata & {
  provider: string;
  available: boolean;
  /** Set by providers that pin their tools (MCP): listed, but waiting for an admin's approval. */
  pendingApproval?: boolean;
};

/**
 * Config keys the server itself reads, never sent to a provider: upstream `force` (call a tool on
 * every turn), and the execution policy of an assignment: `agentProfile` (an admin-created profile
 * id), `scope` (ResourceScopeInput) and `confirmation` (ConfirmationPolicy).
 */
export const RESERVED_CONFIG_KEYS: ReadonlySet<string> = new Set(['force', 'agentProfile', 'scope', 'confirmation']);

const PROFILE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ExecutionCall {
  tool: string;
  /** The tool's family from its provider's metadata (files, sharing, calendar, …); null when it has none. */
  family: string | null;
  /** The id of the tool's provider (`mcp:<server id>` for a tool server), which an agent profile may name too. */
  provider?: string;
  /** The assignment's reserved keys (agentProfile, scope, confirmation). */
  config: Record<string, unknown>;
}

export type ExecutionResolution = { ok: true; ctx: InvocationContext } | { ok: false; message: string; mode: 'user' | 'agent'; profileId: string | null };

export interface ExecutionAuditCall {
  tool: string;
  args: unknown;
  outcome: 'ok' | 'error' | 'refused' | 'confirmation-requested';
  detail?: string;
  mode?: 'user' | 'agent';
  profileId?: string | null;
}

/** Decides as whom each call runs and records every call (lib/agent-profiles/execution-resolver.ts). */
export interface ToolExecutionGate {
  resolve(ctx: InvocationContext, call: ExecutionCall): Promise<ExecutionResolution>;
  audit(ctx: InvocationContext, call: ExecutionAuditCall): Promise<void>;
}

export const REASON_REQUIRES_USER = 'This tool acts as a signed-in Nextcloud user, so it is not available to guests or other non-user participants.';
export const REASON_PROVIDER_UNAVAILABLE = 'This tool is currently unavailable: its provider is disabled, not configured or not reachable.';
export const REASON_PROVIDER_FAILED = 'This tool is currently unavailable: its provider failed to load.';
export const TOOL_NOT_AVAILABLE = 'Tool not available';

const TIER_RANK: Record<ProviderTier, number> = { core: 0, 'first-party': 1, external: 2 };
const MAX_ERROR_CHARS = 300;
const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)\]]*/gi;

interface Entry {
  provider: ToolProvider;
  tier: ProviderTier;
  order: number;
}

interface Claim {
  entry: Entry;
  def: ToolDefinition;
}

export interface Loadout {
  /** The tools the bot may call now, in assignment order. */
  readonly tools: ReadonlyArray<ToolDefinition>;
  /** Assigned tools that exist but cannot be used now, with a reason the model may repeat. */
  readonly unavailable: ReadonlyArray<UnavailableTool>;
  /** Assigned names no provider knows (for example, its app was removed); kept in storage, ignored here. */
  readonly inert: ReadonlyArray<string>;
  forModel(): ModelToolDefinition[];
  has(name: string): boolean;
  policyOf(name: string): ToolPolicy | null;
  /** Config of an assignment, including reserved keys such as `force`. */
  configOf(name: string): Record<string, unknown> | null;
  /** Never throws: every failure is a result with isError, text at most 4000 characters. */
  execute(name: string, rawArgs: unknown, ctx: InvocationContext): Promise<ToolResult>;
}

export interface ToolRegistryOptions {
  logger: Logger;
  /** Decides each call's identity and audits it; without it, calls run with the turn's context unchanged. */
  execution?: ToolExecutionGate;
}

/** First line of an error, without URLs or secrets, short enough for a model to read. */
export function safeErrorMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  message = (message.split(/\r?\n/)[0] ?? '').replace(URL_PATTERN, '[url]');
  message = redactString(message).trim();
  if (message.length > MAX_ERROR_CHARS) message = message.slice(0, MAX_ERROR_CHARS) + '...';
  return message === '' ? 'the tool failed' : message;
}

function validDefinition(def: unknown): def is ToolDefinition {
  if (def === null || typeof def !== 'object') return false;
  const d = def as Partial<ToolDefinition>;
  return (
    isValidToolName(d.name) &&
    typeof d.description === 'string' &&
    (d.schema === undefined || isPlainObject(d.schema)) &&
    d.policy !== null &&
    typeof d.policy === 'object' &&
    typeof d.policy.readOnly === 'boolean'
  );
}

function splitReserved(config: Record<string, unknown>): { reserved: Record<string, unknown>; rest: Record<string, unknown> } {
  const reserved: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (RESERVED_CONFIG_KEYS.has(key)) reserved[key] = value;
    else rest[key] = value;
  }
  return { reserved, rest };
}

/** Shape of the execution-policy keys (existence, grants and scopes are checked by lib/agent-profiles). */
function executionPolicyProblem(reserved: Record<string, unknown>): [string, string] | null {
  if ('agentProfile' in reserved && (typeof reserved['agentProfile'] !== 'string' || !PROFILE_ID.test(reserved['agentProfile'])))
    return ['agentProfile', 'Must be the id of an agent profile'];
  if ('confirmation' in reserved && !(CONFIRMATION_POLICIES as readonly unknown[]).includes(reserved['confirmation']))
    return ['confirmation', `Must be one of ${CONFIRMATION_POLICIES.join(', ')}`];
  if ('scope' in reserved) {
    const scope = reserved['scope'];
    if (!isPlainObject(scope)) return ['scope', 'Must be an object with folders, calendars, boards or collectives'];
    const unknown = Object.keys(scope).filter((k) => !['folders', 'calendars', 'boards', 'collectives'].includes(k));
    if (unknown.length > 0) return [`scope.${unknown[0]}`, 'Unknown scope kind'];
    try {
      new ResourceScope(scope as ResourceScopeInput);
    } catch (error) {
      return ['scope', error instanceof Error ? error.message : 'Invalid scope'];
    }
  }
  return null;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

function firstLine(text: string, max = 200): string {
  const line = (text.split(/\r?\n/)[0] ?? '').trim();
  return line.length > max ? line.slice(0, max - 3) + '...' : line;
}

class LoadoutImpl implements Loadout {
  readonly tools: ReadonlyArray<ToolDefinition>;
  readonly unavailable: ReadonlyArray<UnavailableTool>;
  readonly inert: ReadonlyArray<string>;
  readonly #claims: ReadonlyMap<string, Claim>;
  readonly #configs: ReadonlyMap<string, Record<string, unknown>>;
  readonly #botId: string;
  readonly #logger: Logger;
  readonly #gate: ToolExecutionGate | null;
  readonly #families: ReadonlyMap<string, string | null>;

  constructor(input: {
    claims: Map<string, Claim>;
    configs: Map<string, Record<string, unknown>>;
    unavailable: UnavailableTool[];
    inert: string[];
    botId: string;
    logger: Logger;
    gate: ToolExecutionGate | null;
    families: Map<string, string | null>;
  }) {
    this.#gate = input.gate;
    this.#families = input.families;
    this.#claims = input.claims;
    this.#configs = input.configs;
    this.#botId = input.botId;
    this.#logger = input.logger;
    this.tools = Object.freeze([...input.claims.values()].map((c) => c.def));
    this.unavailable = Object.freeze(input.unavailable.map((u) => Object.freeze({ ...u })));
    this.inert = Object.freeze([...input.inert]);
  }

  forModel(): ModelToolDefinition[] {
    return serializeToolsForModel(this.tools.map((t) => ({ name: t.name, description: t.description, schema: t.schema })));
  }

  has(name: string): boolean {
    return this.#claims.has(name);
  }

  policyOf(name: string): ToolPolicy | null {
    return this.#claims.get(name)?.def.policy ?? null;
  }

  configOf(name: string): Record<string, unknown> | null {
    const config = this.#configs.get(name);
    return config === undefined ? null : { ...config };
  }

  async execute(name: string, rawArgs: unknown, ctx: InvocationContext): Promise<ToolResult> {
    const claim = typeof name === 'string' ? this.#claims.get(name) : undefined;
    if (claim === undefined) {
      const missing = this.unavailable.find((u) => u.name === name);
      return errorResult(missing ? `${TOOL_NOT_AVAILABLE}: ${missing.reason}` : TOOL_NOT_AVAILABLE);
    }
    if (!isInvocationContext(ctx) || ctx.botId !== this.#botId) {
      return errorResult(`${TOOL_NOT_AVAILABLE}: the call does not belong to this bot's turn.`);
    }
    if (claim.def.requiresUser === true && ctx.user === null) return errorResult(`${TOOL_NOT_AVAILABLE}: ${REASON_REQUIRES_USER}`);
    if (ctx.signal?.aborted) return errorResult('ERROR: The tool call was cancelled.');

    const normalized = normalizeArguments(claim.def.schema ?? {}, rawArgs, name);
    if (!normalized.ok) {
      await this.#gate?.audit(ctx, { tool: name, args: rawArgs, outcome: 'error', detail: 'invalid arguments' });
      return errorResult(normalized.observation);
    }
    const { reserved, rest: config } = splitReserved(this.#configs.get(name) ?? {});

    // S10: in a reviewer's test of a pending version, a call that could change data is shown, not run.
    if (ctx.reviewMode === true && (claim.def.policy.readOnly !== true || claim.def.policy.destructive === true)) {
      await this.#gate?.audit(ctx, { tool: name, args: normalized.args, outcome: 'refused', detail: "dry run in a reviewer's test" });
      return textResult(
        `DRY RUN: this is a reviewer's test of a bot version waiting for approval, so ${name}, which can change data, was not run. ` +
          `It would have been called with ${truncate(JSON.stringify(normalized.args), 1000)}. Nothing was done; tell the reviewer what this call would have done.`,
      );
    }

    // The server decides as whom this call runs, from the assignment alone (never from the arguments).
    let callCtx = ctx;
    if (this.#gate !== null) {
      const resolved = await this.#gate
        .resolve(ctx, { tool: name, family: this.#families.get(name) ?? null, provider: claim.entry.provider.id, config: reserved })
        .catch((error: unknown) => {
          this.#logger.warn({ tool: name, err: error }, 'could not resolve how a tool call runs');
          return { ok: false as const, message: 'the server could not decide how this tool may run', mode: 'user' as const, profileId: null };
        });
      if (!resolved.ok) {
        await this.#gate.audit(ctx, {
          tool: name,
          args: normalized.args,
          outcome: 'refused',
          detail: resolved.message,
          mode: resolved.mode,
          profileId: resolved.profileId,
        });
        return errorResult(`ERROR: Not allowed: ${resolved.message}. Nothing was done.`);
      }
      callCtx = resolved.ctx;
    }

    let result: unknown;
    try {
      result = await claim.entry.provider.executeTool(name, normalized.args, config, callCtx);
    } catch (error) {
      this.#logger.warn({ provider: claim.entry.provider.id, tool: name, err: error }, 'tool execution failed');
      await this.#gate?.audit(callCtx, { tool: name, args: normalized.args, outcome: 'error', detail: safeErrorMessage(error) });
      return errorResult(`ERROR: ${safeErrorMessage(error)}`);
    }
    const isError = result !== null && typeof result === 'object' && (result as { isError?: unknown }).isError === true;
    const text = toolResultText(result);
    if (this.#gate !== null) {
      const marked = result !== null && typeof result === 'object' ? resultOutcome(result as ToolResult) : null;
      await this.#gate.audit(callCtx, {
        tool: name,
        args: normalized.args,
        outcome: marked ?? (isError ? 'error' : 'ok'),
        ...(isError || marked ? { detail: text } : {}),
      });
    }
    return { content: [{ type: 'text', text }], isError };
  }
}

export class ToolRegistry {
  readonly #logger: Logger;
  #gate: ToolExecutionGate | null;
  readonly #entries: Entry[] = [];
  #order = 0;
  readonly #warned = new Set<string>();
  /** What each provider listed last time (for metadata `available`). */
  readonly #listed = new Map<string, Map<string, ToolDefinition>>();

  constructor(options: ToolRegistryOptions) {
    this.#logger = options.logger;
    this.#gate = options.execution ?? null;
  }

  /** Wires the execution resolver (bootstrap builds it after the registry). */
  useExecutionGate(gate: ToolExecutionGate): void {
    this.#gate = gate;
  }

  register(provider: ToolProvider, tier: ProviderTier): void {
    if (provider === null || typeof provider !== 'object' || typeof provider.id !== 'string' || provider.id === '') {
      throw new TypeError('a tool provider needs a non-empty id');
    }
    if (!(tier in TIER_RANK)) throw new TypeError(`unknown provider tier ${String(tier)}`);
    if (this.#entries.some((e) => e.provider.id === provider.id)) throw new Error(`tool provider ${provider.id} is already registered`);
    this.#entries.push({ provider, tier, order: this.#order++ });
    this.#entries.sort((a, b) => TIER_RANK[a.tier] - TIER_RANK[b.tier] || a.order - b.order);
  }

  /** Removing a provider leaves assignments to its tools stored; they become inert. */
  unregister(id: string): boolean {
    const index = this.#entries.findIndex((e) => e.provider.id === id);
    if (index < 0) return false;
    this.#entries.splice(index, 1);
    this.#listed.delete(id);
    return true;
  }

  providers(): Array<{ id: string; tier: ProviderTier }> {
    return this.#entries.map((e) => ({ id: e.provider.id, tier: e.tier }));
  }

  async loadout(ctx: InvocationContext, assignments: ReadonlyArray<ToolAssignment>): Promise<Loadout> {
    if (!isInvocationContext(ctx)) throw new TypeError('loadout needs a context made by createInvocationContext');
    const wanted = new Map<string, Record<string, unknown>>();
    for (const a of Array.isArray(assignments) ? assignments : []) {
      if (a === null || typeof a !== 'object' || !isValidToolName(a.name) || wanted.has(a.name)) continue;
      wanted.set(a.name, isPlainObject(a.config) ? { ...a.config } : {});
    }

    const entries = [...this.#entries];
    const reserved = this.#coreNames(entries);
    // Core tools are always listed (they reserve names); other providers only when they could serve an assigned name.
    const relevant = entries.filter((e) => e.tier === 'core' || [...wanted.keys()].some((n) => this.#provides(e, n)));
    const failed = new Set<string>();
    const listings = await Promise.all(relevant.map((e) => this.#list(e, ctx, failed)));

    const claims = new Map<string, Claim>();
    relevant.forEach((entry, i) => this.#claim(entry, listings[i] ?? [], reserved, claims));

    const tools = new Map<string, Claim>();
    const configs = new Map<string, Record<string, unknown>>();
    const unavailable: UnavailableTool[] = [];
    const inert: string[] = [];
    for (const [name, config] of wanted) {
      const claim = claims.get(name);
      if (claim !== undefined) {
        if (claim.def.requiresUser === true && ctx.user === null) {
          unavailable.push({ name, reason: REASON_REQUIRES_USER });
          continue;
        }
        tools.set(name, claim);
        configs.set(name, config);
        continue;
      }
      const owners = entries.filter((e) => this.#provides(e, name));
      if (owners.length === 0) inert.push(name);
      else if (owners.some((e) => failed.has(e.provider.id))) unavailable.push({ name, reason: REASON_PROVIDER_FAILED });
      else unavailable.push({ name, reason: REASON_PROVIDER_UNAVAILABLE });
    }
    const families = new Map<string, string | null>();
    for (const [name, claim] of tools) {
      const family = this.#metadataOf(claim.entry)[name]?.family;
      families.set(name, typeof family === 'string' ? family : null);
    }
    return new LoadoutImpl({ claims: tools, configs, unavailable, inert, botId: ctx.botId, logger: this.#logger, gate: this.#gate, families });
  }

  /**
   * Labels per tool name, including tools whose provider lists nothing right now.
   * `available` reflects the provider's latest listing (see refreshAvailability).
   */
  metadata(): Record<string, RegistryToolMetadata> {
    const out: Record<string, RegistryToolMetadata> = {};
    for (const entry of this.#entries) {
      const listed = this.#listed.get(entry.provider.id) ?? new Map<string, ToolDefinition>();
      for (const [name, meta] of Object.entries(this.#metadataOf(entry))) {
        if (!isValidToolName(name) || Object.hasOwn(out, name)) continue;
        const item: RegistryToolMetadata = {
          label: typeof meta?.label === 'string' && meta.label !== '' ? meta.label : name,
          summary: typeof meta?.summary === 'string' ? meta.summary : '',
          provider: entry.provider.id,
          available: listed.has(name),
        };
        if (typeof meta?.family === 'string') item.family = meta.family;
        const pending = (meta as { pendingApproval?: unknown } | undefined)?.pendingApproval;
        if (typeof pending === 'boolean') item.pendingApproval = pending;
        setOwn(out, name, item);
      }
      for (const [name, def] of listed) {
        if (Object.hasOwn(out, name)) continue;
        setOwn(out, name, { label: def.label ?? name, summary: def.summary ?? firstLine(def.description), provider: entry.provider.id, available: true });
      }
    }
    return out;
  }

  /** Lists every provider once without a turn context, so metadata() knows what is available. */
  async refreshAvailability(): Promise<void> {
    await Promise.all(this.#entries.map((e) => this.#list(e, null, new Set())));
  }

  /**
   * Checks per-assignment configs before they are stored. Reserved keys are the agent's own;
   * the rest must satisfy the provider's declared schema, or be empty when it declares none.
   */
  validateAssignments(assignments: ReadonlyArray<ToolAssignment>): { ok: true; assignments: ToolAssignment[] } | { ok: false; errors: Record<string, string> } {
    const errors: Record<string, string> = {};
    const out: ToolAssignment[] = [];
    for (const a of Array.isArray(assignments) ? assignments : []) {
      if (a === null || typeof a !== 'object' || !isValidToolName(a.name)) {
        setOwn(errors, String(a?.name ?? ''), 'Not a valid tool name');
        continue;
      }
      const config = a.config === undefined ? {} : a.config;
      if (!isPlainObject(config)) {
        setOwn(errors, a.name, 'Config must be an object');
        continue;
      }
      const { reserved, rest } = splitReserved(config);
      if ('force' in reserved && typeof reserved['force'] !== 'boolean') {
        setOwn(errors, `${a.name}.force`, 'Must be true or false');
        continue;
      }
      const policyProblem = executionPolicyProblem(reserved);
      if (policyProblem !== null) {
        setOwn(errors, `${a.name}.${policyProblem[0]}`, policyProblem[1]);
        continue;
      }
      const entry = this.#entries.find((e) => this.#provides(e, a.name));
      let checked: ConfigValidation;
      if (entry?.provider.validateConfig) {
        try {
          checked = entry.provider.validateConfig(a.name, rest);
        } catch (error) {
          checked = { ok: false, errors: { config: safeErrorMessage(error) } };
        }
      } else {
        checked = Object.keys(rest).length === 0 ? { ok: true, config: {} } : { ok: false, errors: { config: 'This tool takes no configuration' } };
      }
      if (!checked.ok) {
        for (const [field, message] of Object.entries(checked.errors)) setOwn(errors, `${a.name}.${field}`, message);
        continue;
      }
      out.push({ name: a.name, config: { ...checked.config, ...reserved } });
    }
    return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, assignments: out };
  }

  #provides(entry: Entry, name: string): boolean {
    try {
      if (entry.provider.providesTool(name) === true) return true;
    } catch (error) {
      this.#logger.warn({ provider: entry.provider.id, err: error }, 'tool provider failed in providesTool');
    }
    return this.#listed.get(entry.provider.id)?.has(name) === true;
  }

  #metadataOf(entry: Entry): Record<string, ToolMetadata> {
    try {
      const meta = entry.provider.getToolMetadata();
      return isPlainObject(meta) ? (meta as Record<string, ToolMetadata>) : {};
    } catch (error) {
      this.#logger.warn({ provider: entry.provider.id, err: error }, 'tool provider failed in getToolMetadata');
      return {};
    }
  }

  #coreNames(entries: Entry[]): Set<string> {
    const names = new Set<string>();
    for (const entry of entries) {
      if (entry.tier !== 'core') continue;
      for (const name of Object.keys(this.#metadataOf(entry))) names.add(name);
      for (const name of this.#listed.get(entry.provider.id)?.keys() ?? []) names.add(name);
    }
    return names;
  }

  async #list(entry: Entry, ctx: InvocationContext | null, failed: Set<string>): Promise<ToolDefinition[]> {
    const id = entry.provider.id;
    let raw: unknown;
    try {
      raw = await entry.provider.getTools(ctx);
    } catch (error) {
      failed.add(id);
      this.#listed.set(id, new Map());
      this.#logger.warn({ provider: id, err: error }, 'tool provider failed in getTools; its tools are skipped');
      return [];
    }
    const defs: ToolDefinition[] = [];
    const listed = new Map<string, ToolDefinition>();
    for (const def of Array.isArray(raw) ? raw : []) {
      if (!validDefinition(def)) {
        this.#warnOnce(
          `invalid\0${id}\0${String((def as { name?: unknown })?.name)}`,
          { provider: id, tool: String((def as { name?: unknown })?.name ?? '') },
          'tool provider listed an invalid tool definition; skipped',
        );
        continue;
      }
      if (listed.has(def.name)) continue;
      const frozen = Object.freeze({ ...def, schema: def.schema ?? {} });
      listed.set(def.name, frozen);
      defs.push(frozen);
    }
    this.#listed.set(id, listed);
    return defs;
  }

  #claim(entry: Entry, defs: ToolDefinition[], reserved: Set<string>, claims: Map<string, Claim>): void {
    for (const def of defs) {
      const holder = claims.get(def.name);
      if (holder !== undefined) {
        this.#warnOnce(
          `collision\0${entry.provider.id}\0${def.name}\0${holder.entry.provider.id}`,
          { provider: entry.provider.id, tool: def.name, heldBy: holder.entry.provider.id },
          'tool name already taken by another provider; skipped',
        );
        continue;
      }
      if (entry.tier !== 'core' && (reserved.has(def.name) || this.#entries.some((e) => e.tier === 'core' && this.#provides(e, def.name)))) {
        this.#warnOnce(`core\0${entry.provider.id}\0${def.name}`, { provider: entry.provider.id, tool: def.name }, 'tool would shadow a core tool; skipped');
        continue;
      }
      claims.set(def.name, { entry, def });
    }
  }

  #warnOnce(key: string, fields: Record<string, unknown>, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#logger.warn(fields, message);
  }
}
