// Storage of pending actions. Every state change is a conditional UPDATE, so two replies (or a
// reply racing the expiry) can never both consume one confirmation, on SQLite or PostgreSQL.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../storage/schema.ts';
import type { ConfirmationStatus, PendingConfirmationsTable } from '../storage/tables/confirmation-tables.ts';

export type ConfirmationRow = Selectable<PendingConfirmationsTable>;

export class ConfirmationStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Inserts a new pending action and supersedes the previous one of (user, bot, room), in one transaction. */
  async insertReplacing(row: PendingConfirmationsTable): Promise<string[]> {
    return this.#db.transaction().execute(async (trx) => {
      const old = await trx
        .selectFrom('pending_confirmations')
        .select('id')
        .where('user_uid', '=', row.user_uid)
        .where('bot_id', '=', row.bot_id)
        .where('room_token', '=', row.room_token)
        .where('status', '=', 'pending')
        .execute();
      if (old.length > 0) {
        await trx
          .updateTable('pending_confirmations')
          .set({ status: 'superseded', sealed_secrets: null, updated_at: row.created_at })
          .where(
            'id',
            'in',
            old.map((o) => o.id),
          )
          .where('status', '=', 'pending')
          .execute();
      }
      await trx.insertInto('pending_confirmations').values(row).execute();
      return old.map((o) => o.id);
    });
  }

  async get(id: string): Promise<ConfirmationRow | null> {
    return (await this.#db.selectFrom('pending_confirmations').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
  }

  /** Rows a reply in this room by this user can concern: the room's, and the user's elsewhere. */
  async relevant(roomToken: string, userUid: string | null, since: number): Promise<ConfirmationRow[]> {
    return this.#db
      .selectFrom('pending_confirmations')
      .selectAll()
      .where((eb) => (userUid === null ? eb('room_token', '=', roomToken) : eb.or([eb('room_token', '=', roomToken), eb('user_uid', '=', userUid)])))
      .where('expires_at', '>', since)
      .orderBy('created_at', 'desc')
      .limit(100)
      .execute();
  }

  /** pending → running, only while unexpired and unconsumed; true when this call won. */
  async consume(id: string, messageId: string, now: number): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('pending_confirmations')
        // The caller holds the row it read; the sealed secrets leave storage with the consumption.
        .set({ status: 'running', sealed_secrets: null, consumed_at: now, consumed_message_id: messageId.slice(0, 32), updated_at: now })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  }

  /** A conditional status change; true when the row was in `from`. */
  async transition(id: string, from: ConfirmationStatus, to: ConfirmationStatus, now: number, result: string | null = null): Promise<boolean> {
    const res = await this.#db
      .updateTable('pending_confirmations')
      .set({ status: to, sealed_secrets: null, updated_at: now, ...(result !== null ? { result } : {}) })
      .where('id', '=', id)
      .where('status', '=', from)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async countAttempt(id: string, now: number): Promise<number> {
    await this.#db
      .updateTable('pending_confirmations')
      .set((eb) => ({ attempts: eb('attempts', '+', 1), updated_at: now }))
      .where('id', '=', id)
      .execute();
    const row = await this.#db.selectFrom('pending_confirmations').select('attempts').where('id', '=', id).executeTakeFirst();
    return Number(row?.attempts ?? 0);
  }

  async recent(since: number): Promise<Array<Pick<ConfirmationRow, 'user_uid' | 'room_token' | 'expires_at'>>> {
    return this.#db.selectFrom('pending_confirmations').select(['user_uid', 'room_token', 'expires_at']).where('expires_at', '>', since).execute();
  }

  async prune(before: number): Promise<number> {
    const res = await this.#db.deleteFrom('pending_confirmations').where('expires_at', '<', before).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async setTalkMessageId(id: string, messageId: string, now: number): Promise<void> {
    await this.#db
      .updateTable('pending_confirmations')
      .set({ talk_message_id: messageId, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute();
  }

  /** Unexpired pending rows whose request was posted with a referenceId (the reaction watcher's work). */
  async pendingPosted(now: number): Promise<ConfirmationRow[]> {
    return this.#db
      .selectFrom('pending_confirmations')
      .selectAll()
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .where('talk_reference_id', 'is not', null)
      .orderBy('created_at', 'asc')
      .limit(1000)
      .execute();
  }
}
