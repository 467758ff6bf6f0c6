// The contract every tool source implements: core built-ins, first-party tools, MCP servers and companions.

import { isIssued, type ActingUser } from '../nextcloud/identity.ts';
import type { JsonSchema } from './json-schema.ts';
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

export interface InvocationContext {
  readonly user: ActingUser | null;
  readonly actorKind: ActorKind;
  readonly botId: string;
  readonly roomToken: string | null;
  readonly threadId: string | null;
  readonly messageId: string | null;
  readonly attachments: ReadonlyArray<InvocationAttachment>;
  readonly traceId?: string;
  readonly signal?: AbortSignal;
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
  };
  Object.freeze(ctx);
  built.add(ctx);
  return ctx;
}

/** True only for contexts made by createInvocationContext. */
export function isInvocationContext(value: unknown): value is InvocationContext {
  return typeof value === 'object' && value !== null && built.has(value);
}

export function textResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: false };
}

export function errorResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
