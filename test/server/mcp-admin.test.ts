import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { McpProviderManager } from '../../lib/mcp/mcp-provider-manager.ts';
import { McpServerStore } from '../../lib/mcp/mcp-server-store.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { createApp } from '../../lib/server/app.ts';
import { mcpAdminRoutes } from '../../lib/server/routes/mcp-admin.ts';
import { ToolRegistry } from '../../lib/tools/tool-registry.ts';
import { MASK, Vault } from '../../lib/vault/vault.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { startTestMcpServer, text, type TestMcpServer, type ToolSpec } from '../mcp/mcp-test-server.ts';

const APP_ID = 'educai';
const APP_SECRET = 'mcp-admin-test-secret-0123456789abcdef';
const HEADER_VALUE = 'Bearer mcp-admin-header-value-5e4d3c2b1a';
const WRONG_VALUE = 'Bearer mcp-admin-wrong-value-9f8e7d6c';
const BODY_MARKER = 'stack-trace-from-the-tool-server-7c1d';
const BASE = '/api/v1/admin/mcp-servers';
const CSRF = { requesttoken: 'token-from-the-page' };

type Method = 'get' | 'post' | 'put' | 'delete';

function appApiHeaders(uid: string): Record<string, string> {
  return {
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${APP_SECRET}`).toString('base64'),
    'X-Origin-IP': '198.51.100.7',
  };
}

function tools(): ToolSpec[] {
  return [
    {
      name: 'search_courses',
      description: 'Search the course catalogue',
      inputSchema: { query: z.string() },
      annotations: { readOnlyHint: true },
      handler: (args) => text(`found: ${String(args['query'])}`),
    },
    {
      name: 'drop_course',
      description: 'Remove the user from a course',
      inputSchema: { course: z.string() },
      annotations: { destructiveHint: true },
      handler: () => text('dropped'),
    },
  ];
}

/** A server that answers every request with a 500 and a body that must never be shown. */
async function startBrokenServer(): Promise<{ url: string; close(): Promise<void> }> {
  const http: Server = createServer((_req, res) => {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(BODY_MARKER);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`MCP admin routes on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let mcp: TestMcpServer;
    let locked: TestMcpServer;
    let broken: Awaited<ReturnType<typeof startBrokenServer>>;
    let downUrl: string;
    let app: Express;
    let manager: McpProviderManager;
    let registry: ToolRegistry;
    const logLines: string[] = [];

    const admin = () => appApiHeaders('admin');
    const call = (method: Method, path: string) => request(app)[method](path);
    const post = (path: string, body?: object) => {
      const r = request(app).post(path).set(admin()).set(CSRF);
      return body === undefined ? r : r.send(body);
    };

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({
        appId: APP_ID,
        appSecret: APP_SECRET,
        users: [
          { id: 'admin', displayName: 'Admin', groups: ['admin'] },
          { id: 'alice', displayName: 'Alice', groups: ['students'] },
        ],
      });
      mcp = await startTestMcpServer(tools());
      locked = await startTestMcpServer(tools(), { requireAuthorization: HEADER_VALUE });
      broken = await startBrokenServer();
      const down = await startTestMcpServer(tools());
      downUrl = down.url;
      await down.close();

      const destination = new Writable({
        write(chunk, _enc, cb) {
          logLines.push(String(chunk));
          cb();
        },
      });
      const logger = createLogger({ level: 'debug', destination });
      const nextcloud = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
      const store = new McpServerStore(tdb.db, new Vault(tdb.db, new Uint8Array(32).fill(9)));
      registry = new ToolRegistry({ logger });
      manager = new McpProviderManager({ registry, store, logger, connection: { retryBackoffMs: 0, connectTimeoutMs: 5_000 } });
      app = createApp({
        appId: APP_ID,
        appSecret: APP_SECRET,
        logger,
        routers: [mcpAdminRoutes({ store, manager, adminCheck: new AdminCheck(nextcloud), logger, testTimeoutMs: 5_000 })],
      });
    });

    after(async () => {
      await manager.close();
      await mcp.close();
      await locked.close();
      await broken.close();
      await nc.close();
      await tdb.drop();
    });

    it('refuses non-admins, anonymous users and state changes without the CSRF header', async () => {
      const created = await post(BASE, { name: 'Gate check', url: mcp.url });
      assert.equal(created.status, 201, created.text);
      const id = created.body.server.id as string;
      const routes: Array<[Method, string]> = [
        ['get', BASE],
        ['post', BASE],
        ['get', `${BASE}/${id}`],
        ['put', `${BASE}/${id}`],
        ['delete', `${BASE}/${id}`],
        ['post', `${BASE}/${id}/enable`],
        ['post', `${BASE}/${id}/disable`],
        ['post', `${BASE}/${id}/rotate-key`],
        ['post', `${BASE}/${id}/test`],
        ['get', `${BASE}/${id}/review`],
        ['post', `${BASE}/${id}/approve`],
      ];
      for (const [method, path] of routes) {
        const user = await call(method, path).set(appApiHeaders('alice')).set(CSRF).send({});
        assert.equal(user.status, 403, `${method} ${path}`);
        assert.equal(user.body.error.code, 'admin_required');
        assert.equal(user.headers['cache-control'], 'no-store');
        assert.equal(user.headers['x-content-type-options'], 'nosniff');
        const anon = await call(method, path).set(appApiHeaders('')).set(CSRF);
        assert.equal(anon.status, 401, `${method} ${path}`);
        if (method !== 'get') {
          const noCsrf = await call(method, path).set(admin()).send({});
          assert.equal(noCsrf.status, 403, `${method} ${path}`);
          assert.equal(noCsrf.body.error.code, 'csrf');
        }
      }
      const still = await request(app).get(`${BASE}/${id}`).set(admin());
      assert.equal(still.status, 200, 'nothing was deleted by refused requests');
      assert.equal(still.body.server.enabled, true);
      assert.equal((await request(app).delete(`${BASE}/${id}`).set(admin()).set(CSRF)).status, 200);
    });

    it('answers invalid servers with one error per field and stores nothing', async () => {
      const res = await post(BASE, {
        name: '',
        url: 'ftp://tools.example/mcp',
        kind: 'plugin',
        enabled: 'yes',
        headers: { 'Bad Header': 'x', Host: 'evil.example', Authorization: 'a\r\nb' },
        toolPolicies: { search_courses: { policy: 'always' } },
        authentication: { token: 'x' },
      });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_server');
      assert.deepEqual(res.body.error.details, { authentication: 'Unknown field' });

      const fields = await post(BASE, {
        name: '',
        url: 'ftp://tools.example/mcp',
        kind: 'plugin',
        enabled: 'yes',
        headers: { 'Bad Header': 'x', Host: 'evil.example', Authorization: 'a\r\nb' },
        toolPolicies: { search_courses: { policy: 'always' } },
      });
      assert.equal(fields.status, 400);
      const d = fields.body.error.details as Record<string, string>;
      assert.equal(d['name'], 'Enter a name');
      assert.equal(d['url'], 'Only http and https URLs are allowed');
      assert.equal(d['kind'], 'Use mcp or companion');
      assert.equal(d['enabled'], 'Must be true or false');
      assert.equal(d['headers.Bad Header'], 'Not a valid header name');
      assert.equal(d['headers.Host'], 'This header is set by the transport');
      assert.equal(d['headers.Authorization'], 'No line breaks');
      assert.equal(d['toolPolicies.search_courses.policy'], 'Use read, write, confirm, destructive or off');

      const credentialsInUrl = await post(BASE, { name: 'Creds', url: 'https://user:pw@tools.example/mcp' });
      assert.equal(credentialsInUrl.status, 400);
      assert.equal(credentialsInUrl.body.error.details.url, 'Put credentials in a header, not in the URL');
      const notObject = await request(app).post(BASE).set(admin()).set(CSRF).set('Content-Type', 'application/json').send('[1,2]');
      assert.equal(notObject.status, 400);
      assert.equal(notObject.body.error.details.input, 'The body must be a JSON object');

      const list = await request(app).get(BASE).set(admin());
      assert.deepEqual(list.body.servers, []);
    });

    it('creates, reads, updates and deletes a server; header values are write-only', async () => {
      const created = await post(BASE, { name: 'Catalogue', url: mcp.url, headers: { Authorization: HEADER_VALUE, 'X-Tenant': 'north' } });
      assert.equal(created.status, 201, created.text);
      const id = created.body.server.id as string;
      assert.deepEqual(created.body.server.headers, { Authorization: MASK, 'X-Tenant': MASK });
      assert.equal(created.body.server.kind, 'mcp');
      assert.equal(created.body.server.enabled, true);
      assert.equal('contextKey' in created.body, false, 'a plain MCP server has no context key');
      assert.equal(created.headers['cache-control'], 'no-store');

      const duplicate = await post(BASE, { name: 'catalogue', url: mcp.url });
      assert.equal(duplicate.status, 400);
      assert.equal(duplicate.body.error.details.name, 'Another tool server already has this name');

      const list = await request(app).get(BASE).set(admin());
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.servers.map((s: { name: string }) => s.name),
        ['Catalogue'],
      );
      const one = await request(app).get(`${BASE}/${id}`).set(admin());
      assert.equal(one.body.server.url, mcp.url);
      assert.equal(one.body.server.connection.reachable, null);

      // The mask keeps a value, a new value replaces it; the value reaches only the server.
      const renamed = await request(app)
        .put(`${BASE}/${id}`)
        .set(admin())
        .set(CSRF)
        .send({ name: 'Course catalogue', headers: { Authorization: MASK } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.server.name, 'Course catalogue');
      assert.deepEqual(renamed.body.server.headers, { Authorization: MASK });
      const tested = await post(`${BASE}/${id}/test`);
      assert.equal(tested.body.ok, true);
      assert.equal(mcp.requestHeaders.at(-1)?.['authorization'], HEADER_VALUE);
      assert.equal(mcp.requestHeaders.at(-1)?.['x-tenant'], undefined, 'a removed header is no longer sent');

      const badPatch = await request(app)
        .put(`${BASE}/${id}`)
        .set(admin())
        .set(CSRF)
        .send({ url: 'not a url', headers: { 'X-New': MASK } });
      assert.equal(badPatch.status, 400);
      assert.equal(badPatch.body.error.details.url, 'Not a valid URL');
      assert.equal(badPatch.body.error.details['headers.X-New'], 'Enter a value');
      const kindPatch = await request(app).put(`${BASE}/${id}`).set(admin()).set(CSRF).send({ kind: 'companion' });
      assert.equal(kindPatch.status, 400);
      assert.deepEqual(kindPatch.body.error.details, { kind: 'The kind cannot change; register a new provider instead' });
      assert.equal((await request(app).get(`${BASE}/${id}`).set(admin())).body.server.url, mcp.url, 'refused patches change nothing');

      const off = await post(`${BASE}/${id}/disable`);
      assert.equal(off.status, 200);
      assert.equal(off.body.server.enabled, false);
      const on = await post(`${BASE}/${id}/enable`);
      assert.equal(on.body.server.enabled, true);

      const missing = await request(app).get(`${BASE}/00000000-0000-0000-0000-000000000000`).set(admin());
      assert.equal(missing.status, 404);
      const deleted = await request(app).delete(`${BASE}/${id}`).set(admin()).set(CSRF);
      assert.deepEqual(deleted.body, { deleted: true });
      assert.equal((await request(app).get(`${BASE}/${id}`).set(admin())).status, 404);
      assert.equal((await request(app).delete(`${BASE}/${id}`).set(admin()).set(CSRF)).status, 404);
      assert.deepEqual(registry.providers(), [], 'the provider left the registry');

      for (const res of [created, list, one, renamed, tested, badPatch, off, on]) {
        assert.ok(!res.text.includes(HEADER_VALUE), 'no header value in any answer');
        assert.ok(!res.text.includes('north'));
      }
      const logs = logLines.join('');
      assert.ok(logs.includes('tool server registered'));
      assert.ok(!logs.includes(HEADER_VALUE), 'no header value in the log');
      assert.ok(!logs.includes('mcp-admin-header-value'), 'not even a part of it');
    });

    it('shows a companion key once on create and once on rotate', async () => {
      const created = await post(BASE, { name: 'Deck companion', url: mcp.url, kind: 'companion' });
      assert.equal(created.status, 201);
      const id = created.body.server.id as string;
      const key = created.body.contextKey as string;
      assert.match(key, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(created.body.server.kind, 'companion');

      const later = [await request(app).get(BASE).query({ kind: 'companion' }).set(admin()), await request(app).get(`${BASE}/${id}`).set(admin())];
      for (const res of later) assert.ok(!res.text.includes(key), 'the key is not shown again');
      assert.deepEqual(
        later[0]?.body.servers.map((s: { kind: string }) => s.kind),
        ['companion'],
      );
      const mcpOnly = await request(app).get(BASE).query({ kind: 'mcp' }).set(admin());
      assert.equal(
        mcpOnly.body.servers.some((s: { id: string }) => s.id === id),
        false,
      );
      const badKind = await request(app).get(BASE).query({ kind: 'other' }).set(admin());
      assert.equal(badKind.status, 400);

      const rotated = await post(`${BASE}/${id}/rotate-key`);
      assert.equal(rotated.status, 200);
      assert.match(rotated.body.contextKey, /^[A-Za-z0-9_-]{43}$/);
      assert.notEqual(rotated.body.contextKey, key);

      const plain = await post(BASE, { name: 'Plain', url: mcp.url });
      const notCompanion = await post(`${BASE}/${plain.body.server.id}/rotate-key`);
      assert.equal(notCompanion.status, 409);
      assert.equal(notCompanion.body.error.code, 'not_companion');

      const logs = logLines.join('');
      assert.ok(logs.includes('companion context key rotated'));
      assert.ok(!logs.includes(key) && !logs.includes(rotated.body.contextKey), 'keys never reach the log');
      await request(app).delete(`${BASE}/${id}`).set(admin()).set(CSRF);
      await request(app).delete(`${BASE}/${plain.body.server.id}`).set(admin()).set(CSRF);
    });

    it('tests a server and reports only a status (S18)', async () => {
      const good = await post(BASE, { name: 'Locked', url: locked.url, headers: { Authorization: HEADER_VALUE } });
      const ok = await post(`${BASE}/${good.body.server.id}/test`);
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body, { ok: true, status: 'ok', toolCount: 2 });

      const wrong = await post(BASE, { name: 'Locked wrong', url: locked.url, headers: { Authorization: WRONG_VALUE } });
      const refused = await post(`${BASE}/${wrong.body.server.id}/test`);
      assert.deepEqual(refused.body, { ok: false, status: 'unauthorized', httpStatus: 401 });
      assert.ok(!refused.text.includes(WRONG_VALUE));
      assert.ok(!refused.text.includes('{"error"'), 'no response body of the tool server');

      const failing = await post(BASE, { name: 'Broken', url: broken.url });
      const error = await post(`${BASE}/${failing.body.server.id}/test`);
      assert.deepEqual(error.body, { ok: false, status: 'http_error', httpStatus: 500 });
      assert.ok(!error.text.includes(BODY_MARKER));

      const gone = await post(BASE, { name: 'Down', url: downUrl });
      const down = await post(`${BASE}/${gone.body.server.id}/test`);
      assert.deepEqual(down.body, { ok: false, status: 'unreachable' });

      // The review of a failing server is a status too.
      const review = await request(app).get(`${BASE}/${failing.body.server.id}/review`).set(admin());
      assert.equal(review.status, 502);
      assert.equal(review.body.error.code, 'mcp_unreachable');
      assert.deepEqual(review.body.error.details, { status: 'http_error', httpStatus: 500 });
      assert.ok(!review.text.includes(BODY_MARKER));
      const listed = await request(app).get(BASE).set(admin());
      const brokenView = listed.body.servers.find((s: { name: string }) => s.name === 'Broken');
      assert.deepEqual(brokenView.connection.lastError, { status: 'http_error', httpStatus: 500 });
      assert.equal(brokenView.connection.reachable, null);
      assert.ok(!listed.text.includes(BODY_MARKER));

      const logs = logLines.join('');
      assert.ok(!logs.includes(BODY_MARKER), 'no response body in the log');
      assert.ok(!logs.includes(WRONG_VALUE) && !logs.includes(HEADER_VALUE));
      for (const s of [good, wrong, failing, gone]) await request(app).delete(`${BASE}/${s.body.server.id}`).set(admin()).set(CSRF);
    });

    it('reviews the listed tools, approves them with policies, and refuses a stale review with 409', async () => {
      const created = await post(BASE, { name: 'Courses', url: mcp.url });
      const id = created.body.server.id as string;

      const first = await request(app).get(`${BASE}/${id}/review`).set(admin());
      assert.equal(first.status, 200, first.text);
      const review = first.body.review;
      assert.match(review.hash, /^[a-f0-9]{64}$/);
      assert.equal(review.approvedToolsHash, null);
      const byName = Object.fromEntries(review.tools.map((t: { name: string }) => [t.name, t]));
      assert.equal(byName['search_courses'].suggestedPolicy, 'read');
      assert.equal(byName['search_courses'].status, 'new');
      assert.equal(byName['drop_course'].suggestedPolicy, 'destructive');
      assert.deepEqual([...review.pending].sort(), ['drop_course', 'search_courses']);

      const badBody = await post(`${BASE}/${id}/approve`, { hash: 'abc', policies: { drop_course: 'sometimes', 'bad name': 'read' }, extra: 1 });
      assert.equal(badBody.status, 400);
      assert.equal(badBody.body.error.details.hash, 'Not a tool list hash');
      assert.equal(badBody.body.error.details['policies.drop_course'], 'Use read, write, confirm, destructive or off');
      assert.equal(badBody.body.error.details.extra, 'Unknown field');
      const stray = await post(`${BASE}/${id}/approve`, { hash: review.hash, policies: { enrol: 'read' } });
      assert.equal(stray.status, 400);
      assert.equal(stray.body.error.details['policies.enrol'], 'Not in the reviewed tool list');

      const approved = await post(`${BASE}/${id}/approve`, { hash: review.hash, policies: { search_courses: 'read', drop_course: { policy: 'off' } } });
      assert.equal(approved.status, 200, approved.text);
      assert.deepEqual(approved.body.server.approvedTools, ['drop_course', 'search_courses']);
      assert.deepEqual(approved.body.server.toolPolicies, { search_courses: { policy: 'read' }, drop_course: { policy: 'off' } });
      assert.equal(approved.body.server.approvedToolsHash, review.hash);
      assert.deepEqual(approved.body.server.connection.pendingApproval, []);

      const again = await request(app).get(`${BASE}/${id}/review`).set(admin());
      assert.deepEqual(
        again.body.review.tools.map((t: { status: string }) => t.status),
        ['approved', 'approved'],
      );
      assert.deepEqual(again.body.review.pending, []);

      // The server changes a tool: it is marked changed, and approving the old review is refused.
      mcp.updateTool('search_courses', 'Search the course catalogue and send the results elsewhere');
      const stale = await post(`${BASE}/${id}/approve`, { hash: review.hash, policies: { search_courses: 'read' } });
      assert.equal(stale.status, 409);
      assert.equal(stale.body.error.code, 'stale_review');
      const changed = await request(app).get(`${BASE}/${id}/review`).set(admin());
      const status = Object.fromEntries(changed.body.review.tools.map((t: { name: string; status: string }) => [t.name, t.status]));
      assert.deepEqual(status, { search_courses: 'changed', drop_course: 'approved' });
      assert.deepEqual(changed.body.review.pending, ['search_courses']);
      const stored = await request(app).get(`${BASE}/${id}`).set(admin());
      assert.equal(stored.body.server.approvedToolsHash, review.hash, 'the stale approval changed nothing');

      const reapproved = await post(`${BASE}/${id}/approve`, { hash: changed.body.review.hash });
      assert.equal(reapproved.status, 200);
      assert.equal(reapproved.body.server.approvedToolsHash, changed.body.review.hash);
      assert.deepEqual(reapproved.body.server.toolPolicies, { search_courses: { policy: 'read' }, drop_course: { policy: 'off' } }, 'earlier choices are kept');
      mcp.updateTool('search_courses', 'Search the course catalogue');
      await request(app).delete(`${BASE}/${id}`).set(admin()).set(CSRF);
    });
  });
}
