// Wikis on the real Nextcloud 33: index.md follows a manual WebDAV edit within seconds through
// webhook_listeners (registered on enable, delivered by the worker the admin docs ask for), and an
// open Text editor does not overwrite a page the bot wrote (Text 7 resets or refuses the editor's save;
// test/fixtures/nextcloud33/text-7-session-after-dav-write.json).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/harness.ts';
import { RealNextcloud } from './nextcloud.ts';
import { startStack, unique, type Stack } from './stack.ts';

const WORKER_JOB = 'OCA\\WebhookListeners\\BackgroundJobs\\WebhookCall';

describe('wiki sync on the real Nextcloud 33', () => {
  let s: Stack;
  let mention: string;
  let root: string;
  let worker: { stop(): Promise<void> } | null = null;
  before(async () => {
    // What the admin docs ask for "within seconds": a webhook worker beside cron (started first: occ takes a while to boot).
    worker = new RealNextcloud().startOcc('background-job:worker', '--stop_after=600s', WORKER_JOB);
    s = await startStack();
    mention = unique('wiki').replace(/-/g, '_');
    await s.createBot('alice', mention, ['wiki_write_page']);
    root = `Talk AI/Personal Wikis/${mention}`;
    assert.match((await s.nc.readFile('alice', `${root}/index.md`)) ?? '', /## Existing Files/, 'the wiki was initialised');
  });
  after(async () => {
    await worker?.stop();
    await s?.stop();
  });

  it('registered its file listeners with webhook_listeners when AppAPI enabled it', async () => {
    const listeners = JSON.parse(await s.nc.occ('webhook_listeners:list', '--output=json')) as Array<{ appId: string | null; uri: string; event: string }>;
    const ours = listeners.filter((l) => l.appId === 'educai');
    assert.deepEqual(
      ours.map((l) => l.event.split('\\').at(-1)).sort(),
      ['NodeDeletedEvent', 'NodeRenamedEvent', 'NodeWrittenEvent'],
      JSON.stringify(listeners),
    );
    assert.ok(ours.every((l) => l.uri === '/wiki_file_events'));
  });

  it('a manual WebDAV edit of a wiki page shows in index.md within seconds', async () => {
    const put = await s.nc.dav('alice', 'PUT', `${root}/by-hand.md`, '# Written by hand\n');
    assert.equal(put.status, 201, put.text);
    const started = Date.now();
    await waitFor(async () => ((await s.nc.readFile('alice', `${root}/index.md`)) ?? '').includes('](by-hand.md)'), 'index.md lists the page', 30_000);
    const seconds = (Date.now() - started) / 1000;
    // The etag scan runs every 60 s; the event path is delivery (~3 s) + the 5 s debounce.
    assert.ok(seconds < 30, `listed after ${seconds} s`);
    process.stdout.write(`# index.md followed the manual edit after ${seconds.toFixed(1)} s\n`);
  });

  /** Text's editor as alice: a session on the page, optionally with an unsaved change. */
  async function openInText(path: string, unsaved: boolean) {
    const found = await s.nc.dav(
      'alice',
      'PROPFIND',
      path,
      '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/></d:prop></d:propfind>',
      { Depth: '0' },
    );
    const fileId = Number(/<oc:fileid>(\d+)</.exec(found.text)?.[1]);
    assert.ok(fileId > 0, found.text);
    const text = (method: string, action: string, body: object) =>
      s.nc.request('alice', method, `/index.php/apps/text/session/${fileId}/${action}`, {
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json', 'OCS-APIRequest': 'true' },
      });
    const created = await text('PUT', 'create', { fileId });
    assert.equal(created.status, 200, created.text);
    const c = created.data as { session: { id: number; token: string }; document: { baseVersionEtag: string } };
    const session = { documentId: fileId, sessionId: c.session.id, sessionToken: c.session.token, baseVersionEtag: c.document.baseVersionEtag };
    if (unsaved) {
      // A Yjs update message (sync type 2) with a tiny payload: Text stores it as an unsaved step.
      const pushed = await text('POST', 'push', { ...session, version: 0, steps: [Buffer.from([0, 2, 4, 0, 0, 0, 0]).toString('base64')], awareness: '' });
      assert.equal(pushed.status, 200, pushed.text);
    }
    return {
      save: (content: string) => text('POST', 'save', { ...session, version: unsaved ? 1 : 0, autosaveContent: content, documentState: '', manualSave: true }),
    };
  }

  it("an open Text editor's next save does not overwrite the page the bot wrote", async () => {
    for (const unsaved of [false, true]) {
      // A fresh room each time: an earlier answer in the room would taint the turn and hold the write for a confirmation (S6).
      const token = await s.room('alice', ['bob']);
      await s.onboard('alice', token, mention);
      const page = `open-${unsaved ? 'dirty' : 'clean'}.md`;
      await s.nc.putFile('alice', `${root}/${page}`, '# Open page\n\nfirst\n');
      const editor = await openInText(`${root}/${page}`, unsaved);
      const botContent = `# Open page\n\nwritten by the bot (${unsaved ? 'dirty' : 'clean'})\n`;
      s.llm.enqueue(
        { toolCalls: [{ id: `w-${page}`, name: 'wiki_write_page', arguments: JSON.stringify({ path: page, content: botContent, mode: 'overwrite' }) }] },
        { text: ['Updated.'] },
      );
      await s.ask('alice', token, `@${mention} update ${page}`);
      assert.equal(await s.nc.readFile('alice', `${root}/${page}`), botContent, 'the bot wrote the page');
      const saved = await editor.save('# Open page\n\nfrom the editor\n');
      // Clean session: Text reset the document on the bot's write (412, the editor reloads). Dirty: Text refuses with a conflict (409).
      assert.equal(saved.status, unsaved ? 409 : 412, saved.text);
      assert.equal(await s.nc.readFile('alice', `${root}/${page}`), botContent, "the editor's save did not overwrite the bot's change");
    }
  });
});
