// S18: model providers and MCP servers are reached through the egress module. A private address (the fakes
// listen on 127.0.0.1) is refused until an admin allow-lists it; the admin sees why, never a body.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { DIALECTS } from '../helpers/databases.ts';
import { LLM_KEY, startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';
import { startTestMcpServer, text, type TestMcpServer } from '../mcp/mcp-test-server.ts';

for (const dialect of DIALECTS) {
  describe(`egress for model providers and MCP servers on ${dialect}`, () => {
    let s: TalkScenario;
    let mcp: TestMcpServer;
    before(async () => {
      s = await startTalkScenario({ dialect, egressAllowList: [] });
      mcp = await startTestMcpServer([{ name: 'echo', description: 'Echo', inputSchema: { q: z.string() }, handler: (a) => text(String(a['q'])) }]);
    });
    after(async () => {
      await s.close();
      await mcp.close();
    });

    const admin = (method: string, path: string, body?: unknown) =>
      s.h.fetch(path, { method, headers: s.h.browserHeaders('admin'), ...(body === undefined ? {} : { body }) });

    it('lists models at a private address only after the admin allow-lists it, reporting "blocked" without a body', async () => {
      assert.deepEqual((await admin('GET', '/api/v1/admin/egress')).json, { allowList: [] });
      s.llm.requests.length = 0;
      const refused = await admin('GET', '/api/v1/admin/models');
      assert.equal(refused.status, 200, refused.text);
      assert.deepEqual(refused.json.endpoints[0], { endpoint: 'primary', configured: true, ok: false, count: 0, error: 'blocked' });
      assert.equal(s.llm.requests.length, 0, 'no connection was made to the private address');
      assert.doesNotMatch(refused.text, /127\.0\.0\.1/, 'the answer does not name the internal address');

      const bad = await admin('PUT', '/api/v1/admin/egress', { allowList: ['10.0.0.0/33', 'ok.example'] });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error.details.allowList, /10\.0\.0\.0\/33/);
      assert.deepEqual((await admin('GET', '/api/v1/admin/egress')).json, { allowList: [] }, 'a bad entry changes nothing');

      const saved = await admin('PUT', '/api/v1/admin/egress', { allowList: [' 127.0.0.1 '] });
      assert.equal(saved.status, 200, saved.text);
      assert.deepEqual(saved.json, { allowList: ['127.0.0.1'] });
      const listed = await admin('GET', '/api/v1/admin/models');
      assert.equal(listed.json.endpoints[0].ok, true, listed.text);
      assert.ok(listed.json.models.some((m: { id: string }) => m.id === 'fake-model'));

      // Another private address stays refused: the entry opens exactly what it names.
      await admin('PUT', '/api/v1/admin/settings', { primaryEndpoint: 'http://10.0.0.5:8000/v1' });
      const other = await admin('GET', '/api/v1/admin/models');
      assert.equal(other.json.endpoints[0].error, 'blocked');
      await admin('PUT', '/api/v1/admin/settings', { primaryEndpoint: s.llm.url, primaryKey: LLM_KEY });
    });

    it('answers in Talk through the egress module once allowed, and never calls a refused provider', async () => {
      await admin('PUT', '/api/v1/admin/egress', { allowList: [] });
      const bot = await s.createBot({ mention: 'egressbot' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      const before = s.bot(room).length;
      s.llm.requests.length = 0;
      await s.say(room, 'alice', '@egressbot hello?');
      await s.idle();
      assert.equal(s.llm.chatRequests().length, 0, 'the private provider was not contacted');
      const apology = s.bot(room).slice(before);
      assert.equal(apology.length, 1);
      assert.doesNotMatch(apology[0]!.message, /127\.0\.0\.1|http|refused/i, 'the user gets a generic text');

      await admin('PUT', '/api/v1/admin/egress', { allowList: ['127.0.0.1'] });
      s.llm.enqueue({ text: ['Hello through egress.'] });
      await s.say(room, 'alice', '@egressbot hello again');
      await s.idle();
      assert.equal(s.bot(room).at(-1)?.message, 'Hello through egress.');
      assert.equal(s.llm.chatRequests().length, 1);
    });

    it('tests an MCP server at a private address only after the admin allow-lists it', async () => {
      await admin('PUT', '/api/v1/admin/egress', { allowList: [] });
      const created = await admin('POST', '/api/v1/admin/mcp-servers', { name: 'Echo', url: mcp.url });
      assert.equal(created.status, 201, created.text);
      const id = created.json.server.id as string;
      const before = mcp.methods.length;
      const refused = await admin('POST', `/api/v1/admin/mcp-servers/${id}/test`);
      assert.equal(refused.status, 200, refused.text);
      assert.deepEqual(refused.json, { ok: false, status: 'blocked' });
      assert.equal(mcp.methods.length, before, 'the MCP server was never contacted');
      const review = await admin('GET', `/api/v1/admin/mcp-servers/${id}/review`);
      assert.equal(review.status, 502);
      assert.equal(review.json.error.details.status, 'blocked');
      assert.match(review.json.error.message, /allow-list/);

      await admin('PUT', '/api/v1/admin/egress', { allowList: ['127.0.0.0/8'] });
      const ok = await admin('POST', `/api/v1/admin/mcp-servers/${id}/test`);
      assert.deepEqual(ok.json, { ok: true, status: 'ok', toolCount: 1 });
      assert.ok(mcp.methods.length > before);
    });
  });
}
