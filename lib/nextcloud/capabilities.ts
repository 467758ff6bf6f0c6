// The instance's (and, for per-user apps like Deck, the user's) capabilities. Public, so the system may read them.
import type { NextcloudSession } from './client.ts';

type OcsCaller = Pick<NextcloudSession, 'ocs'>;

/** `GET /ocs/v2.php/cloud/capabilities`; the answer (`{ version, capabilities }`) is unchecked. */
export function getCapabilities(session: OcsCaller, options: { timeoutMs?: number } = {}): Promise<{ capabilities?: unknown } | null> {
  return session.ocs<{ capabilities?: unknown } | null>(
    'GET',
    '/ocs/v2.php/cloud/capabilities',
    options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
  );
}
