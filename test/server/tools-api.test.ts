import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { BotStore } from '../../lib/bots/bot-store.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { McpProviderManager } from '../../lib/mcp/mcp-provider-manager.ts';
import { McpServerStore } from '../../lib/mcp/mcp-server-store.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { createApp } from '../../lib/server/app.ts';
import { REASON_PENDING_APPROVAL, REASON_SERVER_DISABLED, REASON_TOOL_OFF, REASON_UNKNOWN_TOOL, toolsApiRoutes } from '../../lib/server/routes/tools-api.ts';
import { ToolAssignmentStore } from '../../lib/tools/tool-assignments.ts';
import { readPolicy, searchPolicy } from '../../lib/tools/tool-policy.ts';
import {
  textResult,
  type ConfigValidation,
  type ToolDefinition,
  type ToolMetadata,
  type ToolProvider,
  type ToolResult,
} from '../../lib/tools/tool-provider.ts';
import { REASON_PROVIDER_UNAVAILABLE, ToolRegistry } from '../../lib/tools/tool-registry.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { startTestMcpServer, text, type TestMcpServer } from '../mcp/mcp-test-server.ts';

const APP_ID = 'educai';
const APP_SECRET = 'tools-api-test-secret-0123456789abcdef';
const CSRF = { requesttoken: 'token-from-the-page' };

function appApiHeaders(uid: string): Record<string, string> {
  return {
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${APP_SECRET}`).toString('base64'),
    'X-Origin-IP': '198.51.100.7',
  };
}

/** A core provider: web_search is configured; calendar_read is known but its provider lists nothing. */
class CoreProvider implements ToolProvider {
  readonly id = 'core';

  getTools(): ToolDefinition[] {
    return [
      { name: 'web_search', description: 'Search the web\nfor pages', schema: { type: 'object', properties: {} }, policy: searchPolicy(), label: 'Web search' },
    ];
  }

  providesTool(name: string): boolean {
    return name === 'web_search' || name === 'calendar_read';
  }

  async executeTool(name: string): Promise<ToolResult> {
    return textResult(`${name} ok`);
  }

  getToolMetadata(): Record<string, ToolMetadata> {
    return {
      web_search: { label: 'Web search', summary: 'Search the web', family: 'Search' },
      calendar_read: { label: 'Read calendar', summary: 'Read your calendar', family: 'Calendar' },
    };
  }

  validateConfig(name: string, config: Record<string, unknown>): ConfigValidation {
    if (name !== 'web_search')
      return Object.keys(config).length === 0 ? { ok: true, config: {} } : { ok: false, errors: { config: 'This tool takes no configuration' } };
    const errors: Record<string, string> = {};
    for (const [key, value] of Object.entries(config)) {
      if (key !== 'maxResults') errors[key] = 'Unknown config field';
      else if (typeof value !== 'number') errors[key] = 'Must be a number';
    }
    return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, config };
  }
}

/** A first-party provider that can be removed, leaving its assignments inert. */
class NotesProvider implements ToolProvider {
  readonly id = 'notes';
  getTools(): ToolDefinition[] {
    return [{ name: 'notes_read', description: 'Read notes', schema: {}, policy: readPolicy() }];
  }
  providesTool(name: string): boolean {
    return name === 'notes_read';
  }
  async executeTool(): Promise<ToolResult> {
    return textResult('notes');
  }
  getToolMetadata(): Record<string, ToolMetadata> {
    return { notes_read: { label: 'Read notes', summary: 'Read your notes' } };
  }
}

type Item = { name: string; available: boolean; reason?: string; label: string; family: string | null; provider: string; pendingApproval?: boolean };

for (const dialect of DIALECTS) {
  describe(`tools API on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let mcp: TestMcpServer;
    let app: Express;
    let manager: McpProviderManager;
    let registry: ToolRegistry;
    let store: McpServerStore;
    let bots: BotStore;
    let serverId: string;
    let aliceBot: string;
    const clock = { t: 1_750_000_000_000 };

    const catalogue = async (uid = 'alice') => {
      const res = await request(app).get('/api/v1/tools').set(appApiHeaders(uid));
      assert.equal(res.status, 200, res.text);
      return { res, byName: Object.fromEntries((res.body.tools as Item[]).map((t) => [t.name, t])) };
    };
    const put = (uid: string, body: unknown) =>
      request(app)
        .put(`/api/v1/bots/${aliceBot}/tools`)
        .set(appApiHeaders(uid))
        .set(CSRF)
        .send(body as object);

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET });
      mcp = await startTestMcpServer([
        {
          name: 'search_courses',
          description: 'Search the course catalogue',
          inputSchema: { query: z.string() },
          annotations: { readOnlyHint: true },
          handler: () => text('found'),
        },
        { name: 'drop_course', description: 'Remove the user from a course', inputSchema: { course: z.string() }, handler: () => text('dropped') },
      ]);
      const logger = createLogger({ level: 'silent' });
      const nextcloud = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
      registry = new ToolRegistry({ logger });
      registry.register(new CoreProvider(), 'core');
      registry.register(new NotesProvider(), 'first-party');
      store = new McpServerStore(tdb.db, new Vault(tdb.db, new Uint8Array(32).fill(3)), () => clock.t);
      manager = new McpProviderManager({ registry, store, logger, now: () => clock.t, connection: { connectTimeoutMs: 5_000 } });
      const created = await store.create({ name: 'Courses', url: mcp.url });
      serverId = created.server.id;
      await manager.sync();
      const provider = manager.provider(serverId);
      assert.ok(provider);
      const review = await provider.review();
      await provider.approve(review.hash, { search_courses: 'read', drop_course: 'off' });

      bots = new BotStore(tdb.db, () => clock.t);
      aliceBot = (await bots.create({ displayName: 'Tutor', mention: 'tutor' }, 'alice')).id;
      app = createApp({
        appId: APP_ID,
        appSecret: APP_SECRET,
        logger,
        routers: [
          toolsApiRoutes({
            registry,
            assignments: new ToolAssignmentStore(tdb.db, () => clock.t),
            bots,
            adminCheck: new AdminCheck(nextcloud),
            logger,
            mcp: { store, manager },
            refreshTimeoutMs: 30_000,
          }),
        ],
      });
    });

    after(async () => {
      await manager.close();
      await mcp.close();
      await nc.close();
      await tdb.drop();
    });

    it('lists every tool with label, family, provider and why it is unavailable', async () => {
      const { res, byName } = await catalogue();
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.deepEqual(byName['web_search'], {
        name: 'web_search',
        label: 'Web search',
        summary: 'Search the web',
        family: 'Search',
        provider: 'core',
        available: true,
      });
      assert.deepEqual(byName['calendar_read'], {
        name: 'calendar_read',
        label: 'Read calendar',
        summary: 'Read your calendar',
        family: 'Calendar',
        provider: 'core',
        available: false,
        reason: REASON_PROVIDER_UNAVAILABLE,
      });
      assert.equal(byName['notes_read']?.available, true);
      assert.equal(byName['search_courses']?.available, true);
      assert.equal(byName['search_courses']?.family, 'Courses');
      assert.equal(byName['search_courses']?.provider, `mcp:${serverId}`);
      assert.equal(byName['search_courses']?.pendingApproval, false);
      assert.equal(byName['drop_course']?.available, false);
      assert.equal(byName['drop_course']?.reason, REASON_TOOL_OFF);
      assert.ok(!res.text.includes(mcp.url), 'no server URL for users');
      assert.equal((await request(app).get('/api/v1/tools').set(appApiHeaders(''))).status, 401);
    });

    it('marks a tool the server added as waiting for approval', async () => {
      mcp.addTool({ name: 'enrol', description: 'Enrol in a course', inputSchema: { course: z.string() }, handler: () => text('enrolled') });
      clock.t += 10 * 60_000; // past the listing cache
      const { byName } = await catalogue();
      assert.equal(byName['enrol']?.available, false);
      assert.equal(byName['enrol']?.pendingApproval, true);
      assert.equal(byName['enrol']?.reason, REASON_PENDING_APPROVAL);
    });

    it('keeps assignments by name: owner and admin may change them, other users may not', async () => {
      const empty = await request(app).get(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders('alice'));
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body, { botId: aliceBot, tools: [] });

      const saved = await put('alice', {
        tools: [{ name: 'web_search', config: { maxResults: 5, force: true } }, { name: 'search_courses' }, { name: 'notes_read' }],
      });
      assert.equal(saved.status, 200, saved.text);
      assert.deepEqual(saved.body.tools, [
        { name: 'web_search', config: { maxResults: 5, force: true }, known: true, label: 'Web search', available: true },
        { name: 'search_courses', config: {}, known: true, label: 'search_courses', available: true },
        { name: 'notes_read', config: {}, known: true, label: 'Read notes', available: true },
      ]);

      for (const uid of ['bob']) {
        const read = await request(app).get(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders(uid));
        assert.equal(read.status, 403);
        const write = await put(uid, { tools: [] });
        assert.equal(write.status, 403);
        assert.equal(write.body.error.code, 'forbidden');
      }
      const noCsrf = await request(app).put(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders('alice')).send({ tools: [] });
      assert.equal(noCsrf.status, 403);
      assert.equal(noCsrf.body.error.code, 'csrf');
      assert.equal((await request(app).get(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders(''))).status, 401);
      assert.equal((await request(app).get('/api/v1/bots/00000000-0000-0000-0000-000000000000/tools').set(appApiHeaders('alice'))).status, 404);
      assert.equal((await request(app).get('/api/v1/bots/..%2Fetc/tools').set(appApiHeaders('alice'))).status, 404);

      const byAdmin = await request(app).get(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders('admin'));
      assert.equal(byAdmin.status, 200);
      assert.equal(byAdmin.body.tools.length, 3, 'refused requests changed nothing');
      const adminPut = await put('admin', { tools: [{ name: 'web_search', config: { maxResults: 3 } }, { name: 'notes_read' }] });
      assert.equal(adminPut.status, 200, adminPut.text);
      assert.deepEqual(
        adminPut.body.tools.map((t: { name: string }) => t.name),
        ['web_search', 'notes_read'],
      );
    });

    it('refuses to change the tools of a shared bot outside its review (S10)', async () => {
      const shared = await bots.create({ displayName: 'Shared', mention: `shared${dialect}`, visibility: 'global' }, 'alice', { approvalStatus: 'approved' });
      const res = await request(app)
        .put(`/api/v1/bots/${shared.id}/tools`)
        .set(appApiHeaders('alice'))
        .set(CSRF)
        .send({ tools: [{ name: 'web_search' }] });
      assert.equal(res.status, 409);
      assert.equal(res.body.error.code, 'review_required');
      const read = await request(app).get(`/api/v1/bots/${shared.id}/tools`).set(appApiHeaders('alice'));
      assert.deepEqual(read.body.tools, []);
    });

    it('refuses unknown names and invalid configs with field errors', async () => {
      const unknown = await put('alice', { tools: [{ name: 'web_search' }, { name: 'launch_rockets' }, { name: 'bad name!' }, { name: 'web_search' }] });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error.code, 'invalid_tools');
      assert.deepEqual(unknown.body.error.details, { 'tools.2.name': 'Not a valid tool name' });

      const names = await put('alice', { tools: [{ name: 'web_search' }, { name: 'launch_rockets' }, { name: 'web_search' }] });
      assert.deepEqual(names.body.error.details, { 'tools.1.name': 'Unknown tool', 'tools.2.name': 'Listed twice' });

      const configs = await put('alice', {
        tools: [
          { name: 'web_search', config: { maxResults: 'ten' } },
          { name: 'calendar_read', config: { colour: 'red' } },
          { name: 'notes_read', config: { force: 'yes' } },
        ],
      });
      assert.equal(configs.status, 400);
      assert.deepEqual(configs.body.error.details, {
        'tools.0.config.maxResults': 'Must be a number',
        'tools.1.config': 'This tool takes no configuration',
        'tools.2.config.force': 'Must be true or false',
      });

      const shape = await put('alice', { tools: [{ name: 'web_search', config: [1], extra: true }] });
      assert.deepEqual(shape.body.error.details, { 'tools.0.config': 'Must be an object', 'tools.0.extra': 'Unknown field' });
      const notList = await put('alice', { tools: 'web_search' });
      assert.deepEqual(notList.body.error.details, { tools: 'Must be a list of tools' });
      const tooMany = await put('alice', { tools: Array.from({ length: 201 }, () => ({ name: 'web_search' })) });
      assert.match(tooMany.body.error.details.tools, /At most 200/);

      const stored = await request(app).get(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders('alice'));
      assert.deepEqual(
        stored.body.tools.map((t: { name: string }) => t.name),
        ['web_search', 'notes_read'],
        'nothing stored by refused saves',
      );
    });

    it('keeps an assignment inert when its provider is removed, and still refuses new unknown names', async () => {
      registry.unregister('notes');
      try {
        const inert = await request(app).get(`/api/v1/bots/${aliceBot}/tools`).set(appApiHeaders('alice'));
        assert.deepEqual(inert.body.tools[1], {
          name: 'notes_read',
          config: {},
          known: false,
          label: 'notes_read',
          available: false,
          reason: REASON_UNKNOWN_TOOL,
        });
        const kept = await put('alice', { tools: [{ name: 'notes_read' }, { name: 'web_search' }] });
        assert.equal(kept.status, 200, kept.text);
        assert.deepEqual(
          kept.body.tools.map((t: { name: string; known: boolean }) => [t.name, t.known]),
          [
            ['notes_read', false],
            ['web_search', true],
          ],
        );
        const added = await put('alice', { tools: [{ name: 'notes_read' }, { name: 'notes_write' }] });
        assert.deepEqual(added.body.error.details, { 'tools.1.name': 'Unknown tool' });
      } finally {
        registry.register(new NotesProvider(), 'first-party');
      }
    });

    it('answers from metadata while a tool server is down, and names a disabled server', async () => {
      await mcp.close();
      clock.t += 10 * 60_000;
      const { byName } = await catalogue();
      assert.equal(byName['search_courses']?.available, false);
      assert.equal(byName['search_courses']?.label, 'search_courses');
      assert.equal(byName['search_courses']?.family, 'Courses');
      assert.equal(byName['search_courses']?.reason, REASON_PROVIDER_UNAVAILABLE);
      assert.equal(byName['web_search']?.available, true, 'other providers are unaffected');

      await store.update(serverId, { enabled: false });
      await manager.sync();
      const disabled = await catalogue();
      assert.equal(disabled.byName['search_courses']?.reason, REASON_SERVER_DISABLED);

      // A bot's assignments read fine too.
      const saved = await put('alice', { tools: [{ name: 'search_courses' }] });
      assert.equal(saved.status, 200, saved.text);
      assert.deepEqual(saved.body.tools, [
        { name: 'search_courses', config: {}, known: true, label: 'search_courses', available: false, reason: REASON_SERVER_DISABLED },
      ]);
    });
  });
}
