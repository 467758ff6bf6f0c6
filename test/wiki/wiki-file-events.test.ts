// index.md after manual edits on Nextcloud 30+: webhook_listeners file events registered on enable and
// delivered (as captured in test/fixtures/nextcloud33/webhook-listeners.json) to /wiki_file_events; on
// Nextcloud 29 (no webhook_listeners) nothing is registered and the periodic scan does the work. A delivery
// only wakes the scan (S16); forged ones get 401, proxied ones 403 (S3).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { FilesDav } from '../../lib/nextcloud/files-dav.ts';
import { WIKI_FILE_EVENTS_PATH } from '../../lib/wiki/wiki-file-events.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const HOUR = 3_600_000;

async function wikiBot(h: Harness, mention: string): Promise<string> {
  const created = await h.fetch('/api/v1/bots', {
    method: 'POST',
    headers: h.browserHeaders('alice'),
    body: { displayName: mention, mention, systemPrompt: 'Keep notes.', visibility: 'personal', tools: [{ name: 'wiki_write_page' }] },
  });
  assert.equal(created.status, 201, created.text);
  const root = `Talk AI/Personal Wikis/${mention}`;
  assert.ok(h.nc.dav.files.read('alice', `${root}/index.md`), 'the wiki was initialised');
  return root;
}

/** A person's edit in Files or Text: a WebDAV PUT as alice. */
async function manualEdit(h: Harness, path: string, content: string): Promise<void> {
  const dav = new FilesDav(h.application.nextcloud.as(issueFromConfirmedTalkAuthor('alice')));
  await dav.put({ segments: path.split('/'), relative: path }, content, {});
}

const listed = (h: Harness, root: string, page: string) => (h.nc.dav.files.read('alice', `${root}/index.md`) ?? '').includes(`](${page})`);

for (const dialect of DIALECTS) {
  describe(`wiki file events where webhook_listeners is offered (${dialect})`, () => {
    let h: Harness;
    let root: string;
    before(async () => {
      // The periodic scan is an hour away: whatever updates index.md here is the file event.
      h = await startHarness({ dialect, build: { wiki: { debounceMs: 10, scanIntervalMs: HOUR } } });
      h.nc.webhookListeners.available = true;
      root = await wikiBot(h, 'notes');
    });
    after(async () => h.close());

    it('registers the file listeners on enable, once however often it is enabled, and removes them on disable', async () => {
      for (let i = 0; i < 2; i++) {
        const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
        assert.deepEqual(enabled.json, { error: '' });
      }
      const listeners = [...h.nc.webhookListeners.listeners.values()];
      assert.deepEqual(listeners.map((l) => l.event.split('\\').at(-1)).sort(), ['NodeDeletedEvent', 'NodeRenamedEvent', 'NodeWrittenEvent']);
      assert.ok(
        listeners.every((l) => l.appId === 'educai' && l.uri === WIKI_FILE_EVENTS_PATH && l.userId === null),
        JSON.stringify(listeners),
      );
      const disabled = await h.fetch('/enabled?enabled=0', { method: 'PUT', headers: h.headers('') });
      assert.deepEqual(disabled.json, { error: '' });
      assert.equal(h.nc.webhookListeners.listeners.size, 0);
      // A failing registration does not fail the enable (AppAPI would disable the app): the scan stays.
      h.nc.failNext(
        { method: 'POST', path: /webhook_listeners\/api\/v1\/webhooks$/ },
        { status: 500, body: '{"ocs":{"meta":{"status":"failure","statuscode":500,"message":"An internal error occurred"},"data":[]}}' },
      );
      const despite = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
      assert.deepEqual(despite.json, { error: '' });
      assert.ok(h.logLines.some((l) => l.includes('wiki file events could not be registered')));
      await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
      assert.equal(h.nc.webhookListeners.listeners.size, 3);
      assert.deepEqual(h.nc.headerViolations, []);
    });

    it('a delivered file event updates index.md for a manual edit at once; other file types are not even sent', async () => {
      h.nc.webhookListeners.jobs.length = 0;
      await manualEdit(h, `${root}/by-hand.md`, '# Written by hand\n');
      await manualEdit(h, `${root}/cat.png`, 'not a page');
      // A new file fires created and written; only written is listened to, and only for pages.
      assert.deepEqual(
        h.nc.webhookListeners.jobs.map((j) => JSON.parse(j.body).event.class.split('\\').at(-1)),
        ['NodeWrittenEvent'],
      );
      assert.ok(!listed(h, root, 'by-hand.md'));
      const before = h.application.wiki.scheduler.syncCount;
      assert.deepEqual(await h.nc.webhookListeners.runJobs(h.url), [200]);
      await waitFor(() => listed(h, root, 'by-hand.md'), 'index.md lists the page');
      assert.ok(h.application.wiki.scheduler.syncCount > before);
      // A rename and a delete reach it the same way.
      const dav = new FilesDav(h.application.nextcloud.as(issueFromConfirmedTalkAuthor('alice')));
      await dav.transfer(
        'MOVE',
        { segments: `${root}/by-hand.md`.split('/'), relative: `${root}/by-hand.md` },
        { segments: `${root}/renamed.md`.split('/'), relative: `${root}/renamed.md` },
      );
      await h.nc.webhookListeners.runJobs(h.url);
      await waitFor(() => listed(h, root, 'renamed.md') && !listed(h, root, 'by-hand.md'), 'index.md follows the rename');
    });

    it('a forged or unauthenticated event is refused with 401, a proxied one with 403, a malformed one with 400, and none changes anything', async () => {
      const delivery = {
        event: { node: { id: 1, path: `/alice/files/${root}/x.md` }, class: 'OCP\\Files\\Events\\Node\\NodeWrittenEvent' },
        user: { uid: 'alice', displayName: 'Alice' },
        time: 1,
        authentication: [],
      };
      // The earlier test's syncs settle first, so that any sync counted below is one these requests caused.
      await h.application.wiki.scheduler.flush();
      await h.application.wiki.scanner.scanOnce();
      await h.application.wiki.scheduler.flush();
      await manualEdit(h, `${root}/unannounced.md`, '# Nobody told us\n');
      h.nc.webhookListeners.jobs.length = 0;
      const syncs = h.application.wiki.scheduler.syncCount;
      const wrong = Buffer.from('alice:not-the-secret').toString('base64');
      const refused = [
        [await h.fetch(WIKI_FILE_EVENTS_PATH, { method: 'POST', body: delivery }), 401],
        [await h.fetch(WIKI_FILE_EVENTS_PATH, { method: 'POST', headers: h.headers('alice', { 'AUTHORIZATION-APP-API': wrong }), body: delivery }), 401],
        [await h.fetch(WIKI_FILE_EVENTS_PATH, { method: 'POST', headers: h.browserHeaders('alice'), body: delivery }), 403],
        [await h.fetch(WIKI_FILE_EVENTS_PATH, { method: 'POST', headers: h.headers('alice'), body: { hello: 'world' } }), 400],
        [await h.fetch(WIKI_FILE_EVENTS_PATH, { method: 'POST', headers: h.headers('alice'), body: 'x'.repeat(20_000) }), 413],
      ] as const;
      for (const [res, status] of refused) {
        assert.equal(res.status, status, res.text);
        assert.equal(typeof res.json?.error?.code, 'string');
      }
      await h.application.wiki.scheduler.flush();
      assert.equal(h.application.wiki.scheduler.pendingCount, 0);
      assert.equal(h.application.wiki.scheduler.syncCount, syncs, 'no sync ran');
      assert.ok(!listed(h, root, 'unannounced.md'), 'index.md is unchanged');
      // The same event with AppAPI's real header is taken (its uid and path are not used: it only wakes the scan).
      const ok = await h.fetch(WIKI_FILE_EVENTS_PATH, { method: 'POST', headers: h.headers('alice'), body: delivery });
      assert.equal(ok.status, 200, ok.text);
      await waitFor(() => listed(h, root, 'unannounced.md'), 'the scan it woke found the page');
    });
  });
}

describe('wiki file events where webhook_listeners is not offered (Nextcloud 29)', () => {
  let h: Harness;
  let root: string;
  before(async () => {
    h = await startHarness({ dialect: 'sqlite', build: { wiki: { debounceMs: 10, scanIntervalMs: 50 } } });
    root = await wikiBot(h, 'oldnotes');
  });
  after(async () => h.close());

  it('enables without registering anything, and the periodic scan still puts a manual edit into index.md', async () => {
    const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
    assert.deepEqual(enabled.json, { error: '' });
    assert.equal(h.nc.webhookListeners.listeners.size, 0);
    assert.ok(
      h.nc.calls.some((c) => c.path.endsWith('/webhook_listeners/api/v1/webhooks/byappid/educai') && c.status === 404),
      'asked, and was told 404',
    );
    await manualEdit(h, `${root}/scanned.md`, '# Found by the scan\n');
    assert.equal(h.nc.webhookListeners.jobs.length, 0);
    await waitFor(() => listed(h, root, 'scanned.md'), 'the scan lists the page');
    const disabled = await h.fetch('/enabled?enabled=0', { method: 'PUT', headers: h.headers('') });
    assert.deepEqual(disabled.json, { error: '' });
  });
});
