// One client interface over both Collectives API generations, as the invoking user:
//   2.x (Nextcloud 29): CSRF-protected web routes below `/index.php/apps/collectives/_api`,
//        through a cookie session that lives only for one tool call (test/fixtures/nextcloud29/91-collectives.json);
//   3.x (Nextcloud 30+): the OCS API below `/ocs/v2.php/apps/collectives/api/v1.0`.
// Which one is used comes from detection (lib/tools/first-party-capabilities.ts: 'collectives-ocs').
// Answers are parsed strictly: ids are integers, strings are strings; nothing else passes.
import type { NextcloudSession } from '../client.ts';
import { WebCollectivesApi } from './v2-client.ts';
import { OcsCollectivesApi } from './v3-client.ts';
import type { CollectivesApi } from './model.ts';

export { moveBody, parseCollective, parseList, parsePage } from './model.ts';
export type { CollectiveInfo, CollectivesApi, MoveTarget, PageInfo } from './model.ts';

/** What choosing a client needs: the user's session and the detected capabilities (a tool's ToolEnv). */
export interface CollectivesEnv {
  readonly session: NextcloudSession;
  readonly capabilities: { has(name: 'collectives-ocs'): boolean };
}

/** Runs `fn` with the client of the detected generation; a 2.x cookie session ends with `fn`. */
export async function withCollectivesApi<T>(env: CollectivesEnv, fn: (api: CollectivesApi) => Promise<T>): Promise<T> {
  if (env.capabilities.has('collectives-ocs')) return fn(new OcsCollectivesApi(env.session));
  return env.session.withCookieSession((web) => fn(new WebCollectivesApi(web)));
}
