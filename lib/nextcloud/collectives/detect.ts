// Which Collectives API this user has. Collectives registers no OCS capability (its
// lib/AppInfo/Application.php has no registerCapability; test/fixtures/nextcloud29/20-ocs-capabilities-as-alice.json lists none although 2.16.3
// is installed), so a `collectives` capability key is honoured when present and otherwise the
// API is probed as the user (the app may be enabled for some groups only):
//   3.x: `GET /ocs/v2.php/apps/collectives/api/v1.0/collectives` answers OCS 200;
//   2.x: `GET /index.php/apps/collectives/_api` without a session answers 412
//        `{"message":"CSRF check failed"}` on NC 29 (test/fixtures/nextcloud29/91-collectives.json, collectivesWithoutCsrfToken): the
//        route exists and needs the cookie session. On NC 30/31 (server#46760) `OCS-APIRequest`
//        alone passes the CSRF check, so the same probe gets `200 {"data":[…]}`; the tools still
//        use the cookie session there, which passes too. No cookie is kept by this probe.
//        (3.x's catch-all answers `_api` with an HTML page, so it cannot look like either.)
// Anything else (404 page, OCS 998) means the tools are not offered.
import type { NextcloudSession } from '../client.ts';
import { NextcloudError } from '../errors.ts';

export type CollectivesApiKind = 'ocs' | 'web';

const CLIENT_ERRORS = Array.from({ length: 100 }, (_, i) => 400 + i);

function isAbsence(err: unknown): boolean {
  return err instanceof NextcloudError && err.status >= 400 && err.status < 500;
}

export async function detectCollectivesApi(session: NextcloudSession): Promise<CollectivesApiKind | null> {
  try {
    await session.ocs('GET', '/ocs/v2.php/apps/collectives/api/v1.0/collectives', { timeoutMs: 10_000 });
    return 'ocs';
  } catch (err) {
    if (!isAbsence(err)) throw err;
  }
  const res = await session.web('GET', '/index.php/apps/collectives/_api', {
    timeoutMs: 10_000,
    allowStatuses: CLIENT_ERRORS,
    headers: { 'OCS-APIRequest': 'true' },
  });
  return isWebApiAnswer(res.status, res.json) ? 'web' : null;
}

function isWebApiAnswer(status: number, json: unknown): boolean {
  const body = json as { message?: unknown; data?: unknown } | null;
  if (status === 412) return body?.message === 'CSRF check failed';
  return status === 200 && Array.isArray(body?.data);
}

/** A `collectives` key in `cloud/capabilities` (none today; a version ≥ 3 means the OCS API). */
export function collectivesFromCapabilities(caps: Record<string, unknown>): CollectivesApiKind | null {
  const entry = caps['collectives'] as { version?: unknown } | undefined;
  if (!entry || typeof entry !== 'object') return null;
  const major = Number.parseInt(String(entry.version ?? ''), 10);
  return Number.isFinite(major) && major < 3 ? 'web' : 'ocs';
}
