import { sql, type Kysely } from 'kysely';
import type { IntakeRow, IntakeStatements } from '../storage/database.ts';
import type { Database } from '../storage/schema.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';
import type { InboxLeases } from './inbox-leases.ts';

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
 * A row as the intake wrote it, handed to the worker with its wake-up (InboxWorker.notify): a worker
 * that has seen every row before it takes it as it is instead of reading the inbox again.
 */
export interface HandedRow extends IntakeRow {
  /**
   * The intake's previous row, or null for its first since it started. On SQLite the intake is the
   * only writer of `inbox`, so no row lies between the two (ids skipped by a refused duplicate are never used).
   */
  after: number | null;
  id: number;
}

/** Rooms whose newest message id the intake keeps (beyond that it forgets them all and reads again). */
const NEWEST_ROOMS = 50_000;

// The statements of every event: prepared once (storage/prepared-query.ts).
const CLAIM = new PreparedQuery((db, p: { id: number; roomToken: string; now: number }) =>
  db
    .insertInto('inbox_progress')
    .values({ inbox_id: p.id, room_token: p.roomToken, status: 'processing', attempts: 1, not_before: 0, started_at: p.now, finished_at: null })
    .onConflict((oc) =>
      oc
        .column('inbox_id')
        .doUpdateSet({ status: 'processing', started_at: p.now, attempts: sql`inbox_progress.attempts + 1` })
        .where('inbox_progress.status', '=', 'pending'),
    ),
);
const READ_NEW = new PreparedQuery((db, p: { after: number; limit: number }) =>
  db
    .selectFrom('inbox')
    .select(['id', 'room_token', 'message_id', 'actor_id', 'route', 'kind', 'payload', 'received_at'])
    .where('id', '>', p.after)
    .orderBy('id')
    .limit(p.limit),
);
const HANDLED = new PreparedQuery((db, p: { roomToken: string; messageId: string; id: number; now: number }) =>
  db
    .insertInto('handled_messages')
    .values({ room_token: p.roomToken, message_id: p.messageId, inbox_id: p.id, handled_at: p.now })
    .onConflict((oc) => oc.columns(['room_token', 'message_id']).doNothing()),
);
const FORGET_CHUNKS = new PreparedQuery((db, p: { id: number }) => db.deleteFrom('reply_chunks').where('inbox_id', '=', p.id));
const DONE = new PreparedQuery((db, p: { id: number; now: number }) =>
  db.updateTable('inbox_progress').set({ status: 'done', finished_at: p.now }).where('inbox_id', '=', p.id),
);

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
  /** Scale-out: several worker processes claim under leases (inbox-leases.ts) instead of this one's memory. */
  #leases: InboxLeases | null = null;
  #pruneTimer: NodeJS.Timeout | null = null;
  /** The worker's view of unfinished rows (claim side only). */
  readonly #queue = new WaitingRows();

  /** Per room, the newest Talk message id this intake queued (see isBeyondNewest). */
  readonly #newest = new Map<string, number>();

  /** The intake's last inserted row (see HandedRow.after). */
  #lastInserted: number | null = null;

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

  /** Scale-out (PostgreSQL, several worker processes): claims go through leases; call before the worker starts. */
  useLeases(leases: InboxLeases): void {
    this.#leases = leases;
  }

  /**
   * Whether the dedupe read can be skipped: Talk's message ids grow, so an id above the newest this
   * intake queued for the room is not a redelivery of one it queued. (One handled elsewhere, by another
   * instance or before a restart, is still caught by the worker's markHandled, after Talk confirmed it.)
   */
  isBeyondNewest(roomToken: string, messageId: string): boolean {
    const newest = this.#newest.get(roomToken);
    const id = Number(messageId);
    return newest !== undefined && Number.isSafeInteger(id) && id > newest;
  }

  #noteNewest(roomToken: string, messageId: string): void {
    const id = Number(messageId);
    if (!Number.isSafeInteger(id)) return;
    if (this.#newest.size >= NEWEST_ROOMS && !this.#newest.has(roomToken)) this.#newest.clear();
    if (id > (this.#newest.get(roomToken) ?? -1)) this.#newest.set(roomToken, id);
  }

  /** false when the same delivery (room, message, actor, route) is already queued. */
  async add(e: NewInboxEvent): Promise<boolean> {
    return (await this.accept(e)) !== false;
  }

  /**
   * Queues the delivery: false when it is already queued, else the row to hand to the worker, or null
   * where its id is not known here (PostgreSQL: ids of concurrent inserts may become visible out of order).
   */
  async accept(e: NewInboxEvent): Promise<HandedRow | null | false> {
    const added = await this.#add(e);
    if (added !== false) this.#noteNewest(e.roomToken, e.messageId);
    return added;
  }

  async #add(e: NewInboxEvent): Promise<HandedRow | null | false> {
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
    if (this.#statements) {
      const id = this.#statements.insert(row);
      if (id === null) return false;
      const after = this.#lastInserted;
      this.#lastInserted = id;
      return { after, id, ...row };
    }
    const result = await this.#intake
      .insertInto('inbox')
      .values(row)
      .onConflict((oc) => oc.columns(['room_token', 'message_id', 'actor_id', 'route']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0 ? null : false;
  }

  async isHandled(roomToken: string, messageId: string): Promise<boolean> {
    if (this.#statements) return this.#statements.isHandled(roomToken, messageId);
    const row = await this.#intake
      .selectFrom('handled_messages')
      .select('inbox_id')
      .where('room_token', '=', roomToken)
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Claims the oldest waiting event of up to `limit` rooms that have nothing
   * unfinished before it, so that a room's events run one after another.
   *
   * The worker is the only consumer, so it keeps the unfinished rows in memory
   * and reads only rows newer than the last one it saw; querying every waiting
   * row on each claim cost more than the rest of a turn's bookkeeping. A full
   * read of the table runs at start, then every few seconds: it catches rows
   * that became visible late (a PostgreSQL insert committed after a later one)
   * and another instance's progress. `readNew: false` (nothing was inserted
   * since the last read, as the worker knows) skips the read of new rows.
   */
  async claim(limit: number, excludeRooms: Pick<ReadonlySet<string>, 'has'>, options: { readNew?: boolean } = {}): Promise<InboxEvent[]> {
    if (limit <= 0) return [];
    if (this.#leases) return this.#claimLeased(limit, excludeRooms);
    const now = this.#now();
    if (this.#queue.syncedAt === null || now - this.#queue.syncedAt >= FULL_SYNC_MS || now < this.#queue.syncedAt) await this.#fullSync(now);
    else if (options.readNew !== false) await this.#readNew();
    const claimed: InboxEvent[] = [];
    for (const row of this.#queue.ready(now, excludeRooms)) {
      if (claimed.length >= limit) break;
      this.#queue.touch();
      if ((await CLAIM.affected(this.#db, { id: row.id, roomToken: row.roomToken, now })) !== 1) {
        // Finished or running elsewhere: the next full read shows which.
        this.#queue.drop(row.id);
        continue;
      }
      row.claimed = true;
      row.attempts += 1;
      claimed.push({
        id: row.id,
        roomToken: row.roomToken,
        messageId: row.messageId,
        actorId: row.actorId,
        route: row.route,
        kind: row.kind,
        payload: JSON.parse(row.payload) as DeliveredEvent,
        attempts: row.attempts,
        receivedAt: row.receivedAt,
      });
    }
    return claimed;
  }

  async #claimLeased(limit: number, excludeRooms: Pick<ReadonlySet<string>, 'has'>): Promise<InboxEvent[]> {
    // The worker passes its running jobs by room (a Map): their rooms are busy here.
    const rooms = 'keys' in excludeRooms ? [...(excludeRooms as { keys(): Iterable<string> }).keys()] : [];
    const rows = await this.#leases!.claim(limit, rooms);
    return rows.map((r) => ({
      id: r.id,
      roomToken: r.room_token,
      messageId: r.message_id,
      actorId: r.actor_id,
      route: r.route,
      kind: r.kind,
      payload: JSON.parse(r.payload) as DeliveredEvent,
      attempts: r.attempts,
      receivedAt: r.received_at,
    }));
  }

  /**
   * Takes a row the intake handed over when the worker has seen the intake's row before it; false
   * otherwise (one was not handed over, or the first read has not run yet), and the worker reads instead.
   */
  offer(row: HandedRow): boolean {
    if (this.#leases) return false;
    if (this.#queue.syncedAt === null || row.after === null || row.after !== this.#queue.cursor) return false;
    // A full read running now would not see this row: it must not replace the queue (see #fullSync).
    this.#queue.touch();
    this.#queue.add(queued(row, null));
    return true;
  }

  /** Rows the intake inserted since the last read (new rows have no progress yet). */
  async #readNew(): Promise<void> {
    for (;;) {
      const rows = await READ_NEW.rows(this.#db, { after: this.#queue.cursor, limit: READ_BATCH });
      for (const r of rows) this.#queue.add(queued(r, null));
      if (rows.length < READ_BATCH) return;
    }
  }

  async #fullSync(now: number): Promise<void> {
    const generation = this.#queue.generation;
    const rows = await this.#db
      .selectFrom('inbox as i')
      .leftJoin('inbox_progress as p', 'p.inbox_id', 'i.id')
      .select([
        'i.id',
        'i.room_token',
        'i.message_id',
        'i.actor_id',
        'i.route',
        'i.kind',
        'i.payload',
        'i.received_at',
        'p.status',
        'p.attempts',
        'p.not_before',
      ])
      .orderBy('i.id')
      .execute();
    // A claim, completion or retry while the read ran would be undone by it: keep the newer state.
    if (generation !== this.#queue.generation) return this.#readNew();
    this.#queue.reset(now);
    for (const r of rows) {
      this.#queue.cursor = Math.max(this.#queue.cursor, r.id);
      if (r.status === 'done') continue;
      this.#queue.add(queued(r, r.status === null ? null : { status: r.status, attempts: r.attempts ?? 0, notBefore: r.not_before ?? 0 }));
    }
  }

  /**
   * Records the verified message as handled by this inbox row. Returns false
   * when another row already handled it (a duplicate delivery, e.g. through a
   * second Talk bot of ours in the same room).
   */
  async markHandled(event: InboxEvent): Promise<boolean> {
    if ((await HANDLED.affected(this.#db, { roomToken: event.roomToken, messageId: event.messageId, id: event.id, now: this.#now() })) > 0) return true;
    const row = await this.#db
      .selectFrom('handled_messages')
      .select('inbox_id')
      .where('room_token', '=', event.roomToken)
      .where('message_id', '=', event.messageId)
      .executeTakeFirst();
    return row?.inbox_id === event.id;
  }

  /** The row is finished; the intake deletes it from `inbox` at its next prune. */
  async complete(id: number): Promise<void> {
    if (this.#leases) return void (await this.#leases.complete(id));
    const now = this.#now();
    this.#queue.touch();
    await this.#db.transaction().execute(async (trx) => {
      await FORGET_CHUNKS.execute(trx, { id });
      await DONE.execute(trx, { id, now });
    });
    this.#queue.drop(id);
  }

  async retryLater(id: number, delayMs: number): Promise<void> {
    const notBefore = this.#now() + delayMs;
    if (this.#leases) return this.#leases.retryLater(id, notBefore);
    this.#queue.touch();
    await this.#db.updateTable('inbox_progress').set({ status: 'pending', not_before: notBefore }).where('inbox_id', '=', id).execute();
    this.#queue.release(id, notBefore);
  }

  /** After a crash or restart: events that were in progress become pending again and resume. */
  async releaseInterrupted(): Promise<number> {
    // Under leases the other workers' rows are theirs: only expired leases are taken, at claim.
    if (this.#leases) return 0;
    const r = await this.#db.updateTable('inbox_progress').set({ status: 'pending' }).where('status', '=', 'processing').executeTakeFirst();
    this.#queue.syncedAt = null;
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
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('inbox')
              .select(sql<number>`1`.as('one'))
              .whereRef('inbox.id', '=', 'inbox_progress.inbox_id'),
          ),
        ),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /**
   * Worker side, about once a second: forget pruned rows. (The intake file's
   * WAL is checkpointed by storage/checkpointer.ts in a thread of its own: the
   * intake connection never checkpoints itself, so no fsync delays an ack.)
   */
  async maintain(): Promise<void> {
    await this.forgetPruned();
  }

  async pruneHandled(olderThanMs: number): Promise<void> {
    await this.#db
      .deleteFrom('handled_messages')
      .where('handled_at', '<', this.#now() - olderThanMs)
      .execute();
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
    this.#leases?.stop();
    if (this.#pruneTimer) clearTimeout(this.#pruneTimer);
    this.#pruneTimer = null;
  }
}

/** How often the worker re-reads every unfinished row instead of only the new ones. */
const FULL_SYNC_MS = 5_000;
const READ_BATCH = 1_000;

interface QueuedRow {
  id: number;
  roomToken: string;
  messageId: string;
  actorId: string;
  route: string;
  kind: string;
  payload: string;
  receivedAt: number;
  attempts: number;
  notBefore: number;
  /** Running now (here or, after a full read, elsewhere). */
  claimed: boolean;
}

function queued(
  r: { id: number; room_token: string; message_id: string; actor_id: string; route: string; kind: string; payload: string; received_at: number },
  progress: { status: string; attempts: number; notBefore: number } | null,
): QueuedRow {
  return {
    id: r.id,
    roomToken: r.room_token,
    messageId: r.message_id,
    actorId: r.actor_id,
    route: r.route,
    kind: r.kind,
    payload: r.payload,
    receivedAt: r.received_at,
    attempts: progress?.attempts ?? 0,
    notBefore: progress?.status === 'pending' ? progress.notBefore : 0,
    claimed: progress !== null && progress.status !== 'pending',
  };
}

/** Unfinished rows per room in id order; only a room's first row may run. */
class WaitingRows {
  cursor = 0;
  syncedAt: number | null = null;
  /** Changes whenever claim state changes, so a full read that overlapped one is not applied. */
  generation = 0;
  readonly #rooms = new Map<string, QueuedRow[]>();
  readonly #roomOf = new Map<number, string>();

  touch(): void {
    this.generation++;
  }

  reset(now: number): void {
    this.#rooms.clear();
    this.#roomOf.clear();
    this.syncedAt = now;
  }

  add(row: QueuedRow): void {
    this.cursor = Math.max(this.cursor, row.id);
    if (this.#roomOf.has(row.id)) return;
    const list = this.#rooms.get(row.roomToken);
    if (list === undefined) this.#rooms.set(row.roomToken, [row]);
    else {
      let i = list.length;
      while (i > 0 && list[i - 1]!.id > row.id) i--;
      list.splice(i, 0, row);
    }
    this.#roomOf.set(row.id, row.roomToken);
  }

  drop(id: number): void {
    const room = this.#roomOf.get(id);
    if (room === undefined) return;
    this.#roomOf.delete(id);
    const list = this.#rooms.get(room)!;
    const i = list.findIndex((r) => r.id === id);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.#rooms.delete(room);
  }

  release(id: number, notBefore: number): void {
    const room = this.#roomOf.get(id);
    const row = room === undefined ? undefined : this.#rooms.get(room)?.find((r) => r.id === id);
    if (row === undefined) return;
    row.claimed = false;
    row.notBefore = notBefore;
  }

  /** First rows of rooms that may run now, oldest first. */
  ready(now: number, excludeRooms: Pick<ReadonlySet<string>, 'has'>): QueuedRow[] {
    const heads: QueuedRow[] = [];
    for (const [room, list] of this.#rooms) {
      const head = list[0]!;
      if (head.claimed || head.notBefore > now || excludeRooms.has(room)) continue;
      heads.push(head);
    }
    return heads.sort((a, b) => a.id - b.id);
  }
}
