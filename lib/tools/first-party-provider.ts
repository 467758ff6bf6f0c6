// The first-party tools (Files, Sharing, Calendar) as one ToolProvider. Every call acts as
// the invoking Nextcloud user from the server-built context (`ctx.user`), never as anyone an
// argument names. Write tools that need the user's consent are stored as pending actions and
// run only after the confirmation reply (lib/confirmations).
import type { ConfirmationExecutor, ProposedAction, RequestedConfirmation, StoredAction } from './confirmable.ts';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { AuditRecord } from './audit-record.ts';
import { CALENDAR_TOOLS } from './calendar/calendar-tools.ts';
import { COLLECTIVES_TOOLS } from './collectives/collectives-tools.ts';
import { DECK_TOOLS } from './deck/deck-tools.ts';
import { FILE_TOOLS } from './files/file-tools.ts';
import { CapabilityProbe, type Capabilities } from './first-party-capabilities.ts';
import { isToolResult, riskOf, type FirstPartyTool, type ToolEnv } from './first-party-tool.ts';
import { ResourceScope, type ResourceScopeInput } from './resource-scope.ts';
import { SHARING_TOOLS } from './sharing/sharing-tools.ts';
import {
  errorResult,
  markOutcome,
  textResult,
  turnOf,
  type ExecutionInfo,
  type ConfigValidation,
  type InvocationContext,
  type ToolDefinition,
  type ToolMetadata,
  type ToolProvider,
  type ToolResult,
} from './tool-provider.ts';

export const FIRST_PARTY_PROVIDER_ID = 'first-party';

/** Server-side rule for one tool of one bot; model arguments can never change it. */
export type ServerToolRule = 'default' | 'confirm' | 'forbid';
export type ServerToolPolicy = (botId: string, tool: string) => ServerToolRule | Promise<ServerToolRule>;

/** The part of ConfirmationService the provider needs. */
export interface ConfirmationRequester {
  requestConfirmation(ctx: InvocationContext, action: ProposedAction): Promise<RequestedConfirmation>;
  deliver(ctx: InvocationContext, requested: RequestedConfirmation): Promise<{ posted: boolean; notified: boolean }>;
  cancel(id: string): Promise<boolean>;
}

/** Re-decides a confirmed action's identity (lib/agent-profiles/execution-resolver.ts) and audits it. */
export interface ConfirmedExecutionGate {
  resolveConfirmed(
    action: StoredAction,
    confirmer: ActingUser,
  ): Promise<{ ok: true; user: ActingUser; execution: ExecutionInfo } | { ok: false; message: string }>;
  record(entry: AuditRecord): Promise<void>;
}

export interface FirstPartyProviderOptions {
  /** Agent profiles: without it, a stored agent-mode action is refused (fail closed). */
  execution?: ConfirmedExecutionGate | null;
  nextcloud: NextcloudClient;
  /** Without it, actions that need a confirmation are refused. */
  confirmations?: ConfirmationRequester | null;
  capabilities?: CapabilityProbe;
  /** Admin policy per bot and tool: demand confirmation for more tools, or forbid one. */
  serverPolicy?: ServerToolPolicy;
  /** Whether the turn already holds content the invoker did not type (memory of others, attachments, RAG, MCP; S6). */
  isTainted?: (ctx: InvocationContext) => boolean;
  now?: () => number;
  logger?: Logger;
}

export const ALL_FIRST_PARTY_TOOLS: readonly FirstPartyTool[] = [...FILE_TOOLS, ...SHARING_TOOLS, ...CALENDAR_TOOLS, ...DECK_TOOLS, ...COLLECTIVES_TOOLS];

const RULE_RANK: Record<ServerToolRule, number> = { default: 0, confirm: 1, forbid: 2 };

function stricter(a: ServerToolRule, b: ServerToolRule): ServerToolRule {
  return RULE_RANK[a] >= RULE_RANK[b] ? a : b;
}

/** The per-assignment config a bot owner may set: `{ requireConfirmation: true }`. */
function configRule(config: Record<string, unknown>): ServerToolRule {
  return config['requireConfirmation'] === true ? 'confirm' : 'default';
}

export class FirstPartyToolProvider implements ToolProvider, ConfirmationExecutor {
  readonly id = FIRST_PARTY_PROVIDER_ID;
  readonly #nextcloud: NextcloudClient;
  readonly #confirmations: ConfirmationRequester | null;
  readonly #capabilities: CapabilityProbe;
  readonly #serverPolicy: ServerToolPolicy;
  readonly #isTainted: (ctx: InvocationContext) => boolean;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  #execution: ConfirmedExecutionGate | null;
  readonly #tools = new Map<string, FirstPartyTool>();
  /** Turns in which a first-party tool returned untrusted content (S6). */
  readonly #tainted = new WeakSet<InvocationContext>();

  constructor(options: FirstPartyProviderOptions) {
    this.#nextcloud = options.nextcloud;
    this.#confirmations = options.confirmations ?? null;
    this.#capabilities =
      options.capabilities ??
      new CapabilityProbe(options.nextcloud, { ...(options.logger ? { logger: options.logger } : {}), ...(options.now ? { now: options.now } : {}) });
    this.#serverPolicy = options.serverPolicy ?? (() => 'default');
    this.#isTainted = options.isTainted ?? (() => false);
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
    this.#execution = options.execution ?? null;
    for (const t of ALL_FIRST_PARTY_TOOLS) this.#tools.set(t.definition.name, t);
  }

  async getTools(ctx: InvocationContext | null): Promise<ToolDefinition[]> {
    const caps = ctx?.user ? await this.#capabilities.forUser(ctx.user) : await this.#capabilities.forListing();
    return ALL_FIRST_PARTY_TOOLS.filter((t) => t.available(caps)).map((t) => t.definition);
  }

  providesTool(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Wires the agent-profile resolver for confirmed actions (bootstrap builds it later). */
  useExecutionGate(gate: ConfirmedExecutionGate): void {
    this.#execution = gate;
  }

  getToolMetadata(): Record<string, ToolMetadata> {
    const out: Record<string, ToolMetadata> = {};
    for (const t of ALL_FIRST_PARTY_TOOLS)
      out[t.definition.name] = { label: t.definition.label ?? t.definition.name, summary: t.definition.summary ?? '', family: t.family };
    return out;
  }

  validateConfig(name: string, config: Record<string, unknown>): ConfigValidation {
    if (!this.#tools.has(name)) return { ok: false, errors: { name: 'unknown tool' } };
    const errors: Record<string, string> = {};
    for (const [key, value] of Object.entries(config)) {
      if (key === 'requireConfirmation') {
        if (typeof value !== 'boolean') errors[key] = 'must be true or false';
      } else errors[key] = 'unknown setting';
    }
    return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, config: { ...config } };
  }

  /** Whether untrusted content entered this turn through a first-party tool or elsewhere (S6). */
  isTainted(ctx: InvocationContext): boolean {
    return this.#tainted.has(turnOf(ctx)) || this.#isTainted(ctx);
  }

  async executeTool(name: string, args: Record<string, unknown>, config: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    const tool = this.#tools.get(name);
    if (!tool) return errorResult(`ERROR: Unknown tool ${name}.`);
    const user = ctx.user;
    if (user === null || ctx.actorKind !== 'user') return errorResult('ERROR: This tool acts as a signed-in Nextcloud user and is not available here.');
    // The execution the server resolved for this call (scope, confirmation policy, mode); never from arguments.
    const execution = ctx.execution;
    const policy = execution?.confirmation ?? 'destructive';
    let rule = stricter(await this.#serverPolicy(ctx.botId, name), configRule(config));
    if (policy === 'always' && !tool.definition.policy.readOnly) rule = stricter(rule, 'confirm');
    if (rule === 'forbid') return markOutcome(errorResult(`ERROR: ${name} is not allowed for this bot.`), 'refused');
    const env = await this.#env(user, execution?.scope ?? ResourceScope.unrestricted);
    if (!tool.available(env.capabilities)) return errorResult(`ERROR: ${name} is not available on this Nextcloud (the feature is missing or switched off).`);

    if (tool.run) {
      const result = await tool.run(args, env);
      if (tool.taints && !result.isError) this.#tainted.add(turnOf(ctx));
      return result;
    }
    if (!tool.prepare || !tool.execute) return errorResult(`ERROR: ${name} cannot run.`);
    const prepared = await tool.prepare(args, env);
    if (isToolResult(prepared)) {
      if (tool.taints && !prepared.isError) this.#tainted.add(turnOf(ctx));
      return prepared;
    }
    // An agent profile's account is not the invoker's own: what it writes is never private to them.
    const declared = riskOf(tool, prepared);
    const risk = execution?.mode === 'agent' && declared === 'private' ? 'outward' : declared;
    if (policy === 'never' && (prepared.confirmReason !== null || risk === 'destructive')) {
      return markOutcome(
        errorResult(
          `ERROR: This bot may not ${prepared.description}: its settings forbid destructive actions${prepared.confirmReason ? ` (${prepared.confirmReason})` : ''}. Nothing was done.`,
        ),
        'refused',
      );
    }
    // S6: a tainted turn confirms only what reaches other people; a private, reversible write runs and is reported.
    const tainted = this.isTainted(ctx);
    const reason =
      prepared.confirmReason ??
      (risk === 'destructive'
        ? 'this deletes or overwrites something'
        : rule === 'confirm'
          ? "this bot's policy asks for confirmation of this tool"
          : tainted && risk === 'outward'
            ? "this conversation turn contains content you did not type (a file, an event or another person's message), and this reaches other people"
            : null);
    if (reason === null) {
      const result = await tool.execute({ args: prepared.args, binding: prepared.binding, ...(prepared.secrets ? { secrets: prepared.secrets } : {}) }, env);
      if (!tainted || result.isError) return result;
      return {
        ...result,
        content: [
          ...result.content,
          {
            type: 'text',
            text: `Done without a confirmation, because only ${user.uid} sees it and it can be undone: ${prepared.description}. Tell the user what was done.`,
          },
        ],
      };
    }

    // The invoker confirms, also in agent mode (where `user` is the profile's account).
    const turn = turnOf(ctx);
    const invoker = turn.user ?? user;
    if (!this.#confirmations || ctx.roomToken === null) {
      return errorResult(`ERROR: This action needs the user's confirmation (${reason}), which is only possible in a Talk conversation. Nothing was done.`);
    }
    const requested = await this.#confirmations
      .requestConfirmation(turn, {
        providerId: this.id,
        tool: name,
        args: prepared.args,
        binding: prepared.binding,
        ...(prepared.secrets ? { secrets: prepared.secrets } : {}),
        description: prepared.description,
        reason,
        ...(execution
          ? { execution: { mode: execution.mode, profileId: execution.profileId, scope: execution.scope.toJSON(), confirmation: execution.confirmation } }
          : {}),
      })
      .catch((err: unknown) => {
        this.#logger?.warn({ err, tool: name }, 'a confirmation could not be recorded');
        return null;
      });
    if (requested === null) return errorResult('ERROR: The confirmation could not be recorded, so nothing will happen.');
    const delivered = await this.#confirmations.deliver(turn, requested);
    if (!delivered.posted && !delivered.notified) {
      await this.#confirmations.cancel(requested.id);
      return errorResult('ERROR: The confirmation request could not be sent to the user, so nothing will happen. Try again later.');
    }
    // The code stays out of the model's context: only the user's own reply can confirm.
    return markOutcome(
      textResult(
        `NOT DONE YET. The server asked ${invoker.uid} to confirm: ${prepared.description}. ` +
          "It runs only if they answer the server's confirmation message in this conversation within 10 minutes. " +
          "Do not say it is done; tell the user to confirm or cancel as the server's message explains.",
      ),
      'confirmation-requested',
    );
  }

  /** Runs a confirmed, stored action (ConfirmationExecutor). */
  async executeConfirmed(action: StoredAction, user: ActingUser): Promise<ToolResult> {
    const tool = this.#tools.get(action.tool);
    if (!tool?.execute) return errorResult(`ERROR: The tool ${action.tool} is not available any more.`);
    if (user.uid !== action.userUid) return errorResult('ERROR: Only the user who asked can confirm this.');
    if ((await this.#serverPolicy(action.botId, action.tool)) === 'forbid') return errorResult(`ERROR: ${action.tool} is not allowed for this bot any more.`);
    // The action runs as the identity it was requested under, decided again now (profile, grant, account; S13).
    let acting = user;
    let execution: ExecutionInfo | null = null;
    if (this.#execution) {
      const resolved = await this.#execution.resolveConfirmed(action, user);
      if (!resolved.ok) {
        await this.#audit(
          action,
          user,
          null,
          { mode: action.execution?.['mode'] === 'agent' ? 'agent' : 'user', profileId: null },
          'refused',
          resolved.message,
        );
        return errorResult(`ERROR: Not allowed any more: ${resolved.message}. Nothing was done.`);
      }
      acting = resolved.user;
      execution = resolved.execution;
    } else if (action.execution?.['mode'] === 'agent') {
      return errorResult('ERROR: This action was requested through an agent profile, which cannot be checked now. Nothing was done.');
    }
    let scope = execution?.scope ?? ResourceScope.unrestricted;
    if (execution === null && action.execution?.['scope']) {
      try {
        scope = new ResourceScope(action.execution['scope'] as ResourceScopeInput);
      } catch {
        return errorResult('ERROR: The stored scope of this action is invalid. Nothing was done.');
      }
    }
    const env = await this.#env(acting, scope);
    if (!tool.available(env.capabilities)) return errorResult(`ERROR: ${action.tool} is not available on this Nextcloud any more.`);
    const result = await tool.execute({ args: action.args, binding: action.binding, ...(action.secrets ? { secrets: action.secrets } : {}) }, env);
    await this.#audit(
      action,
      user,
      acting,
      { mode: execution?.mode ?? 'user', profileId: execution?.profileId ?? null },
      result.isError ? 'error' : 'ok',
      result.isError ? String((result.content[0] as { text?: unknown } | undefined)?.text ?? '') : '',
    );
    return result;
  }

  async #audit(
    action: StoredAction,
    invoker: ActingUser,
    acting: ActingUser | null,
    how: { mode: 'user' | 'agent'; profileId: string | null },
    outcome: 'ok' | 'error' | 'refused',
    detail: string,
  ): Promise<void> {
    await this.#execution?.record({
      ...how,
      invokerUid: invoker.uid,
      actingUid: acting?.uid ?? null,
      botId: action.botId,
      roomToken: action.roomToken,
      tool: action.tool,
      args: action.args,
      outcome,
      detail: `confirmed${detail ? `: ${detail}` : ''}`,
    });
  }

  async #env(user: ActingUser, scope: ResourceScope): Promise<ToolEnv> {
    const capabilities: Capabilities = await this.#capabilities.forUser(user);
    return { user, session: this.#nextcloud.as(user), capabilities, now: this.#now, scope };
  }
}

/**
 * Server policy from the settings store: `{ "<botId>|*": { "<tool>": "confirm" | "forbid" } }`
 * under `tools.first-party.rules`. The stricter of the bot's and the instance-wide rule wins.
 */
export function settingsToolPolicy(read: () => Promise<unknown>): ServerToolPolicy {
  return async (botId, tool) => {
    const rules = (await read().catch(() => undefined)) as Record<string, Record<string, unknown> | undefined> | undefined;
    const pick = (scope: string | undefined): ServerToolRule => {
      const v = scope === undefined ? undefined : rules?.[scope]?.[tool];
      return v === 'confirm' || v === 'forbid' ? v : 'default';
    };
    return stricter(pick(botId), pick('*'));
  };
}
