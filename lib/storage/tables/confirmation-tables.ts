/**
 * Row types of migration 0007-confirmations. Timestamps are ms since the epoch; JSON is text.
 */
export type ConfirmationStatus = 'pending' | 'running' | 'done' | 'failed' | 'cancelled' | 'superseded' | 'expired';

export interface PendingConfirmationsTable {
  id: string;
  user_uid: string;
  bot_id: string;
  room_token: string;
  provider_id: string;
  tool_name: string;
  /** Canonical JSON of the arguments that will run. */
  args: string;
  /** Canonical JSON of the object state the action is bound to. */
  binding: string;
  description: string;
  /** Vault ciphertext (JWE) of secret arguments; cleared once the action leaves `pending`. */
  sealed_secrets: string | null;
  /** SHA-256 of the canonical action (user, bot, room, provider, tool, args, binding). */
  action_hash: string;
  code: string;
  status: ConfirmationStatus;
  attempts: number;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
  consumed_message_id: string | null;
  result: string | null;
  updated_at: number;
  /** Canonical JSON of how the action was requested (mode, profile id, scope; migration 0014); null for older rows. */
  execution?: string | null;
  /** The referenceId the request was posted with (migration 0016); null for older rows. */
  talk_reference_id?: string | null;
  /** Talk's id of the posted request, once found in the chat by `talk_reference_id` (migration 0016). */
  talk_message_id?: string | null;
}

export interface ConfirmationTables {
  pending_confirmations: PendingConfirmationsTable;
}
