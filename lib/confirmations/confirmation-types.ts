// Types shared by the confirmation service, the reaction watcher and the providers that ask (S7).
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ToolResult } from '../tools/tool-provider.ts';
import type { ConfirmationRow } from './confirmation-store.ts';
import type { StoredAction } from '../tools/confirmable.ts';

const MAX_RESULT_CHARS = 2000;

export type ReplyStatus =
  | 'executed'
  | 'failed'
  | 'cancelled'
  | 'code-mismatch'
  | 'missing-code'
  | 'expired'
  | 'already-used'
  | 'interrupted'
  | 'superseded'
  | 'not-yours'
  | 'other-room'
  | 'not-addressed';

export type ReplyOutcome =
  | { handled: false }
  | {
      handled: true;
      status: ReplyStatus;
      /** The bot whose pending action this was (the identity the server answers as); null if unknown. */
      botId: string | null;
      /** The text the server posts in answer. */
      reply: string;
      /** The executed action's result, when it ran. */
      result?: ToolResult;
      action?: StoredAction;
    };

export interface ReplyContext {
  /** The verified author (Talk confirmed the message as this user); null for guests and others. */
  author: ActingUser | null;
  /** The delivered webhook's type; only `Create` counts (file shares and edits are Activities). */
  deliveredType: string;
}

export interface BotLookup {
  get(id: string): Promise<{ mention: string; displayName: string } | null>;
  /** mention → bot id of active bots. */
  activeMentions(): Promise<Map<string, string>>;
}

export type AuthorizationCheck = (action: StoredAction, user: ActingUser) => Promise<{ ok: true } | { ok: false; reason: string }>;

/** Encrypts secret arguments at rest (the vault); `name` binds a ciphertext to its confirmation. */
export interface SecretSealer {
  encrypt(name: string, plaintext: string): Promise<string>;
  decrypt(name: string, ciphertext: string): Promise<string>;
}

export function firstText(result: ToolResult): string {
  const text = result.content
    .map((c) => (c.type === 'text' && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : ''))
    .join('\n')
    .trim();
  return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS - 3)}...` : text;
}

function parseJsonObject(text: string): Record<string, unknown> {
  const v: unknown = JSON.parse(text);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export function toStored(row: ConfirmationRow): StoredAction {
  return {
    id: row.id,
    userUid: row.user_uid,
    botId: row.bot_id,
    roomToken: row.room_token,
    providerId: row.provider_id,
    tool: row.tool_name,
    args: parseJsonObject(row.args),
    binding: parseJsonObject(row.binding),
    description: row.description,
    hash: row.action_hash,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    execution: row.execution ? parseJsonObject(row.execution) : null,
  };
}
