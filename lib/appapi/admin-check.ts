import type { NextcloudClient } from '../nextcloud/client.ts';
import { currentCloudUser } from '../nextcloud/appapi.ts';
import type { ActingUser } from '../nextcloud/identity.ts';

/**
 * ADMIN routes ask Nextcloud whether the user is in the admin group: AppAPI's
 * proxy can let a user reach an ADMIN route through a broader USER route [87].
 */
export class AdminCheck {
  readonly #nextcloud: NextcloudClient;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { admin: boolean; until: number }>();
  readonly #onAdmin: ((uid: string) => Promise<void>) | undefined;

  /** `onAdmin`: told of every confirmed admin (user reconciliation reads flags as one). */
  constructor(nextcloud: NextcloudClient, options: { ttlMs?: number; now?: () => number; onAdmin?: (uid: string) => Promise<void> } = {}) {
    this.#nextcloud = nextcloud;
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#now = options.now ?? Date.now;
    this.#onAdmin = options.onAdmin;
  }

  async isAdmin(user: ActingUser): Promise<boolean> {
    const now = this.#now();
    const hit = this.#cache.get(user.uid);
    if (hit && hit.until > now) return hit.admin;
    const me = await currentCloudUser(this.#nextcloud, user);
    const admin = me.id === user.uid && Array.isArray(me.groups) && me.groups.includes('admin');
    this.#cache.set(user.uid, { admin, until: now + this.#ttlMs });
    if (admin) await this.#onAdmin?.(user.uid).catch(() => undefined);
    if (this.#cache.size > 10_000) this.#cache.clear();
    return admin;
  }
}
