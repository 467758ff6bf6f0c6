import { PostgresAdapter, sql, type Kysely } from 'kysely';
import type { IntakeStatements } from '../storage/database.ts';
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
 * rows of one room are processed in order, rooms concurrently (S19).
 *
 * Two write paths that never meet: the intake (HTTP thread) only inserts into
 * `inbox` and later prunes finished rows; the worker (processing thread) keeps
 * its state in `inbox_progress` and never writes `inbox`. On SQLite `inbox` is
 * a file of its own (storage/database.ts), so an acknowledgement never waits for
 * the worker's write lock.
 */
export class Inbox {
  readonly #db: Kysely<Database>;
  readonly #intake: Kysely<Database>;
  readonly #now: () => number;
  readonly #statements: IntakeStatements | null;
  #pruneTimer: NodeJS.Timeout | null = null;

  /**
   * `intake` is the HTTP thread's own handle for the inbox table
   * (DatabaseHandle.intake; defaults to `db`), `statements` its prepared hot
   * path on SQLite (DatabaseHandle.intakeStatements).
   */
  constructor(db: Kysely<Database>, now: () => number = Date.now, intake: Kysely<Database> = db, statements?: IntakeStatements) {
    this.#db = db;
    this.#intake = intake;
    this.#now = now;
    this.#statements = statements ?? null;
  }

  /** false when the same delivery (room, message, actor, route) is already queued. */
  async add(e: NewInboxEvent): Promise<boolean> {
    const row = {
      room_token: e.roomToken,
      message_id: e.messageId,
      actor_id: e.actorId,
      route: e.route,
      kind: e.kind,
      payload: JSON.stringify(e.payload),
      received_at: this.#now(),
    };
    this.#schedulePrune();
    if (this.#statements) return this.#statements.insert(row);
    const result = await this.#intake
      .insertInto('inbox')
      .values(row)
      .onConflict((oc) => oc.columns(['room_token', 'message_id', 'actor_id', 'route']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async isHandled(roomToken: string, messageId: string): Promise<boolean> {
    if (this.#statements) return this.#statements.isHandled(roomToken, messageId);
    const row = await this.#intake.selectFrom('handled_messages').select('inbox_id').where('room_token', '=', roomToken).where('message_id', '=', messageId).executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Claims the oldest waiting event of up to `limit` rooms that have nothing
   * unfinished before it, so that a room's events run one after another.
   */
  async claim(limit: number, excludeRooms: ReadonlySet<string>): Promise<InboxEvent[]> {
    if (limit <= 0) return [];
    const now = this.#now();
    const candidates = await this.#db
      .selectFrom('inbox as i')
      .leftJoin('inbox_progress as p', 'p.inbox_id', 'i.id')
      .select(['i.id', 'i.room_token', 'i.message_id', 'i.actor_id', 'i.route', 'i.kind', 'i.payload', 'i.received_at', 'p.attempts'])
      .where((eb) => eb.or([eb('p.inbox_id', 'is', null), eb.and([eb('p.status', '=', 'pending'), eb('p.not_before', '<=', now)])]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('inbox as o')
              .leftJoin('inbox_progress as q', 'q.inbox_id', 'o.id')
              .select(sql<number>`1`.as('one'))
              .whereRef('o.room_token', '=', 'i.room_token')
              .whereRef('o.id', '<', 'i.id')
              .where((eb) => eb.or([eb('q.inbox_id', 'is', null), eb('q.status', '<>', 'done')])),
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
        .insertInto('inbox_progress')
        .values({ inbox_id: row.id, room_token: row.room_token, status: 'processing', attempts: 1, not_before: 0, started_at: now, finished_at: null })
        .onConflict((oc) =>
          oc
            .column('inbox_id')
            .doUpdateSet({ status: 'processing', started_at: now, attempts: sql`inbox_progress.attempts + 1` })
            .where('inbox_progress.status', '=', 'pending'),
        )
        .executeTakeFirst();
      if (Number(updated.numInsertedOrUpdatedRows ?? 0n) !== 1) continue;
      claimed.push({
        id: row.id,
        roomToken: row.room_token,
        messageId: row.message_id,
        actorId: row.actor_id,
        route: row.route,
        kind: row.kind,
        payload: JSON.parse(row.payload) as DeliveredEvent,
        attempts: (row.attempts ?? 0) + 1,
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

  /** The row is finished; the intake deletes it from `inbox` at its next prune. */
  async complete(id: number): Promise<void> {
    const now = this.#now();
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('reply_chunks').where('inbox_id', '=', id).execute();
      await trx.updateTable('inbox_progress').set({ status: 'done', finished_at: now }).where('inbox_id', '=', id).execute();
    });
  }

  async retryLater(id: number, delayMs: number): Promise<void> {
    await this.#db.updateTable('inbox_progress').set({ status: 'pending', not_before: this.#now() + delayMs }).where('inbox_id', '=', id).execute();
  }

  /** After a crash or restart: events that were in progress become pending again and resume. */
  async releaseInterrupted(): Promise<number> {
    const r = await this.#db.updateTable('inbox_progress').set({ status: 'pending' }).where('status', '=', 'processing').executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Events not finished yet (waiting, running or waiting for a retry). */
  async pendingCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('inbox as i')
      .leftJoin('inbox_progress as p', 'p.inbox_id', 'i.id')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => eb.or([eb('p.inbox_id', 'is', null), eb('p.status', '<>', 'done')]))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Intake side: deletes finished rows from `inbox` (one statement on the intake's own write path). */
  async prune(): Promise<number> {
    const r = await this.#intake
      .deleteFrom('inbox')
      .where('id', 'in', (eb) => eb.selectFrom('inbox_progress').select('inbox_id').where('status', '=', 'done'))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** Worker side: progress rows whose inbox row the intake has pruned are no longer needed. */
  async forgetPruned(): Promise<number> {
    const r = await this.#db
      .deleteFrom('inbox_progress')
      .where('status', '=', 'done')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('inbox').select(sql<number>`1`.as('one')).whereRef('inbox.id', '=', 'inbox_progress.inbox_id'))))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /**
   * Worker side, about once a second: forget pruned rows and, on SQLite,
   * checkpoint the intake file. The intake connection never checkpoints
   * itself (wal_autocheckpoint=0), so its fsyncs never delay an ack; a PASSIVE
   * checkpoint from here does not take the intake's write lock.
   */
  async maintain(): Promise<void> {
    await this.forgetPruned();
    if (!(this.#db.getExecutor().adapter instanceof PostgresAdapter)) await sql`pragma intake.wal_checkpoint(PASSIVE)`.execute(this.#db);
  }

  async pruneHandled(olderThanMs: number): Promise<void> {
    await this.#db.deleteFrom('handled_messages').where('handled_at', '<', this.#now() - olderThanMs).execute();
  }

  /** At most one prune a second while webhooks arrive; the timer never keeps the process alive. */
  #schedulePrune(): void {
    if (this.#pruneTimer) return;
    this.#pruneTimer = setTimeout(() => {
      void this.prune()
        .catch(() => undefined)
        .finally(() => {
          this.#pruneTimer = null;
        });
    }, 1000);
    this.#pruneTimer.unref();
  }

  /** Stops a scheduled prune (shutdown: the database is about to close). */
  stop(): void {
    if (this.#pruneTimer) clearTimeout(this.#pruneTimer);
    this.#pruneTimer = null;
  }
}
