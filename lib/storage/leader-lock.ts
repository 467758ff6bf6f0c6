import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

/**
 * One process at a time runs each housekeeping timer (retention, reconciliation, wiki scan, admin form
 * sync). A run takes a lease row for its name in `leader_leases` (a conditional upsert: free, expired or
 * already ours); the others skip that round. The lease outlives a run that dies with its process only
 * until `ttlMs`. On SQLite (one process) every run runs.
 */
export class LeaderLock {
  readonly #db: Kysely<Database> | null;
  readonly #owner: string;
  readonly #now: () => number;

  /** `db` null: a single process, no lock needed. */
  constructor(db: Kysely<Database> | null, owner: string, now: () => number = Date.now) {
    this.#db = db;
    this.#owner = owner;
    this.#now = now;
  }

  /** Whether this process may run `name` now; holds it for `ttlMs` (a run longer than that may overlap the next). */
  async acquire(name: string, ttlMs: number): Promise<boolean> {
    if (this.#db === null) return true;
    const now = this.#now();
    const r = await this.#db
      .insertInto('leader_leases')
      .values({ name, owner: this.#owner, until: now + ttlMs })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ owner: this.#owner, until: now + ttlMs })
          .where((eb) => eb.or([eb('leader_leases.until', '<', now), eb('leader_leases.owner', '=', this.#owner)])),
      )
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  /** Runs `fn` when this process holds `name`; resolves to whether it ran. */
  async run(name: string, ttlMs: number, fn: () => Promise<unknown>): Promise<boolean> {
    if (!(await this.acquire(name, ttlMs))) return false;
    await fn();
    return true;
  }

  /** Waits for `name` (polling its lease), runs `fn`, then frees it: for work every replica may receive at once. */
  async exclusive<T>(name: string, ttlMs: number, fn: () => Promise<T>): Promise<T> {
    if (this.#db === null) return fn();
    const giveUp = this.#now() + ttlMs * 2;
    while (!(await this.acquire(name, ttlMs))) {
      if (this.#now() > giveUp) throw new Error(`${name} is held by another process`);
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      return await fn();
    } finally {
      await this.#db.deleteFrom('leader_leases').where('name', '=', name).where('owner', '=', this.#owner).execute();
    }
  }
}
