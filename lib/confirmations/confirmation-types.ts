// Types shared by the confirmation service, the reaction watcher and the providers that ask (S7).
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ToolResult } from '../tools/tool-provider.ts';
import type { ConfirmationRow } from './confirmation-store.ts';

const MAX_RESULT_CHARS = 2000;

export interface ProposedAction {
  providerId: string;
  tool: string;
  args: Record<string, unknown>;
  binding: Record<string, unknown>;
  /** Values that must never wait in storage as plain text; sealed with `sealer` until the action runs. */
  secrets?: Record<string, string>;
  /** What will happen, e.g. "delete the file /a.txt (file id 38) to the trash bin". */
  description: string;
  /** Why it needs confirmation, e.g. "deleting a file". */
  reason: string;
  /** How the call ran (mode, agent profile id, scope); the action runs the same way once confirmed. */
  execution?: Record<string, unknown>;
}

export interface StoredAction {
  id: string;
  userUid: string;
  botId: string;
  roomToken: string;
  providerId: string;
  tool: string;
  args: Record<string, unknown>;
  binding: Record<string, unknown>;
  /** Unsealed only for the executor, while the confirmed action runs; absent otherwise. */
  secrets?: Record<string, string>;
  description: string;
  hash: string;
  createdAt: number;
  expiresAt: number;
  /** How the call was requested (mode, agent profile id, scope); null for user-mode actions of older versions. */
  execution?: Record<string, unknown> | null;
}

/** Implemented by tool providers whose actions can wait for a confirmation. */
export interface ConfirmationExecutor {
  readonly id: string;
  /** Runs exactly the stored action as `user`, after checking the object's state again. */
  executeConfirmed(action: StoredAction, user: ActingUser): Promise<ToolResult>;
}

export interface NotificationPayload {
  params: {
    object: string;
    object_id: string;
    subject_type: string;
    subject_params: {
      rich_subject: string;
      rich_subject_params: Record<string, { type: string; id: string; name: string }>;
      rich_message: string;
      rich_message_params: Record<string, { type: string; id: string; name: string }>;
      link?: string;
    };
  };
}

export interface RequestedConfirmation {
  id: string;
  code: string;
  expiresAt: number;
  /** The text the server posts in the room (never the model). */
  text: string;
  /** For the user alone, outside one-to-one rooms (moderators can edit bot messages, S7). */
  notification: NotificationPayload | null;
  /** Ids of the user's older pending actions in this room with this bot, now cancelled. */
  superseded: string[];
  /** The referenceId the request is posted with, to find its Talk message id later (reactions, issue 23). */
  referenceId: string;
}

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

