// The Nextcloud language of a user, read as that user (`cloud/user`), for the fixed texts a bot
// writes to them in Talk. Cached per user for an hour: it changes rarely, and a stale hour only
// means one more message in the previous language.
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { getCurrentUser } from '../nextcloud/users.ts';

const MAX_CACHED = 10_000;

export class UserLanguages {
  readonly #nextcloud: NextcloudClient;
  readonly #ttlMs: number;
  readonly #failureTtlMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { value: string | null; until: number }>();

  constructor(nextcloud: NextcloudClient, options: { ttlMs?: number; failureTtlMs?: number; now?: () => number } = {}) {
    this.#nextcloud = nextcloud;
    this.#ttlMs = options.ttlMs ?? 60 * 60_000;
    this.#failureTtlMs = options.failureTtlMs ?? 5 * 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** The user's language code as Nextcloud reports it ("de", "de_DE"), or null when unknown. */
  async of(user: ActingUser): Promise<string | null> {
    const now = this.#now();
    const hit = this.#cache.get(user.uid);
    if (hit && hit.until > now) return hit.value;
    let value: string | null = null;
    let ttl = this.#ttlMs;
    try {
      const me = await getCurrentUser(this.#nextcloud.as(user), { timeoutMs: 5_000 });
      if (me?.id === user.uid && typeof me.language === 'string' && /^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*$/.test(me.language)) value = me.language;
    } catch {
      // English until the next try; the turn itself must not fail over a language.
      ttl = this.#failureTtlMs;
    }
    if (this.#cache.size >= MAX_CACHED) this.#cache.clear();
    this.#cache.set(user.uid, { value, until: now + ttl });
    return value;
  }
}
