import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { createApp } from '../../lib/server/app.ts';
import { tracesApiRoutes } from '../../lib/server/routes/traces-api.ts';
import { TraceStore } from '../../lib/traces/trace-store.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const APP_ID = 'educai';
const APP_SECRET = 'traces-api-test-secret-0123456789abcdef';
const CSRF = { requesttoken: 'token-from-the-page' };
const DAY = 86_400_000;

function appApiHeaders(uid: string): Record<string, string> {
  return {
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${APP_SECRET}`).toString('base64'),
    'X-Origin-IP': '198.51.100.7',
  };
}

for (const dialect of DIALECTS) {
  describe(`traces API on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let app: Express;
    let traces: TraceStore;
    const clock = { t: Date.UTC(2025, 4, 10, 9, 0, 0) };
    const ids = { aliceQuiet: '', aliceTools: '', aliceOld: '', bob: '' };
    const logLines: string[] = [];

    const as = (uid: string) => appApiHeaders(uid);

    async function run(uid: string, mention: string, userText: string, withTool: boolean, fail: boolean): Promise<string> {
      const id = await traces.startRun({ uid, botId: 'bot-1', botMention: mention, roomToken: 'room1', messageId: '11', source: 'talk', userText });
      assert.ok(id);
      await traces.recordEvent(id, { type: 'user_message', text: userText });
      if (withTool) {
        await traces.recordEvent(id, { type: 'tool_call', toolName: 'search_courses', args: { query: 'algebra' } });
        await traces.recordEvent(id, { type: 'tool_result', toolName: 'search_courses', result: 'Algebra I, Algebra II' });
      }
      if (fail) await traces.recordEvent(id, { type: 'error', stage: 'llm', message: 'model timed out' });
      await traces.recordEvent(id, { type: 'assistant_response', text: 'Here you go' });
      await traces.finishRun(id, fail ? 'error' : 'success');
      clock.t += 60_000;
      return id;
    }

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET });
      const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void logLines.push(line) } });
      const nextcloud = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
      traces = new TraceStore(tdb.db, { now: () => clock.t });
      clock.t -= 3 * DAY;
      ids.aliceOld = await run('alice', 'tutor', 'an old question about fractions', false, false);
      clock.t += 3 * DAY;
      ids.aliceQuiet = await run('alice', 'tutor', 'what is a prime number', false, false);
      ids.aliceTools = await run('users/alice', '@Librarian', 'find algebra courses', true, true);
      ids.bob = await run('bob', 'tutor', 'bob private question about his grades', true, false);
      app = createApp({ appId: APP_ID, appSecret: APP_SECRET, logger, routers: [tracesApiRoutes({ traces, adminCheck: new AdminCheck(nextcloud), logger })] });
    });

    after(async () => {
      await nc.close();
      await tdb.drop();
    });

    it("lists only the caller's own runs, with validated filters", async () => {
      const all = await request(app).get('/api/v1/traces').set(as('alice'));
      assert.equal(all.status, 200, all.text);
      assert.equal(all.headers['cache-control'], 'no-store');
      assert.equal(all.headers['x-content-type-options'], 'nosniff');
      assert.equal(all.body.total, 3);
      assert.deepEqual(
        all.body.traces.map((t: { id: string }) => t.id),
        [ids.aliceTools, ids.aliceQuiet, ids.aliceOld],
      );
      assert.equal(all.body.limit, 25);
      assert.equal(all.body.offset, 0);
      assert.ok(!all.text.includes('grades'), 'nothing of bob');

      const filter = async (query: Record<string, string>) => {
        const res = await request(app).get('/api/v1/traces').query(query).set(as('alice'));
        assert.equal(res.status, 200, res.text);
        return res.body.traces.map((t: { id: string }) => t.id) as string[];
      };
      assert.deepEqual(await filter({ status: 'error' }), [ids.aliceTools]);
      assert.deepEqual(await filter({ onlyErrors: 'true' }), [ids.aliceTools]);
      assert.deepEqual(await filter({ onlyWithTools: '1' }), [ids.aliceTools]);
      assert.deepEqual(await filter({ q: 'PRIME' }), [ids.aliceQuiet]);
      assert.deepEqual(await filter({ botMentionName: 'librarian' }), [ids.aliceTools]);
      assert.deepEqual(await filter({ botMention: '@tutor' }), [ids.aliceQuiet, ids.aliceOld]);
      assert.deepEqual(await filter({ from: new Date(clock.t - DAY).toISOString().slice(0, 10) }), [ids.aliceTools, ids.aliceQuiet]);
      assert.deepEqual(await filter({ to: String(clock.t - 2 * DAY) }), [ids.aliceOld]);
      const paged = await request(app).get('/api/v1/traces').query({ limit: '1', offset: '1' }).set(as('alice'));
      assert.deepEqual(
        paged.body.traces.map((t: { id: string }) => t.id),
        [ids.aliceQuiet],
      );
      assert.equal(paged.body.total, 3);
      assert.equal(paged.body.limit, 1);

      const bad = await request(app)
        .get('/api/v1/traces')
        .query({ limit: '0', offset: '-1', status: 'done', from: 'yesterday', onlyErrors: 'maybe', uid: 'bob' })
        .set(as('alice'));
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'invalid_query');
      assert.deepEqual(bad.body.error.details, {
        limit: 'At least 1',
        offset: 'Must be a whole number',
        status: 'Use running, success, partial or error',
        from: 'Use milliseconds since 1970 or an ISO date',
        onlyErrors: 'Use true or false',
        uid: 'Unknown parameter',
      });
      const twice = await request(app).get('/api/v1/traces?limit=1&limit=2').set(as('alice'));
      assert.deepEqual(twice.body.error.details, { limit: 'Give this parameter once' });
      const reversed = await request(app).get('/api/v1/traces').query({ from: '2025-05-10', to: '2025-05-01', limit: '101' }).set(as('alice'));
      assert.deepEqual(reversed.body.error.details, { to: 'Must not be before from', limit: 'At most 100' });
      assert.equal((await request(app).get('/api/v1/traces').set(as(''))).status, 401);
    });

    it('shows a run with its events to its owner only', async () => {
      const own = await request(app).get(`/api/v1/traces/${ids.aliceTools}`).set(as('alice'));
      assert.equal(own.status, 200);
      assert.equal(own.body.trace.id, ids.aliceTools);
      assert.equal(own.body.trace.preview, 'find algebra courses');
      assert.deepEqual(
        own.body.events.map((e: { type: string }) => e.type),
        ['user_message', 'tool_call', 'tool_result', 'error', 'assistant_response'],
      );
      assert.ok(!own.text.includes('Algebra I, Algebra II'), 'tool output is kept as size and hash only');

      const foreign = await request(app).get(`/api/v1/traces/${ids.bob}`).set(as('alice'));
      assert.equal(foreign.status, 404);
      assert.ok(!foreign.text.includes('grades'));
      const missing = await request(app).get('/api/v1/traces/00000000-0000-0000-0000-000000000000').set(as('alice'));
      assert.deepEqual(missing.body, foreign.body, "someone else's run looks like a missing one");
      assert.equal((await request(app).get('/api/v1/traces/not%20an%20id').set(as('alice'))).status, 404);
    });

    it('is for admins: metadata of every run, audited content, the audit log', async () => {
      for (const path of ['/api/v1/admin/traces', `/api/v1/admin/traces/${ids.bob}/content`, '/api/v1/admin/traces/audit']) {
        const res = await request(app).get(path).set(as('alice'));
        assert.equal(res.status, 403, path);
        assert.equal(res.body.error.code, 'admin_required');
      }
      const emptyAudit = await request(app).get('/api/v1/admin/traces/audit').set(as('admin'));
      assert.deepEqual(emptyAudit.body.entries, [], 'refused reads left no audit entry');

      const list = await request(app).get('/api/v1/admin/traces').set(as('admin'));
      assert.equal(list.status, 200);
      assert.equal(list.body.total, 4);
      for (const t of list.body.traces) {
        assert.equal('preview' in t, false);
        assert.equal('errorSummary' in t, false);
      }
      assert.ok(!list.text.includes('grades') && !list.text.includes('prime'), 'metadata only: no message text');
      const bobs = await request(app).get('/api/v1/admin/traces').query({ uid: 'bob', onlyWithTools: 'true' }).set(as('admin'));
      assert.deepEqual(
        bobs.body.traces.map((t: { id: string }) => t.id),
        [ids.bob],
      );
      const badAdmin = await request(app)
        .get('/api/v1/admin/traces')
        .query({ uid: 'x'.repeat(65), sort: 'asc' })
        .set(as('admin'));
      assert.deepEqual(badAdmin.body.error.details, { uid: 'At most 64 characters', sort: 'Unknown parameter' });

      const content = await request(app).get(`/api/v1/admin/traces/${ids.bob}/content`).set(as('admin'));
      assert.equal(content.status, 200);
      assert.equal(content.body.trace.preview, 'bob private question about his grades');
      assert.equal(content.body.events.length, 4);
      const missing = await request(app).get('/api/v1/admin/traces/00000000-0000-0000-0000-000000000000/content').set(as('admin'));
      assert.equal(missing.status, 404);

      const audit = await request(app).get('/api/v1/admin/traces/audit').set(as('admin'));
      assert.equal(audit.status, 200);
      assert.equal(audit.body.entries.length, 1);
      assert.deepEqual({ ...audit.body.entries[0], id: 0, at: 0 }, { id: 0, adminUid: 'admin', runId: ids.bob, ownerUid: 'bob', at: 0 });
      assert.equal(audit.body.entries[0].at, clock.t);
      const forAlice = await request(app).get('/api/v1/admin/traces/audit').query({ ownerUid: 'alice' }).set(as('admin'));
      assert.deepEqual(forAlice.body.entries, []);
      const badAudit = await request(app).get('/api/v1/admin/traces/audit').query({ limit: 'all' }).set(as('admin'));
      assert.deepEqual(badAudit.body.error.details, { limit: 'Must be a whole number' });
      assert.ok(logLines.join('').includes('admin read trace content'));
    });

    it("deletes only the caller's own runs, one or all, with the CSRF header", async () => {
      const foreign = await request(app).delete(`/api/v1/traces/${ids.bob}`).set(as('alice')).set(CSRF);
      assert.equal(foreign.status, 404);
      assert.equal((await request(app).get(`/api/v1/traces/${ids.bob}`).set(as('bob'))).status, 200, "bob's run is still there");

      const noCsrf = await request(app).delete(`/api/v1/traces/${ids.aliceQuiet}`).set(as('alice'));
      assert.equal(noCsrf.status, 403);
      assert.equal(noCsrf.body.error.code, 'csrf');
      const one = await request(app).delete(`/api/v1/traces/${ids.aliceQuiet}`).set(as('alice')).set(CSRF);
      assert.deepEqual(one.body, { deleted: true });
      assert.equal((await request(app).get(`/api/v1/traces/${ids.aliceQuiet}`).set(as('alice'))).status, 404);
      assert.equal((await request(app).delete(`/api/v1/traces/${ids.aliceQuiet}`).set(as('alice')).set(CSRF)).status, 404);

      assert.equal((await request(app).delete('/api/v1/traces').set(as('alice'))).status, 403);
      const cleared = await request(app).delete('/api/v1/traces').set(as('alice')).set(CSRF);
      assert.equal(cleared.status, 200);
      assert.deepEqual(cleared.body, { deleted: { runs: 2, events: 7 } });
      assert.equal((await request(app).get('/api/v1/traces').set(as('alice'))).body.total, 0);
      const bob = await request(app).get('/api/v1/traces').set(as('bob'));
      assert.deepEqual(
        bob.body.traces.map((t: { id: string }) => t.id),
        [ids.bob],
        'clearing mine leaves others alone',
      );
    });
  });
}
