// Nextcloud's accounts as AppAPI and the provisioning API report them.
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { getUser, listAppApiUsers } from '../nextcloud/users.ts';

export class UserDirectory {
  readonly #nextcloud: NextcloudClient;

  constructor(nextcloud: NextcloudClient) {
    this.#nextcloud = nextcloud;
  }

  /** Every account id, from AppAPI's helper (no user needed) [25]. */
  async listUids(): Promise<string[]> {
    const data = await listAppApiUsers(this.#nextcloud.system());
    if (!Array.isArray(data)) throw new Error('AppAPI returned no user list');
    return data.filter((x): x is string => typeof x === 'string');
  }

  /**
   * Whether an account is enabled, read as an admin: Nextcloud shows `enabled` only to admins
   * and sub-admins, and AppAPI acts as disabled accounts without complaint. null: no such account.
   */
  async isEnabled(admin: ActingUser, uid: string): Promise<boolean | null> {
    try {
      const data = await getUser(this.#nextcloud.as(admin), uid);
      if (typeof data['enabled'] !== 'boolean') throw new Error('the account view carries no enabled flag; is the reading user still an admin?');
      return data['enabled'];
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return null;
      throw err;
    }
  }
}
