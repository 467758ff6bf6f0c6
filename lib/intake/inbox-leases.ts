import { sql, type Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

export interface LeaseOptions {
  /** This worker process (unique per start). */
  owner: string;
  /** How long a claim holds without renewal; a dead worker's turns resume elsewhere after it. */
  ttlMs: number;
}

export interface LeasedRow {
  id: number;
  room_token: string;
  message_id: string;
  actor_id: string;
  route: string;
  kind: string;
  payload: string;
  received_at: number;
  attempts: number;
}

/**
 * Claims for several worker processes on one PostgreSQL (scale-out). Only a room's oldest unfinished row
 * may be claimed, so a room runs on one worker at a time and in message order; the candidate rows are
 * locked `FOR UPDATE SKIP LOCKED`, so concurrent claimers pass each other, and the progress upsert is
 * conditional (new, pending and due, or processing under an expired lease), so exactly one of them wins.
 * A claim carries a lease that its worker renews while the turn runs; a worker that dies stops renewing,
 * and after `ttlMs` another worker resumes the turn (the reply log keeps posted chunks from repeating).
 */
export class InboxLeases {
  readonly #db: Kysely<Database>;
  readonly #options: LeaseOptions;
  readonly #now: () => number;
  /** Rows this worker holds now (renewed together). */
  readonly #held = new Set<number>();
  #timer: NodeJS.Timeout | null = null;
  #lost = 0;

  constructor(db: Kysely<Database>, options: LeaseOptions, now: () => number) {
    this.#db = db;
    this.#options = options;
    this.#now = now;
  }

  /** Leases this worker lost to expiry (it was too slow to renew, and another worker took the row). */
  get lost(): number {
    return this.#lost;
  }

  async claim(limit: number, excludeRooms: string[]): Promise<LeasedRow[]> {
    const now = this.#now();
    const until = now + this.#options.ttlMs;
    const owner = this.#options.owner;
    const claimed = await this.#db.transaction().execute(async (trx) => {
      const candidates = await sql<LeasedRow>`
        select i.id, i.room_token, i.message_id, i.actor_id, i.route, i.kind, i.payload, i.received_at, coalesce(p.attempts, 0) as attempts
        from inbox i left join inbox_progress p on p.inbox_id = i.id
        where (p.inbox_id is null
               or (p.status = 'pending' and p.not_before <= ${now})
               or (p.status = 'processing' and coalesce(p.lease_until, 0) < ${now}))
          and not (i.room_token = any(${excludeRooms}::text[]))
          and not exists (
            select 1 from inbox e left join inbox_progress ep on ep.inbox_id = e.id
            where e.room_token = i.room_token and e.id < i.id and (ep.inbox_id is null or ep.status <> 'done'))
        order by i.id
        limit ${limit}
        for update of i skip locked`.execute(trx);
      const won: LeasedRow[] = [];
      for (const row of candidates.rows) {
        const r = await sql`
          insert into inbox_progress (inbox_id, room_token, status, attempts, not_before, started_at, finished_at, lease_owner, lease_until)
          values (${row.id}, ${row.room_token}, 'processing', 1, 0, ${now}, null, ${owner}, ${until})
          on conflict (inbox_id) do update set status = 'processing', started_at = ${now}, attempts = inbox_progress.attempts + 1,
            lease_owner = ${owner}, lease_until = ${until}
          where (inbox_progress.status = 'pending' and inbox_progress.not_before <= ${now})
             or (inbox_progress.status = 'processing' and coalesce(inbox_progress.lease_until, 0) < ${now})`.execute(trx);
        if (Number(r.numAffectedRows ?? 0n) === 1) won.push({ ...row, attempts: Number(row.attempts) + 1 });
      }
      return won;
    });
    for (const row of claimed) this.#held.add(row.id);
    if (claimed.length > 0) this.#startRenewing();
    return claimed;
  }

  /** Finishes a held row (and forgets its reply chunks) in one transaction; false when the lease was lost. */
  async complete(id: number): Promise<boolean> {
    const now = this.#now();
    this.#held.delete(id);
    return this.#db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('inbox_progress')
        .set({ status: 'done', finished_at: now, lease_owner: null, lease_until: null })
        .where('inbox_id', '=', id)
        .where('lease_owner', '=', this.#options.owner)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return false;
      await trx.deleteFrom('reply_chunks').where('inbox_id', '=', id).execute();
      return true;
    });
  }

  async retryLater(id: number, notBefore: number): Promise<void> {
    this.#held.delete(id);
    await this.#db
      .updateTable('inbox_progress')
      .set({ status: 'pending', not_before: notBefore, lease_owner: null, lease_until: null })
      .where('inbox_id', '=', id)
      .where('lease_owner', '=', this.#options.owner)
      .execute();
  }

  /** Extends every held lease; rows whose lease another worker took are dropped from the held set. */
  async renew(): Promise<void> {
    if (this.#held.size === 0) return;
    const ids = [...this.#held];
    const r = await this.#db
      .updateTable('inbox_progress')
      .set({ lease_until: this.#now() + this.#options.ttlMs })
      .where('inbox_id', 'in', ids)
      .where('lease_owner', '=', this.#options.owner)
      .where('status', '=', 'processing')
      .returning('inbox_id')
      .execute();
    const kept = new Set(r.map((x) => x.inbox_id));
    for (const id of ids) {
      if (!kept.has(id) && this.#held.delete(id)) this.#lost++;
    }
  }

  #startRenewing(): void {
    if (this.#timer) return;
    // Three renewals per lease: one slow round trip does not lose it.
    this.#timer = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.#options.ttlMs / 3)));
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
