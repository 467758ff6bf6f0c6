import { sql, type Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

export interface InboxEvent {
  id: number;
  roomToken: string;
  messageId: string;
  actorId: string;
  route: string;
  kind: string;
  payload: DeliveredEvent;
  attempts: number;
  receivedAt: number;
}

/** What was delivered. Used to find the message in Talk, never as its content (S3). */
export interface DeliveredEvent {
  type: string;
  systemName: string | null;
  actorId: string;
  roomToken: string;
  messageId: string;
}

export interface NewInboxEvent {
  roomToken: string;
  messageId: string;
  actorId: string;
  route: string;
  kind: string;
  payload: DeliveredEvent;
}

/**
 * The durable inbox. A row is written before the webhook is acknowledged;
 * rows of one room are processed in order, rooms concurrently; a row is
 * deleted once handled (S19).
 */
export class Inbox {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** false when the same (room, message, actor) is already queued. */
  async add(e: NewInboxEvent): Promise<boolean> {
    const result = await this.#db
      .insertInto('inbox')
      .values({
        room_token: e.roomToken,
        message_id: e.messageId,
        actor_id: e.actorId,
        route: e.route,
        kind: e.kind,
        payload: JSON.stringify(e.payload),
        status: 'pending',
        received_at: this.#now(),
        started_at: null,
      })
      .onConflict((oc) => oc.columns(['room_token', 'message_id', 'actor_id']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async isHandled(roomToken: string, messageId: string): Promise<boolean> {
    const row = await this.#db.selectFrom('handled_messages').select('inbox_id').where('room_token', '=', roomToken).where('message_id', '=', messageId).executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Claims the oldest pending event of up to `limit` rooms that have nothing
   * in progress, so that a room's events run one after another.
   */
  async claim(limit: number, excludeRooms: ReadonlySet<string>): Promise<InboxEvent[]> {
    if (limit <= 0) return [];
    const now = this.#now();
    const candidates = await this.#db
      .selectFrom('inbox as i')
      .selectAll()
      .where('i.status', '=', 'pending')
      .where('i.not_before', '<=', now)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('inbox as o')
              .select(sql<number>`1`.as('one'))
              .whereRef('o.room_token', '=', 'i.room_token')
              .where((eb) => eb.or([eb('o.status', '=', 'processing'), eb.and([eb('o.status', '=', 'pending'), eb('o.id', '<', eb.ref('i.id'))])])),
          ),
        ),
      )
      .orderBy('i.id')
      .limit(limit * 4)
      .execute();
    const claimed: InboxEvent[] = [];
    for (const row of candidates) {
      if (claimed.length >= limit) break;
      if (excludeRooms.has(row.room_token) || claimed.some((c) => c.roomToken === row.room_token)) continue;
      const updated = await this.#db
        .updateTable('inbox')
        .set({ status: 'processing', started_at: now, attempts: sql`attempts + 1` })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) continue;
      claimed.push({
        id: row.id,
        roomToken: row.room_token,
        messageId: row.message_id,
        actorId: row.actor_id,
        route: row.route,
        kind: row.kind,
        payload: JSON.parse(row.payload) as DeliveredEvent,
        attempts: row.attempts + 1,
        receivedAt: row.received_at,
      });
    }
    return claimed;
  }

  /**
   * Records the verified message as handled by this inbox row. Returns false
   * when another row already handled it (a duplicate delivery, e.g. through a
   * second Talk bot of ours in the same room).
   */
  async markHandled(event: InboxEvent): Promise<boolean> {
    const inserted = await this.#db
      .insertInto('handled_messages')
      .values({ room_token: event.roomToken, message_id: event.messageId, inbox_id: event.id, handled_at: this.#now() })
      .onConflict((oc) => oc.columns(['room_token', 'message_id']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return true;
    const row = await this.#db.selectFrom('handled_messages').select('inbox_id').where('room_token', '=', event.roomToken).where('message_id', '=', event.messageId).executeTakeFirst();
    return row?.inbox_id === event.id;
  }

  async complete(id: number): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('reply_chunks').where('inbox_id', '=', id).execute();
      await trx.deleteFrom('inbox').where('id', '=', id).execute();
    });
  }

  async retryLater(id: number, delayMs: number): Promise<void> {
    await this.#db.updateTable('inbox').set({ status: 'pending', not_before: this.#now() + delayMs }).where('id', '=', id).execute();
  }

  /** After a crash or restart: events that were in progress become pending again and resume. */
  async releaseInterrupted(): Promise<number> {
    const r = await this.#db.updateTable('inbox').set({ status: 'pending' }).where('status', '=', 'processing').executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async pendingCount(): Promise<number> {
    const r = await this.#db.selectFrom('inbox').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async pruneHandled(olderThanMs: number): Promise<void> {
    await this.#db.deleteFrom('handled_messages').where('handled_at', '<', this.#now() - olderThanMs).execute();
  }
}
