// A small institution for governance tests: users, a group with a sub-admin, teams, the bots API on a real
// HTTP stack against the fake Nextcloud, on SQLite or PostgreSQL.
import type { Express } from 'express';
import request from 'supertest';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { GovernanceAccessPolicy } from '../../lib/bots/bot-access.ts';
import { BotConfigResolver } from '../../lib/bots/bot-config.ts';
import { BotDeletion, type BotDataOwner } from '../../lib/bots/bot-deletion.ts';
import { DedicatedTalkBotService } from '../../lib/bots/dedicated-talk-bots.ts';
import { Governance, registryToolGate } from '../../lib/bots/governance.ts';
import { MembershipService } from '../../lib/bots/memberships.ts';
import { LlmSettingsService } from '../../lib/llm/llm-settings.ts';
import { ModelCatalog } from '../../lib/llm/model-catalog.ts';
import { createLogger, type Logger } from '../../lib/log/logger.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromVerifiedHeader, type ActingUser } from '../../lib/nextcloud/identity.ts';
import { RequestQueue } from '../../lib/ratelimit/request-queue.ts';
import { createApp } from '../../lib/server/app.ts';
import { apiDocument } from '../../lib/server/api-specs.ts';
import { openApiRoutes } from '../../lib/server/openapi.ts';
import { adminSettingsRoutes } from '../../lib/server/routes/admin-settings.ts';
import { botsApiRoutes } from '../../lib/server/routes/bots-api.ts';
import { knowledgeApiRoutes } from '../../lib/server/routes/knowledge-api.ts';
import { sessionInfoRoutes } from '../../lib/server/routes/session-info.ts';
import type { Dialect } from '../../lib/storage/database.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { RoomBots } from '../../lib/talk/room-bots.ts';
import { SHARED_DESCRIPTION, SHARED_NAME, SHARED_ROUTE, TalkIdentities } from '../../lib/talk/talk-identities.ts';
import { readPolicy, writePolicy } from '../../lib/tools/tool-policy.ts';
import { textResult, type ToolDefinition, type ToolProvider } from '../../lib/tools/tool-provider.ts';
import { ToolRegistry } from '../../lib/tools/tool-registry.ts';
import { TraceStore } from '../../lib/traces/trace-store.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { fakeTeams, type FakeTeams } from '../fakes/nextcloud/teams-groups.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';

export const APP_ID = 'educai';
export const APP_SECRET = 'governance-test-secret-0123456789abcdef';
export const GROUP = 'class-7b';
export const READ_TOOL = 'lookup_notes';
export const WRITE_TOOL = 'send_mail';
export const ALLOWED_MODEL = 'primary:qwen';
export const DEFAULT_MODEL = 'primary:llama';

/**
 * admin, admin2: Nextcloud admins. subadmin: sub-admin of class-7b (and in it).
 * teammod: moderator of "Team 7b". student, owner: plain users in class-7b and Team 7b.
 * teamlead owns Team 7b. "Mixed team" (owned by teammod) contains the whole group class-7b (S9).
 */
export const USERS = [
  { id: 'admin', displayName: 'Admin', groups: ['admin'] },
  { id: 'admin2', displayName: 'Second Admin', groups: ['admin'] },
  { id: 'subadmin', displayName: 'Sub Admin', groups: [GROUP] },
  { id: 'teammod', displayName: 'Team Moderator', groups: [] },
  { id: 'teamlead', displayName: 'Team Lead', groups: [] },
  { id: 'student', displayName: 'Student', groups: [GROUP] },
  { id: 'owner', displayName: 'Owner', groups: [GROUP] },
];

const tool = (name: string, write: boolean): ToolDefinition => ({
  name,
  description: `${name} for tests`,
  schema: { type: 'object', properties: {} },
  policy: write ? writePolicy() : readPolicy(),
});

class TestTools implements ToolProvider {
  readonly id = 'test-tools';
  getTools(): ToolDefinition[] {
    return [tool(READ_TOOL, false), tool(WRITE_TOOL, true)];
  }
  providesTool(name: string): boolean {
    return name === READ_TOOL || name === WRITE_TOOL;
  }
  async executeTool() {
    return textResult('ok');
  }
  getToolMetadata() {
    return { [READ_TOOL]: { label: 'Notes', summary: '' }, [WRITE_TOOL]: { label: 'Mail', summary: '' } };
  }
}

export interface World {
  nc: FakeNextcloud;
  teams: FakeTeams;
  tdb: TestDatabase;
  app: Express;
  logger: Logger;
  nextcloud: NextcloudClient;
  governance: Governance;
  access: GovernanceAccessPolicy;
  resolver: BotConfigResolver;
  memberships: MembershipService;
  identities: TalkIdentities;
  dedicated: DedicatedTalkBotService;
  queue: RequestQueue;
  traces: TraceStore;
  /** Data owners the deletion also calls (knowledge stand-in). */
  owners: BotDataOwner[];
  teamId: string;
  mixedTeamId: string;
  changes: number;
  user(uid: string): ActingUser;
  /** A request through AppAPI's proxy as `uid` ('' = no user), with the CSRF header. */
  api(uid: string, method: 'get' | 'post' | 'put' | 'delete', path: string, body?: unknown): Promise<{ status: number; body: any; text: string }>;
  close(): Promise<void>;
}

export async function startWorld(dialect: Dialect): Promise<World> {
  const tdb = await createTestDatabase(dialect);
  const nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET, users: USERS });
  const teams = fakeTeams(nc);
  teams.makeSubAdmin('subadmin', GROUP);
  const team = teams.createTeam({ name: 'Team 7b', owner: 'teamlead' });
  teams.addMember(team.id, { userId: 'teammod', type: 'user', level: 4 });
  teams.addMember(team.id, { userId: 'student', type: 'user' });
  teams.addMember(team.id, { userId: 'owner', type: 'user' });
  const mixed = teams.createTeam({ name: 'Mixed team', owner: 'teammod' });
  teams.addMember(mixed.id, { userId: GROUP, type: 'group' });

  const logger = createLogger({ level: 'warn', destination: { write: () => undefined } });
  const nextcloud = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
  const vault = new Vault(tdb.db, new Uint8Array(32).fill(3));
  const llmSettings = new LlmSettingsService(new SettingsStore(tdb.db), vault);
  // Never called: with an allowed list the check needs no model listing.
  await llmSettings.update({ primaryEndpoint: 'http://127.0.0.1:9/v1', defaultModel: DEFAULT_MODEL, allowedModels: [ALLOWED_MODEL] });
  const catalog = new ModelCatalog({ settings: llmSettings });
  const registry = new ToolRegistry({ logger });
  registry.register(new TestTools(), 'first-party');
  const memberships = new MembershipService(nextcloud);
  const identities = new TalkIdentities({ db: tdb.db, vault, nextcloud });
  await identities.register(SHARED_ROUTE, SHARED_NAME, SHARED_DESCRIPTION, null);
  const dedicated = new DedicatedTalkBotService({ db: tdb.db, identities });
  const governance = new Governance({ db: tdb.db, memberships, models: catalog, tools: registryToolGate(registry), dedicated, logger });
  const access = new GovernanceAccessPolicy({ memberships, logger });
  const resolver = new BotConfigResolver(tdb.db);
  const queue = new RequestQueue(tdb.db);
  const traces = new TraceStore(tdb.db);
  const owners: BotDataOwner[] = [];
  const deletion = new BotDeletion({ db: tdb.db, queue, traces, dedicated, owners, logger });
  const adminCheck = new AdminCheck(nextcloud);
  const world = {} as World;
  const app = createApp({
    appId: APP_ID,
    appSecret: APP_SECRET,
    logger,
    routers: [
      sessionInfoRoutes({ adminCheck, version: '1.0.0' }),
      adminSettingsRoutes({ llmSettings, catalog, adminCheck, logger }),
      botsApiRoutes({
        governance,
        access,
        resolver,
        deletion,
        rooms: new RoomBots({ nextcloud, db: tdb.db }),
        dedicated,
        memberships,
        nextcloud,
        adminCheck,
        logger,
        knowledge: { sourceCount: async () => 3 },
        onChange: () => {
          world.changes++;
        },
      }),
      // Mounted so the served routes match the document; no knowledge request is made in this world.
      knowledgeApiRoutes({ knowledge: null as never, bots: governance, adminCheck, logger }),
      openApiRoutes(() => apiDocument('1.0.0')),
    ],
  });
  const headers = (uid: string) => ({
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${APP_SECRET}`).toString('base64'),
    'X-Origin-IP': '198.51.100.7',
    requesttoken: 'token-from-the-page',
  });
  Object.assign(world, {
    nc,
    teams,
    tdb,
    app,
    logger,
    nextcloud,
    governance,
    access,
    resolver,
    memberships,
    identities,
    dedicated,
    queue,
    traces,
    owners,
    teamId: team.id,
    mixedTeamId: mixed.id,
    changes: 0,
    user: (uid: string) => issueFromVerifiedHeader(uid),
    async api(uid: string, method: 'get' | 'post' | 'put' | 'delete', path: string, body?: unknown) {
      let req = request(app)[method](path).set(headers(uid));
      if (body !== undefined) req = req.send(body as object);
      const res = await req;
      return { status: res.status, body: res.body, text: res.text };
    },
    async close() {
      await nc.close();
      await tdb.drop();
    },
  } satisfies Omit<World, never>);
  return world;
}

let counter = 0;
/** A mention nobody used yet. */
export function freshMention(prefix = 'bot'): string {
  counter += 1;
  return `${prefix}${counter}_${process.pid % 1000}`;
}
