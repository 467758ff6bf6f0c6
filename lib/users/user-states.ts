// What the app knows about Nextcloud accounts: disabled or deleted owners (S21), and who was
// last seen passing the admin check. Unknown users count as active.
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import type { UserStatus } from '../storage/tables/user-tables.ts';

const CACHE_MS = 60_000;
const ADMIN_NOTE_MS = 24 * 3600_000;

export class UserStates {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;
  #inactive = new Map<string, UserStatus>();
  #loadedAt = -Infinity;
  #loading: Promise<void> | null = null;
  readonly #adminNoted = new Map<string, number>();

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** Cached for a minute, so every Talk turn can ask without a query; another thread's changes arrive within that. */
  async statusOf(uid: string): Promise<UserStatus> {
    if (this.#now() - this.#loadedAt > CACHE_MS) await this.reload();
    return this.#inactive.get(uid) ?? 'active';
  }

  async reload(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const rows = await this.#db.selectFrom('user_states').select(['uid', 'status']).where('status', '!=', 'active').execute();
        this.#inactive = new Map(rows.map((r) => [r.uid, r.status]));
        this.#loadedAt = this.#now();
      } finally {
        this.#loading = null;
      }
    })();
    return this.#loading;
  }

  async set(uid: string, status: UserStatus): Promise<void> {
    const now = this.#now();
    await this.#db
      .insertInto('user_states')
      .values({ uid, status, admin_seen_at: null, checked_at: now, changed_at: now })
      .onConflict((oc) =>
        oc.column('uid').doUpdateSet((eb) => ({
          status,
          checked_at: now,
          // changed_at moves only when the status does.
          changed_at: eb.case().when('user_states.status', '=', status).then(eb.ref('user_states.changed_at')).else(now).end(),
        })),
      )
      .execute();
    if (status === 'active') this.#inactive.delete(uid);
    else this.#inactive.set(uid, status);
  }

  /** Records a verified admin (at most once a day per user and process). */
  async noteAdmin(uid: string): Promise<void> {
    const now = this.#now();
    if ((this.#adminNoted.get(uid) ?? -Infinity) > now - ADMIN_NOTE_MS) return;
    this.#adminNoted.set(uid, now);
    await this.#db
      .insertInto('user_states')
      .values({ uid, status: 'active', admin_seen_at: now, checked_at: now, changed_at: now })
      .onConflict((oc) => oc.column('uid').doUpdateSet({ admin_seen_at: now }))
      .execute();
  }

  /** Admins seen passing the admin check, most recent first. */
  async knownAdmins(): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('user_states')
      .select('uid')
      .where('admin_seen_at', 'is not', null)
      .where('status', '=', 'active')
      .orderBy('admin_seen_at', 'desc')
      .limit(10)
      .execute();
    return rows.map((r) => r.uid);
  }

  async forget(uid: string): Promise<void> {
    await this.#db.updateTable('user_states').set({ admin_seen_at: null }).where('uid', '=', uid).execute();
    this.#adminNoted.delete(uid);
  }
}
