// S13: an agent profile's account must exist, be enabled, and not be an admin, a sub-admin or a
// member of a delegated-admin group, at save (read as the saving admin) and at every use (read as
// the account itself, plus the enabled flag read as an admin the app has seen; cached ≤ 60 s).
// Nextcloud has no API that lists "Administration privileges" delegation (it is configured in the
// settings UI only), so the groups that hold delegated rights are an admin setting here.
import type { AdminCheck } from '../appapi/admin-check.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudAuthError, NextcloudNotFoundError } from '../nextcloud/errors.ts';
import { issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import { getCurrentUser, getUser } from '../nextcloud/users.ts';
import type { UserDirectory } from '../users/user-directory.ts';
import type { UserStates } from '../users/user-states.ts';

export const ACCOUNT_CHECK_TTL_MS = 60_000;

export interface AccountCheckDeps {
  nextcloud: NextcloudClient;
  directory: Pick<UserDirectory, 'isEnabled'>;
  states: Pick<UserStates, 'statusOf' | 'knownAdmins'>;
  adminCheck: Pick<AdminCheck, 'isAdmin'>;
  /** Groups that hold delegated admin rights (admin setting). */
  delegatedAdminGroups: () => Promise<string[]>;
  now?: () => number;
  ttlMs?: number;
}

interface CloudUserView {
  id?: unknown;
  enabled?: unknown;
  groups?: unknown;
  subadmin?: unknown;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** A short reason an account cannot back a profile, or null. */
async function privilegeProblem(uid: string, view: CloudUserView, delegated: string[]): Promise<string | null> {
  const groups = strings(view.groups);
  if (groups.includes('admin')) return `the account ${uid} is an administrator; agent profiles need an unprivileged account`;
  const subadmin = strings(view.subadmin);
  if (subadmin.length > 0) return `the account ${uid} is a sub-admin (of ${subadmin.join(', ')}); agent profiles need an unprivileged account`;
  const inDelegated = groups.filter((g) => delegated.includes(g));
  if (inDelegated.length > 0) return `the account ${uid} is in a group with delegated admin rights (${inDelegated.join(', ')})`;
  return null;
}

export class AccountCheck {
  readonly #d: AccountCheckDeps;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { problem: string | null; until: number }>();

  constructor(deps: AccountCheckDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
    this.#ttlMs = Math.min(deps.ttlMs ?? ACCOUNT_CHECK_TTL_MS, ACCOUNT_CHECK_TTL_MS);
  }

  /** At save, as the saving admin (who sees `enabled` and `subadmin`). Null when the account may back a profile. */
  async atSave(admin: ActingUser, uid: string): Promise<string | null> {
    let view: CloudUserView;
    try {
      view = await getUser(this.#d.nextcloud.as(admin), uid);
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return `there is no Nextcloud account ${uid}`;
      throw err;
    }
    if (view.id !== uid) return `there is no Nextcloud account ${uid}`;
    if (view.enabled !== true) return view.enabled === false ? `the account ${uid} is disabled` : `Nextcloud did not say whether ${uid} is enabled`;
    const problem = await privilegeProblem(uid, view, await this.#d.delegatedAdminGroups());
    this.#cache.delete(uid);
    return problem;
  }

  /** At every use: the account's own view, and its enabled flag as an admin sees it. Fails closed. */
  async atUse(account: ActingUser): Promise<string | null> {
    const now = this.#now();
    const hit = this.#cache.get(account.uid);
    if (hit && hit.until > now) return hit.problem;
    const problem = await this.#check(account).catch((err: unknown) =>
      err instanceof NextcloudAuthError || err instanceof NextcloudNotFoundError
        ? `the account ${account.uid} does not exist any more`
        : `the account ${account.uid} could not be checked`,
    );
    this.#cache.set(account.uid, { problem, until: now + this.#ttlMs });
    if (this.#cache.size > 1000) this.#cache.clear();
    return problem;
  }

  async #check(account: ActingUser): Promise<string | null> {
    const uid = account.uid;
    if ((await this.#d.states.statusOf(uid)) !== 'active') return `the account ${uid} is disabled or deleted`;
    const view = await getCurrentUser(this.#d.nextcloud.as(account));
    if (view === null) throw new Error('cloud/user answered no account');
    if (view.id !== uid) return `the account ${uid} does not exist any more`;
    const problem = await privilegeProblem(uid, view, await this.#d.delegatedAdminGroups());
    if (problem) return problem;
    // `enabled` is shown only to admins; AppAPI acts as disabled accounts without complaint.
    for (const adminUid of await this.#d.states.knownAdmins()) {
      const admin = issueForStoredPrincipal(adminUid);
      if (!(await this.#d.adminCheck.isAdmin(admin).catch(() => false))) continue;
      const enabled = await this.#d.directory.isEnabled(admin, uid);
      if (enabled === null) return `the account ${uid} does not exist any more`;
      return enabled ? null : `the account ${uid} is disabled`;
    }
    return `whether the account ${uid} is enabled cannot be confirmed (no administrator has used the app recently)`;
  }

  /** Forget cached answers (after a profile changes). */
  forget(uid?: string): void {
    if (uid === undefined) this.#cache.clear();
    else this.#cache.delete(uid);
  }
}
