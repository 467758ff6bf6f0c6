// Set-up for the wiki tests: the fake Nextcloud (real HTTP server from the fixtures), a real
// database of the given dialect, a real NextcloudClient and the wiki module as bootstrap wires
// it, with bots and assignments kept in memory.
import { createLogger } from '../../lib/log/logger.ts';
import { MembershipService } from '../../lib/bots/memberships.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import type { Dialect } from '../../lib/storage/database.ts';
import { createInvocationContext, type InvocationContext, type ToolResult } from '../../lib/tools/tool-provider.ts';
import { collectiveFolderResolver } from '../../lib/tools/collectives/collective-folder.ts';
import { CapabilityProbe } from '../../lib/tools/first-party-capabilities.ts';
import { ToolAssignmentStore } from '../../lib/tools/tool-assignments.ts';
import { createWikiModule, type WikiModule } from '../../lib/wiki/wiki-module.ts';
import type { WikiBot } from '../../lib/wiki/wiki-service.ts';
import { FakeNextcloud, type RecordedCall } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';

export const APP_ID = 'educai';
export const APP_SECRET = 'wiki-tools-test-secret-0123456789abcdef';
export const NOW = Date.UTC(2027, 0, 10, 9, 0, 0);

const USERS = [
  { id: 'admin', displayName: 'admin', groups: ['admin'] },
  { id: 'alice', displayName: 'Alice', groups: ['educai-students'] },
  { id: 'bob', displayName: 'Bob', groups: ['educai-students'] },
  { id: 'carol', displayName: 'Carol', groups: [] },
];

export interface WikiWorld {
  nc: FakeNextcloud;
  client: NextcloudClient;
  tdb: TestDatabase;
  wiki: WikiModule;
  bots: Map<string, WikiBot>;
  /** The real store, with the wiki's hooks installed as bootstrap does. */
  assignments: ToolAssignmentStore;
  ctx(uid: string, botId: string): InvocationContext;
  run(name: string, args: Record<string, unknown>, uid?: string, botId?: string): Promise<{ result: ToolResult; json: any }>;
  callsSince(mark: number): RecordedCall[];
  close(): Promise<void>;
}

export function personalBot(overrides: Partial<WikiBot> = {}): WikiBot {
  return { id: 'bot-personal', mention: 'tutor', displayName: 'Tutor', ownerUid: 'alice', visibility: 'personal', allowedTeams: [], ...overrides };
}

export async function startWikiWorld(dialect: Dialect = 'sqlite'): Promise<WikiWorld> {
  const nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET, users: USERS });
  const client = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
  const tdb = await createTestDatabase(dialect);
  const bots = new Map<string, WikiBot>();
  const assignments = new ToolAssignmentStore(tdb.db);
  const memberships = new MembershipService(client, { ttlMs: 0 });
  let clock = NOW;
  const wiki = createWikiModule({
    db: tdb.db,
    nextcloud: client,
    logger: createLogger({ level: 'silent' }),
    now: () => (clock += 1000),
    bot: async (id) => bots.get(id) ?? null,
    assignments: (id) => assignments.list(id),
    teamsOf: async (user) => (await memberships.forUser(user)).teams,
    // As bootstrap wires it; no caching, so a test may switch the Collectives generation.
    collectiveFolder: collectiveFolderResolver(client, new CapabilityProbe(client, { ttlMs: 0, failureTtlMs: 0 })),
    // Long enough that only flush() runs a sync: the tests never depend on timing.
    debounceMs: 3_600_000,
    eventDebounceMs: 3_600_000,
  });
  assignments.useHooks(wiki.assignmentHooks);
  const ctx = (uid: string, botId: string) =>
    createInvocationContext({ user: issueFromConfirmedTalkAuthor(uid), actorKind: 'user', botId, roomToken: 'room-a', messageId: '1' });
  return {
    nc,
    client,
    tdb,
    wiki,
    bots,
    assignments,
    ctx,
    async run(name, args, uid = 'alice', botId = 'bot-personal') {
      const config = (await assignments.list(botId)).find((a) => a.name === name)?.config ?? {};
      const result = await wiki.provider.executeTool(name, args, config, ctx(uid, botId));
      const text = (result.content[0] as { text: string }).text;
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = { text };
      }
      return { result, json };
    },
    callsSince: (mark) => nc.calls.slice(mark),
    async close() {
      await wiki.close();
      await tdb.drop();
      await nc.close();
    },
  };
}
