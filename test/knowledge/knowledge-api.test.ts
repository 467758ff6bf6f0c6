// The knowledge JSON API on the real app (composition root, HTTP, database) against the fake Nextcloud:
// who may manage a bot's sources, validation per field, status and per-file errors, admin settings with
// write-only keys, reindex-all with its warning, and endpoint tests that report a status, never a body (S18).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { FakeKnowledgeEndpoints } from '../fakes/openai/fake-knowledge-endpoints.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const EMBED_KEY = 'sk-embed-key-never-shown-0123456789';
const VISION_KEY = 'sk-vision-key-never-shown-9876543210';
const PROVIDER_BODY = 'provider-internal-detail-7f3a91';

/** An endpoint that fails every call with a body the admin must never see. */
async function failingProvider(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: PROVIDER_BODY } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

for (const dialect of DIALECTS) {
  describe(`knowledge API on ${dialect}`, () => {
    let h: Harness;
    let fake: FakeKnowledgeEndpoints;
    let failing: { url: string; close(): Promise<void> };
    let bot: Bot;
    let otherBot: Bot;

    const api = (uid: string, method: string, path: string, body?: unknown) =>
      h.fetch(path, { method, headers: h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
    const sources = (b: Bot) => `/api/v1/bots/${b.id}/knowledge/sources`;

    before(async () => {
      fake = await FakeKnowledgeEndpoints.start();
      failing = await failingProvider();
      h = await startHarness({ dialect, build: { knowledge: { worker: { pollMs: 50 } } } });
      bot = await h.application.bots.create(
        { displayName: 'Tutor', mention: 'tutor', systemPrompt: 'You help.', visibility: 'global', knowledgeEnabled: true },
        'alice',
        { approvalStatus: 'approved' },
      );
      otherBot = await h.application.bots.create({ displayName: 'Other', mention: 'other', systemPrompt: 'You help.', visibility: 'global' }, 'bob', {
        approvalStatus: 'approved',
      });
      h.nc.dav.files.putFile('alice', 'Course/intro.md', '# Intro\n\nPhotosynthesis turns light into chemical energy in the chloroplasts.');
      h.nc.dav.files.putFile('alice', 'Course/empty.txt', '');
      h.nc.dav.files.putFile('bob', 'Bobs/plan.md', 'Bob’s plan.');
    });
    after(async () => {
      await h.close();
      await fake.close();
      await failing.close();
    });

    it('admin settings: keys are write-only and masked, bad fields are named, non-admins are refused', async () => {
      const saved = await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', {
        embeddingEndpoint: fake.url,
        embeddingModel: 'fake-embed',
        embeddingKey: EMBED_KEY,
        visionEndpoint: fake.url,
        visionModel: 'fake-vision',
        visionKey: VISION_KEY,
        chunkSizeChars: 400,
        chunkOverlapChars: 40,
      });
      assert.equal(saved.status, 200, saved.text);
      assert.equal(saved.json.settings.embeddingKey.set, true);
      assert.equal(saved.json.settings.visionKey.set, true);
      assert.equal(saved.json.settings.speechKey.set, false);
      assert.equal(saved.json.embeddingChanged, true);
      assert.match(saved.json.warning, /reindex/i);
      assert.equal(saved.headers.get('cache-control'), 'no-store');
      const read = await api('admin', 'GET', '/api/v1/admin/knowledge/settings');
      assert.equal(read.status, 200);
      assert.equal(read.json.settings.embeddingModel, 'fake-embed');
      assert.equal(read.json.settings.chunkSizeChars, 400);
      for (const r of [saved, read]) {
        assert.ok(!r.text.includes(EMBED_KEY) && !r.text.includes(VISION_KEY), 'keys never come back');
      }
      assert.ok(!h.logLines.join('').includes(EMBED_KEY), 'keys are never logged');

      // Same model again: no warning. "" keeps the stored key.
      const same = await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', { embeddingModel: 'fake-embed', embeddingKey: '' });
      assert.equal(same.json.embeddingChanged, false);
      assert.equal(same.json.warning, null);
      assert.equal(same.json.settings.embeddingKey.set, true);

      const bad = await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', {
        chunkSizeChars: 300,
        chunkOverlapChars: 300,
        visionEndpoint: 'ftp://x',
        surprise: 1,
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.code, 'validation');
      assert.deepEqual(Object.keys(bad.json.error.details.fields).sort(), ['chunkOverlapChars', 'surprise', 'visionEndpoint']);
      const unchanged = await api('admin', 'GET', '/api/v1/admin/knowledge/settings');
      assert.equal(unchanged.json.settings.chunkSizeChars, 400, 'nothing is written when a field is bad');

      assert.equal((await api('alice', 'GET', '/api/v1/admin/knowledge/settings')).status, 403);
      assert.equal((await api('alice', 'PUT', '/api/v1/admin/knowledge/settings', { embeddingModel: 'x' })).status, 403);
      assert.equal((await api('alice', 'POST', '/api/v1/admin/knowledge/reindex-all')).status, 403);
      assert.equal((await api('alice', 'POST', '/api/v1/admin/knowledge/test/vision')).status, 403);
      // The CSRF header is required for changes.
      const noCsrf = await h.fetch('/api/v1/admin/knowledge/settings', {
        method: 'PUT',
        headers: h.browserHeaders('admin', { requesttoken: '' }),
        body: { ragEnabled: true },
      });
      assert.equal(noCsrf.status, 403);
    });

    it('owner sources: add by path (resolved as the owner), duplicates, status, per-file errors, remove', async () => {
      const added = await api('alice', 'POST', sources(bot), { path: '/Course' });
      assert.equal(added.status, 201, added.text);
      assert.equal(added.json.created, true);
      assert.equal(added.json.source.kind, 'folder');
      assert.equal(added.json.source.label, '/Course');
      const id = added.json.source.id as number;

      const again = await api('alice', 'POST', sources(bot), { path: 'Course/' });
      assert.equal(again.status, 200);
      assert.equal(again.json.created, false);
      assert.equal(again.json.source.id, id);

      await waitFor(async () => (await api('alice', 'GET', `${sources(bot)}/${id}`)).json.source.status === 'ready', 'the folder source to be indexed', 30_000);
      const detail = await api('alice', 'GET', `${sources(bot)}/${id}`);
      assert.equal(detail.status, 200);
      assert.deepEqual(detail.json.source.progress, { current: 2, total: 2, percent: 100 });
      assert.equal(detail.json.source.errors, 1);
      assert.match(detail.json.source.message, /1 of 2 file\(s\) could not be indexed/);
      const byPath = Object.fromEntries(detail.json.files.map((f: { path: string }) => [f.path, f]));
      assert.equal(byPath['Course/intro.md'].status, 'ready');
      assert.ok(byPath['Course/intro.md'].chunks > 0);
      assert.equal(byPath['Course/empty.txt'].status, 'error');
      assert.match(byPath['Course/empty.txt'].error, /no text/);

      const list = await api('alice', 'GET', sources(bot));
      assert.equal(list.status, 200);
      assert.equal(list.json.embeddingModel, 'fake-embed');
      assert.equal(list.json.warning, null);
      assert.equal(list.json.sources.length, 1);
      assert.equal(list.json.sources[0].needsReindex, false);

      const reindex = await api('alice', 'POST', `${sources(bot)}/${id}/reindex`);
      assert.equal(reindex.status, 200);
      // Queued; the job worker may already have taken it by the time the answer is written.
      assert.ok(['pending', 'indexing'].includes(reindex.json.source.status), reindex.text);
      await waitFor(async () => (await api('alice', 'GET', `${sources(bot)}/${id}`)).json.source.status === 'ready', 'the reindex', 30_000);

      // The bots API counts the sources.
      const catalog = await api('alice', 'GET', '/api/v1/catalog');
      const entry = (catalog.json.bots as Array<{ id: string; knowledgeSourceCount: number }>).find((b) => b.id === bot.id);
      assert.equal(entry?.knowledgeSourceCount, 1, catalog.text);

      const removed = await api('alice', 'DELETE', `${sources(bot)}/${id}`);
      assert.deepEqual(removed.json, { success: true });
      assert.equal((await api('alice', 'GET', `${sources(bot)}/${id}`)).status, 404);
      assert.equal(await h.application.knowledge.index.countItems({ kind: 'bot', botId: bot.id }, `src:${id}`), 0, 'its chunks are gone');
    });

    it('access: non-owners get 403, unknown bots and other bots’ sources 404, admins may manage but not pick files', async () => {
      assert.equal((await api('bob', 'GET', sources(bot))).status, 403);
      assert.equal((await api('bob', 'POST', sources(bot), { url: 'https://example.org/' })).status, 403);
      assert.equal((await api('alice', 'GET', `/api/v1/bots/${randomUUID()}/knowledge/sources`)).status, 404);
      assert.equal((await api('alice', 'GET', '/api/v1/bots/not-a-uuid/knowledge/sources')).status, 404);
      assert.equal((await h.fetch(sources(bot), { headers: h.browserHeaders('') })).status, 401);

      const bobs = await api('bob', 'POST', sources(otherBot), { path: 'Bobs' });
      assert.equal(bobs.status, 201, bobs.text);
      assert.equal((await api('alice', 'GET', `${sources(bot)}/${bobs.json.source.id}`)).status, 404, 'another bot’s source is not found through this bot');
      assert.equal((await api('alice', 'DELETE', `${sources(bot)}/${bobs.json.source.id}`)).status, 404);

      // Files are read as the owner: an admin cannot add them to someone else's bot, but may add URLs and manage.
      const adminPath = await api('admin', 'POST', sources(bot), { path: 'Course' });
      assert.equal(adminPath.status, 403);
      assert.equal(adminPath.json.error.code, 'owner_only');
      const adminUrl = await api('admin', 'POST', sources(bot), { url: 'https://example.org/handbook' });
      assert.equal(adminUrl.status, 201, adminUrl.text);
      assert.equal(adminUrl.json.source.kind, 'url');
      assert.equal((await api('admin', 'GET', sources(bot))).status, 200);
      assert.equal((await api('admin', 'DELETE', `${sources(bot)}/${adminUrl.json.source.id}`)).status, 200);

      // A path that is not in the owner's files (bob's folder, as alice) is not found.
      const foreign = await api('alice', 'POST', sources(bot), { path: 'Bobs' });
      assert.equal(foreign.status, 404);
    });

    it('validation: one message per field, nothing stored', async () => {
      const cases: Array<[unknown, string]> = [
        [{}, 'path'],
        [{ path: 'Course', url: 'https://example.org/' }, 'url'],
        [{ path: '../etc' }, 'path'],
        [{ path: 'Course/../..' }, 'path'],
        [{ path: 42 }, 'path'],
        [{ url: 'ftp://example.org/file' }, 'url'],
        [{ url: 'https://user:pw@example.org/' }, 'url'],
        [{ url: 'not a url' }, 'url'],
        [{ path: 'Course', extra: true }, 'extra'],
      ];
      const before = (await api('alice', 'GET', sources(bot))).json.sources.length;
      for (const [body, field] of cases) {
        const r = await api('alice', 'POST', sources(bot), body);
        assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
        assert.ok(r.json.error.details.fields[field], `${JSON.stringify(body)} names ${field}: ${r.text}`);
      }
      const broken = await h.fetch(sources(bot), {
        method: 'POST',
        headers: { ...h.browserHeaders('alice'), 'Content-Type': 'application/json' },
        body: '{"path":',
      });
      assert.equal(broken.status, 400);
      assert.equal((await api('alice', 'GET', sources(bot))).json.sources.length, before);
    });

    it('admin tests report a status, never a body (S18); reindex-all queues every source', async () => {
      const embeddings = await api('admin', 'POST', '/api/v1/admin/knowledge/test/embeddings');
      assert.equal(embeddings.status, 200);
      assert.equal(embeddings.json.ok, true, embeddings.text);
      const vision = await api('admin', 'POST', '/api/v1/admin/knowledge/test/vision');
      assert.equal(vision.json.ok, true, vision.text);
      const speech = await api('admin', 'POST', '/api/v1/admin/knowledge/test/speech');
      assert.deepEqual([speech.json.ok, speech.json.status], [false, null], 'no speech model is configured');
      const docling = await api('admin', 'POST', '/api/v1/admin/knowledge/test/docling');
      assert.equal(docling.json.ok, false);
      assert.equal((await api('admin', 'POST', '/api/v1/admin/knowledge/test/ocr')).status, 404);

      await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', {
        visionEndpoint: failing.url,
        speechEndpoint: failing.url,
        speechModel: 'whisper',
        doclingEnabled: true,
        doclingEndpoint: failing.url.replace(/\/v1$/, ''),
      });
      for (const service of ['vision', 'speech', 'docling']) {
        const r = await api('admin', 'POST', `/api/v1/admin/knowledge/test/${service}`);
        assert.equal(r.status, 200);
        assert.equal(r.json.ok, false);
        assert.equal(r.json.status, 500, `${service}: ${r.text}`);
        assert.ok(!r.text.includes(PROVIDER_BODY), `${service}: the provider's body is not passed on`);
      }
      await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', { embeddingEndpoint: failing.url });
      const failed = await api('admin', 'POST', '/api/v1/admin/knowledge/test/embeddings');
      assert.deepEqual([failed.json.ok, failed.json.status], [false, 500]);
      assert.ok(!failed.text.includes(PROVIDER_BODY));
      await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', { embeddingEndpoint: fake.url, doclingEnabled: false });

      const count = (await h.application.knowledge.sources.list(bot.id)).length + (await h.application.knowledge.sources.list(otherBot.id)).length;
      const all = await api('admin', 'POST', '/api/v1/admin/knowledge/reindex-all');
      assert.equal(all.status, 200);
      assert.equal(all.json.queued, count);
      assert.match(all.json.message, /queued for reindexing/);
    });

    it('a changed embedding model marks sources for reindexing until reindex-all ran', async () => {
      const added = await api('bob', 'POST', sources(otherBot), { path: 'Bobs' });
      const id = added.json.source.id as number;
      await waitFor(async () => (await api('bob', 'GET', `${sources(otherBot)}/${id}`)).json.source.status === 'ready', 'bob’s source', 30_000);
      const changed = await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', { embeddingModel: 'fake-embed-2' });
      assert.equal(changed.json.embeddingChanged, true);
      const stale = await api('bob', 'GET', sources(otherBot));
      assert.equal(stale.json.sources[0].needsReindex, true);
      assert.match(stale.json.warning, /another embedding model/);
      await api('admin', 'POST', '/api/v1/admin/knowledge/reindex-all');
      await waitFor(
        async () => (await api('bob', 'GET', `${sources(otherBot)}/${id}`)).json.source.embeddingModel === 'fake-embed-2',
        'the reindex with the new model',
        30_000,
      );
      const fresh = await api('bob', 'GET', sources(otherBot));
      assert.equal(fresh.json.warning, null);
    });
  });
}
