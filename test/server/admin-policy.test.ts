// Admin policies: the agent loop's settings and the hosts replies may link to (S8), through the real app.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AGENT_DEFAULTS } from '../../lib/agent/agent-settings.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

for (const dialect of DIALECTS) {
  describe(`admin policy routes on ${dialect}`, () => {
    let s: TalkScenario;
    before(async () => {
      s = await startTalkScenario({ dialect });
    });
    after(async () => s.close());

    const as = (uid: string, method: string, path: string, body?: unknown) =>
      s.h.fetch(path, { method, headers: s.h.browserHeaders(uid), ...(body === undefined ? {} : { body }) });

    it('lets only admins read and change them, with the CSRF header', async () => {
      for (const path of ['/api/v1/admin/egress', '/api/v1/admin/agent', '/api/v1/admin/reply-links']) {
        assert.equal((await as('bob', 'GET', path)).status, 403, path);
        assert.equal((await as('bob', 'PUT', path, {})).status, 403, path);
        const noCsrf = await s.h.fetch(path, { method: 'PUT', headers: { ...s.h.browserHeaders('admin'), requesttoken: '' }, body: {} });
        assert.equal(noCsrf.status, 403, path);
        assert.equal((await s.h.fetch(path, { headers: s.h.headers('') })).status, 401, path);
      }
    });

    it('validates the agent settings field by field and keeps the old ones on error', async () => {
      const initial = await as('admin', 'GET', '/api/v1/admin/agent');
      assert.deepEqual(initial.json, { settings: AGENT_DEFAULTS, defaults: AGENT_DEFAULTS });
      const bad = await as('admin', 'PUT', '/api/v1/admin/agent', { maxIterations: 99, forcedSearchPhrases: { English: ['x'] } });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.details.maxIterations, 'At most 50');
      assert.match(bad.json.error.details['forcedSearchPhrases.English'] ?? bad.json.error.details.forcedSearchPhrases, /language code/);
      assert.deepEqual((await as('admin', 'GET', '/api/v1/admin/agent')).json.settings, AGENT_DEFAULTS);
      const saved = await as('admin', 'PUT', '/api/v1/admin/agent', { maxIterations: 12, forcedSearchPhrases: { pt: ['Pesquise na web'] } });
      assert.equal(saved.status, 200, saved.text);
      assert.deepEqual(saved.json.settings, { maxIterations: 12, forcedSearchPhrases: { pt: ['pesquise na web'] } });
    });

    it('keeps links in replies only to Nextcloud and allow-listed hosts (S8)', async () => {
      const bad = await as('admin', 'PUT', '/api/v1/admin/reply-links', { hosts: ['https://docs.example.org/x', 'ok.example'] });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error.details.hosts, /host name only/);
      const saved = await as('admin', 'PUT', '/api/v1/admin/reply-links', { hosts: ['Docs.Example.org'] });
      assert.deepEqual(saved.json, { hosts: ['docs.example.org'] });
      assert.deepEqual((await as('admin', 'GET', '/api/v1/admin/reply-links')).json, { hosts: ['docs.example.org'] });

      const bot = await s.createBot({ mention: 'linker' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      s.llm.enqueue({ text: ['Read https://wiki.docs.example.org/page and https://evil.example/leak now.'] });
      await s.say(room, 'alice', '@linker where do I read more?');
      await s.idle();
      const reply = s.bot(room).at(-1)?.message ?? '';
      assert.match(reply, /https:\/\/wiki\.docs\.example\.org\/page/, 'an allow-listed host (and its subdomains) keeps its link');
      assert.doesNotMatch(reply, /https?:\/\/evil\.example/, 'another host loses its scheme');
      assert.match(reply, /evil\.example\/leak/);
    });
  });
}
