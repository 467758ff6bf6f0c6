/** Row type of the durable request queue; `storage/schema.ts` composes it into `Database`. */
import type { Generated } from 'kysely';

export type QueueStatus = 'pending' | 'processing' | 'failed' | 'expired';

export interface RequestQueueTable {
  id: Generated<number>;
  bot_id: string;
  room_token: string;
  route: string;
  uid: string | null;
  reply_to: string | null;
  /** JSON the caller needs to resume the turn; 'null' once the row is final. */
  payload: string;
  status: QueueStatus;
  attempts: Generated<number>;
  last_error: string | null;
  created_at: number;
  claimed_at: number | null;
  finished_at: number | null;
}

export interface RequestQueueTables {
  request_queue: RequestQueueTable;
}
