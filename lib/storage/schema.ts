/**
 * Row types of every table. Timestamps are milliseconds since the epoch;
 * booleans are 0/1 integers and JSON is text, so one schema fits SQLite and
 * PostgreSQL.
 */
import type { Generated } from 'kysely';
import type { RateLimitTables } from './tables/rate-limit-tables.ts';
import type { RequestQueueTables } from './tables/request-queue-tables.ts';
import type { TraceTables } from './tables/trace-tables.ts';
import type { ToolTables } from './tables/tool-tables.ts';
import type { BotGovernanceColumns, GovernanceTables } from './tables/governance-tables.ts';
import type { ConfirmationTables } from './tables/confirmation-tables.ts';
import type { UserTables } from './tables/user-tables.ts';
import type { KnowledgeTables } from './tables/knowledge-tables.ts';
import type { WikiTables } from './tables/wiki-tables.ts';
import type { AgentProfileTables } from './tables/agent-profile-tables.ts';

export interface SettingsTable {
  key: string;
  value: string;
  updated_at: number;
}

export interface SecretsTable {
  name: string;
  ciphertext: string;
  updated_at: number;
}

export interface BotsTable extends BotGovernanceColumns {
  id: string;
  owner_uid: string;
  display_name: string;
  /** Lowercase, without the leading @; unique instance-wide. */
  mention: string;
  description: string;
  system_prompt: string;
  model: string | null;
  /** null = inherit the admin default. */
  temperature: number | null;
  active: number;
  /** JSON question tree, or null for the plain A/B onboarding. */
  onboarding_questions: string | null;
  created_at: number;
  updated_at: number;
}

export interface TalkIdentitiesTable {
  route: string;
  /** null for the shared "Talk AI" bot; a bot id for a dedicated identity. */
  bot_id: string | null;
  talk_name: string;
  appapi_bot_id: string;
  registered_at: number;
}

export interface RoomIdentitiesTable {
  room_token: string;
  route: string;
  last_seen_at: number;
}

export interface InboxTable {
  id: Generated<number>;
  room_token: string;
  message_id: string;
  actor_id: string;
  route: string;
  kind: string;
  /** JSON of the delivered event; never trusted as content (S3). */
  payload: string;
  received_at: number;
}

/** The worker's state of an inbox row (main database; the intake only inserts into `inbox`). */
export interface InboxProgressTable {
  inbox_id: number;
  room_token: string;
  status: 'pending' | 'processing' | 'done';
  attempts: number;
  not_before: number;
  started_at: number | null;
  finished_at: number | null;
  /** Scale-out only: the worker process holding the row, and until when (renewed while its turn runs). */
  lease_owner?: string | null;
  lease_until?: number | null;
}

/** Scale-out: which process runs a housekeeping timer now (storage/leader-lock.ts). */
export interface LeaderLeasesTable {
  name: string;
  owner: string;
  until: number;
}

export interface HandledMessagesTable {
  room_token: string;
  message_id: string;
  /** The inbox row that claimed it; lets that row resume after a restart. */
  inbox_id: number;
  handled_at: number;
}

export interface ReplyChunksTable {
  inbox_id: number;
  seq: number;
  reference_id: string;
  text: string;
  posted: number;
  created_at: number;
}

export interface RoomStatesTable {
  bot_id: string;
  room_token: string;
  response_mode: 'mention' | 'always' | null;
  onboarding_status: 'mode_selection' | 'questions' | 'completed';
  current_question_id: string | null;
  onboarding_answers: string;
  /** The message that triggered onboarding, answered once onboarding completes. */
  deferred_message: string | null;
  activated_by: string;
  created_at: number;
  updated_at: number;
}

export interface ConversationMessagesTable {
  id: Generated<number>;
  bot_id: string;
  room_token: string;
  /** '' for the main conversation. */
  thread_id: string;
  /** '' unless the bot has user-mode tools (then memory is per invoker, S6). */
  invoker_uid: string;
  role: 'user' | 'assistant';
  author_uid: string;
  message_id: string | null;
  content: string;
  created_at: number;
}

export interface Database
  extends
    RateLimitTables,
    RequestQueueTables,
    TraceTables,
    ToolTables,
    GovernanceTables,
    ConfirmationTables,
    KnowledgeTables,
    UserTables,
    WikiTables,
    AgentProfileTables {
  settings: SettingsTable;
  secrets: SecretsTable;
  bots: BotsTable;
  talk_identities: TalkIdentitiesTable;
  room_identities: RoomIdentitiesTable;
  inbox: InboxTable;
  inbox_progress: InboxProgressTable;
  leader_leases: LeaderLeasesTable;
  handled_messages: HandledMessagesTable;
  reply_chunks: ReplyChunksTable;
  room_states: RoomStatesTable;
  conversation_messages: ConversationMessagesTable;
}

export type { Generated };
