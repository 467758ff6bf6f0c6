// Where a team's Collective lives in one member's files. Upstream the folder is not fixed: it is
// the member's `user_folder` setting (translated by default, "Kollektive" in German; `/` for
// members without quota; `/.Collectives` in 4.x) plus the collective's name. Collectives itself
// says where: every page carries `collectivePath`, the collective's folder relative to the
// member's files (PageInfo::fromFile, test/fixtures/nextcloud29/91-collectives.json listPages: "Collectives/EducAI Lessons").
// The collective is picked by its name AND its team (`circleId`), never by the name alone: names
// are the circle's sanitized name, so another team's Collective can carry the name asked for.
import type { NextcloudClient } from '../../nextcloud/client.ts';
import type { ActingUser } from '../../nextcloud/identity.ts';
import type { CapabilityProbe } from '../first-party-capabilities.ts';
import { withCollectivesApi, type CollectivesApi } from '../../nextcloud/collectives/api.ts';

export interface CollectiveFolderQuery {
  /** The collective's name as configured. */
  name: string;
  /** Teams whose collective may be used (the bot's teams the member is in). */
  teamIds: readonly string[];
}

/** The folder of the collective called `name` that belongs to one of `teamIds`, as the API's user sees it; null when there is none. */
export async function collectiveFolderPath(api: CollectivesApi, query: CollectiveFolderQuery): Promise<string | null> {
  const teams = new Set(query.teamIds);
  if (teams.size === 0) return null;
  const matches = (await api.listCollectives()).filter((c) => c.name === query.name && c.circleId !== null && teams.has(c.circleId));
  // A team has one collective; anything else is not a state to guess in.
  const [collective] = matches;
  if (!collective || matches.length !== 1) return null;
  const landing = (await api.listPages(collective.id)).find((p) => p.parentId === 0);
  const path = landing?.collectivePath ?? null;
  return path !== null && path.replace(/^\/+|\/+$/g, '') !== '' ? path : null;
}

export type CollectiveFolderResolver = (user: ActingUser, query: CollectiveFolderQuery) => Promise<string | null>;

/** As `user`, through the Collectives API generation the probe found for them (2.x: a cookie session for this lookup only). */
export function collectiveFolderResolver(nextcloud: NextcloudClient, probe: CapabilityProbe): CollectiveFolderResolver {
  return async (user, query) => {
    const capabilities = await probe.forUser(user);
    if (!capabilities.has('collectives')) return null;
    return withCollectivesApi({ capabilities, session: nextcloud.as(user) }, (api) => collectiveFolderPath(api, query));
  };
}
