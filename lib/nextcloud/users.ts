// Nextcloud's accounts: the provisioning API (`cloud/user`, `cloud/users/{uid}`, `…/groups`,
// test/fixtures/nextcloud29/92-ocs-users-groups.json) and AppAPI's user list. One function per endpoint.
import type { NextcloudSession } from './client.ts';

type OcsCaller = Pick<NextcloudSession, 'ocs'>;

/** `cloud/user` and `cloud/users/{uid}` as far as we read them; every field may be missing. */
export interface CloudUserData {
  id?: unknown;
  enabled?: unknown;
  groups?: unknown;
  subadmin?: unknown;
  language?: unknown;
  [field: string]: unknown;
}

/** The session's own account (`GET /ocs/v2.php/cloud/user`); null when OCS answers no data. */
export function getCurrentUser(session: OcsCaller, options: { timeoutMs?: number } = {}): Promise<CloudUserData | null> {
  return session.ocs<CloudUserData | null>('GET', '/ocs/v2.php/cloud/user', options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
}

/** One account as the session sees it (`GET /ocs/v2.php/cloud/users/{uid}`); admins and sub-admins see `enabled`. */
export function getUser(session: OcsCaller, uid: string): Promise<CloudUserData> {
  return session.ocs<CloudUserData>('GET', '/ocs/v2.php/cloud/users/{uid}', { params: { uid } });
}

/** An account's groups (`GET /ocs/v2.php/cloud/users/{uid}/groups`); `groups` is unchecked. */
export function getUserGroups(session: OcsCaller, uid: string): Promise<{ groups?: unknown } | null> {
  return session.ocs<{ groups?: unknown } | null>('GET', '/ocs/v2.php/cloud/users/{uid}/groups', { params: { uid } });
}

/** Every account id from AppAPI's helper (`GET /ocs/v1.php/apps/app_api/api/v1/users`), as the system; unchecked. */
export function listAppApiUsers(system: OcsCaller): Promise<unknown> {
  return system.ocs<unknown>('GET', '/ocs/v1.php/apps/app_api/api/v1/users');
}
