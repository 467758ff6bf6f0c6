// The contract every tool source implements: core built-ins, first-party tools, MCP servers and companions.

import { isIssued, type ActingUser } from '../nextcloud/identity.ts';
import type { JsonSchema } from './json-schema.ts';
import type { ConfirmationPolicy, ResourceScope } from './resource-scope.ts';
import type { ToolPolicy } from './tool-policy.ts';

export type { JsonSchema };

export interface ToolDefinition {
  /** Unique across the loadout; matches TOOL_NAME_PATTERN. */
  name: string;
  /** Model-facing description. */
  description: string;
  schema: JsonSchema;
  policy: ToolPolicy;
  label?: string;
  summary?: string;
  /** A user-mode tool: it acts as the invoking Nextcloud user, so guests never get it. */
  requiresUser?: boolean;
}

export type ActorKind = 'user' | 'guest' | 'federated' | 'other';

export interface InvocationAttachment {
  fileId: string;
  name: string;
  mimeType: string;
  kind: string;
}

/** How one tool call runs, decided by the server (lib/agent-profiles/execution-resolver.ts), never by the model. */
export interface ExecutionInfo {
  readonly mode: 'user' | 'agent';
  /** The agent profile the call acts under (agent mode only). */
  readonly profileId: string | null;
  /** What this assignment may touch (in agent mode: the owner's scope within the admin's grant). */
  readonly scope: ResourceScope;
  readonly confirmation: ConfirmationPolicy;
}

export interface InvocationContext {
  /** Who the call acts as: the invoker in user mode, the profile's account in agent mode. */
  readonly user: ActingUser | null;
  readonly actorKind: ActorKind;
  readonly botId: string;
  readonly roomToken: string | null;
  readonly threadId: string | null;
  readonly messageId: string | null;
  readonly attachments: ReadonlyArray<InvocationAttachment>;
  readonly traceId?: string;
  readonly signal?: AbortSignal;
  /** A reviewer tests a pending version (S10): no agent profile. */
  readonly reviewMode?: boolean;
  /** Per-call contexts only (deriveInvocationContext): the Talk user who triggered the call. */
  readonly invoker?: ActingUser | null;
  /** Per-call contexts only: the resolved execution. */
  readonly execution?: ExecutionInfo;
  /** Per-call contexts only: the turn's own context (per-turn state such as taint is keyed on it). */
  readonly turn?: InvocationContext;
}

export type ToolContentBlock = { type: 'text'; text: string } | { type: string; [k: string]: unknown };

export interface ToolResult {
  content: ToolContentBlock[];
  isError: boolean;
}

export interface ToolMetadata {
  label: string;
  summary: string;
  family?: string;
}

export type ConfigValidation = { ok: true; config: Record<string, unknown> } | { ok: false; errors: Record<string, string> };

export interface ToolProvider {
  readonly id: string;
  /** Tools available now; `ctx` is null when listing for the admin or settings UI. May be [] when unconfigured. */
  getTools(ctx: InvocationContext | null): Promise<ToolDefinition[]> | ToolDefinition[];
  /** Whether this provider executes `name` (aliases included), even while it lists nothing. */
  providesTool(name: string): boolean;
  executeTool(name: string, args: Record<string, unknown>, config: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult>;
  /** Static labels per tool name; must work while the provider is disabled or unconfigured. */
  getToolMetadata(): Record<string, ToolMetadata>;
  /** Checks a per-assignment config against the schema the provider declares for `name`. Without it, only `{}` is accepted. */
  validateConfig?(name: string, config: Record<string, unknown>): ConfigValidation;
}

/** Names every OpenAI-compatible provider accepts. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export function isValidToolName(name: unknown): name is string {
  return typeof name === 'string' && TOOL_NAME_PATTERN.test(name);
}

export interface InvocationContextInput {
  user: ActingUser | null;
  actorKind: ActorKind;
  botId: string;
  roomToken?: string | null;
  threadId?: string | null;
  messageId?: string | null;
  attachments?: ReadonlyArray<InvocationAttachment>;
  traceId?: string;
  signal?: AbortSignal;
  reviewMode?: boolean;
}

const ACTOR_KINDS: ReadonlySet<string> = new Set(['user', 'guest', 'federated', 'other']);
const built = new WeakSet<object>();

function optionalId(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > 255) throw new TypeError(`invocation context: ${field} must be a string of at most 255 characters`);
  return value;
}

/**
 * Builds the frozen context a provider runs under. Only server code calls this,
 * with a user issued from a verified source; nothing here comes from tool arguments.
 */
export function createInvocationContext(input: InvocationContextInput): InvocationContext {
  if (input === null || typeof input !== 'object') throw new TypeError('invocation context: input must be an object');
  const user = input.user ?? null;
  if (user !== null && !isIssued(user)) throw new TypeError('invocation context: user must be an ActingUser issued from a verified source');
  if (!ACTOR_KINDS.has(input.actorKind)) throw new TypeError('invocation context: unknown actor kind');
  if (user !== null && input.actorKind !== 'user') throw new TypeError('invocation context: only a user actor carries a user');
  if (typeof input.botId !== 'string' || input.botId === '' || input.botId.length > 64) throw new TypeError('invocation context: botId is required');
  const attachments = (input.attachments ?? []).map((a) =>
    Object.freeze({ fileId: String(a.fileId), name: String(a.name), mimeType: String(a.mimeType), kind: String(a.kind) }),
  );
  const ctx: InvocationContext = {
    user,
    actorKind: input.actorKind,
    botId: input.botId,
    roomToken: optionalId(input.roomToken, 'roomToken'),
    threadId: optionalId(input.threadId, 'threadId'),
    messageId: optionalId(input.messageId, 'messageId'),
    attachments: Object.freeze(attachments),
    ...(input.traceId !== undefined ? { traceId: String(input.traceId) } : {}),
    ...(input.signal !== undefined ? { signal: input.signal } : {}),
    ...(input.reviewMode === true ? { reviewMode: true } : {}),
  };
  Object.freeze(ctx);
  built.add(ctx);
  return ctx;
}

/**
 * The context of one tool call: the turn's context with the acting user and execution the
 * server resolved. Only the execution resolver calls this; nothing here comes from arguments.
 */
export function deriveInvocationContext(base: InvocationContext, input: { user: ActingUser; execution: ExecutionInfo }): InvocationContext {
  if (!isInvocationContext(base)) throw new TypeError('invocation context: derive needs a context made by createInvocationContext');
  if (!isIssued(input.user)) throw new TypeError('invocation context: user must be an ActingUser issued from a verified source');
  const turn = turnOf(base);
  const ctx: InvocationContext = { ...turn, user: input.user, actorKind: 'user', invoker: turn.user, execution: Object.freeze({ ...input.execution }), turn };
  Object.freeze(ctx);
  built.add(ctx);
  return ctx;
}

/** The turn's own context of a per-call context (itself for a turn context). */
export function turnOf(ctx: InvocationContext): InvocationContext {
  return ctx.turn ?? ctx;
}

/** True only for contexts made by createInvocationContext. */
export function isInvocationContext(value: unknown): value is InvocationContext {
  return typeof value === 'object' && value !== null && built.has(value);
}

const outcomes = new WeakMap<ToolResult, 'refused' | 'confirmation-requested'>();

/** Marks a result for the audit trail: refused by a server policy, or waiting for the user's confirmation. */
export function markOutcome<T extends ToolResult>(result: T, outcome: 'refused' | 'confirmation-requested'): T {
  outcomes.set(result, outcome);
  return result;
}

export function resultOutcome(result: ToolResult): 'refused' | 'confirmation-requested' | null {
  return outcomes.get(result) ?? null;
}

export function textResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: false };
}

export function errorResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
