import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { FilesDav } from '../../lib/nextcloud/files-dav.ts';
import { ToolAssignmentError } from '../../lib/tools/tool-assignments.ts';
import { WIKI_TOOL_NAMES } from '../../lib/wiki/wiki-config.ts';
import { personalBot, startWikiWorld, type WikiWorld } from './wiki-world.ts';

const ROOT = 'Talk AI/Personal Wikis/tutor';

function pageLines(index: string | null): string[] {
  return (index ?? '').split('\n').filter((l) => l.startsWith('- ['));
}

describe("personal wiki in the owner's files", () => {
  let w: WikiWorld;
  before(async () => {
    w = await startWikiWorld('sqlite');
    w.bots.set('bot-personal', personalBot());
  });
  after(async () => w.close());

  it('expands to all four tools and initialises index.md, log.md and schema.md when saved', async () => {
    const saved = await w.assignments.replace('bot-personal', [{ name: 'wiki_read_page', config: {} }]);
    assert.deepEqual(
      saved.map((a) => a.name),
      [...WIKI_TOOL_NAMES],
    );
    for (const file of ['index.md', 'log.md', 'schema.md']) assert.ok(w.nc.dav.files.read('alice', `${ROOT}/${file}`), file);
    assert.match(w.nc.dav.files.read('alice', `${ROOT}/index.md`)!, /## Existing Files[\s\S]*No pages yet/);
    const root = await w.wiki.roots.get('bot-personal');
    assert.equal(root?.rootPath, ROOT);
    assert.equal(root?.uid, 'alice');
    assert.equal(root?.rootFileId, String(w.nc.dav.files.node('alice', ROOT)!.fileId));
  });

  it('writes a page, finds it, reads it back in pages and lists it in index.md', async () => {
    const body = `# Fractions\n\n${'Brüche und 分数 😀 '.repeat(300)}\nA common denominator comes first.\n`;
    const wrote = await w.run('wiki_write_page', { path: 'topics/fractions.md', content: body, reason: 'user asked' });
    assert.equal(wrote.result.isError, false, JSON.stringify(wrote.json));
    assert.equal(wrote.json.action, 'written');
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/topics/fractions.md`), body);
    assert.deepEqual(pageLines(w.nc.dav.files.read('alice', `${ROOT}/index.md`)), [
      `- [Fractions](topics/fractions.md) — \`topics/fractions.md\` (${Buffer.byteLength(body)} bytes)`,
    ]);

    const found = await w.run('wiki_search', { query: 'denominator fractions' });
    assert.equal(found.json.results[0].path, 'topics/fractions.md');
    assert.equal(found.json.scope, 'wiki');

    let offset = 0;
    let text = '';
    for (let i = 0; i < 10; i++) {
      const page = await w.run('wiki_read_page', { path: 'topics/fractions.md', offset, limit: 3500 });
      assert.equal(page.result.isError, false);
      assert.equal(page.json.total_length, Array.from(body).length);
      text += page.json.content;
      if (!page.json.has_more) {
        assert.equal(page.json.next_offset, null);
        break;
      }
      offset = page.json.next_offset;
    }
    assert.equal(text, body);
  });

  it('create refuses an existing page; overwrite and append work; a stale etag is refused', async () => {
    const again = await w.run('wiki_write_page', { path: 'topics/fractions.md', content: 'x', mode: 'create' });
    assert.equal(again.result.isError, true);
    assert.match(again.json.error, /already exists/);

    await w.run('wiki_write_page', { path: 'notes.txt', content: 'one', mode: 'create' });
    const read = await w.run('wiki_read_page', { path: 'notes.txt' });
    const appended = await w.run('wiki_write_page', { path: 'notes.txt', content: 'two', mode: 'append', etag: read.json.etag });
    assert.equal(appended.json.action, 'appended');
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/notes.txt`), 'one\ntwo');
    // read.json.etag is now stale: the page changed since.
    const stale = await w.run('wiki_write_page', { path: 'notes.txt', content: 'three', mode: 'overwrite', etag: read.json.etag });
    assert.equal(stale.result.isError, true);
    assert.match(stale.json.error, /changed since you read it/);
    const over = await w.run('wiki_write_page', { path: 'notes.txt', content: 'three', mode: 'overwrite' });
    assert.equal(over.json.action, 'written');
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/notes.txt`), 'three');
  });

  it('refuses unsafe paths, other types, oversize content and the server-managed schema.md with clear errors', async () => {
    const mark = w.nc.calls.length;
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ path: '../escape.md', content: 'x' }, /"\.\."/],
      [{ path: '/abs.md', content: 'x' }, /relative/],
      [{ path: '.hidden/x.md', content: 'x' }, /hidden/],
      [{ path: 'run.sh', content: 'x' }, /\.md, \.txt or \.json/],
      [{ path: 'big.md', content: 'a'.repeat(512 * 1024 + 1) }, /larger than 512 KiB/],
      [{ path: 'schema.md', content: 'new rules', mode: 'overwrite' }, /maintained by the server/],
    ];
    for (const [args, message] of cases) {
      const r = await w.run('wiki_write_page', args);
      assert.equal(r.result.isError, true, JSON.stringify(args).slice(0, 60));
      assert.match(r.json.error, message);
    }
    assert.deepEqual(
      w.callsSince(mark).filter((c) => c.method === 'PUT' || c.method === 'MKCOL'),
      [],
      'nothing was written',
    );
    // Appending past 512 KiB is refused too.
    await w.run('wiki_write_page', { path: 'grow.md', content: 'a'.repeat(400 * 1024) });
    const grown = await w.run('wiki_write_page', { path: 'grow.md', content: 'b'.repeat(200 * 1024), mode: 'append' });
    assert.match(grown.json.error, /larger than 512 KiB/);
    const missing = await w.run('wiki_read_page', { path: 'nope.md' });
    assert.match(missing.json.error, /does not exist/);
  });

  it('logs dated entries to log.md', async () => {
    const r = await w.run('wiki_log_event', { title: 'Added fractions', details: 'Because the class asked.' });
    assert.equal(r.result.isError, false);
    assert.match(w.nc.dav.files.read('alice', `${ROOT}/log.md`)!, /\n## \[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] Added fractions\n\nBecause the class asked\.\n$/);
  });

  it('updates index.md after a manual edit; a burst of edits and events leads to one sync; managed and hidden files stay out', async () => {
    const dav = new FilesDav(w.client.as(issueFromConfirmedTalkAuthor('alice')));
    const path = (rel: string) => ({ segments: `${ROOT}/${rel}`.split('/'), relative: `${ROOT}/${rel}` });
    // The log entry moved the root's etag: the next scan syncs once (nothing to rewrite), then all is quiet.
    await w.wiki.scanner.scanOnce();
    await w.wiki.scheduler.flush();
    assert.equal(await w.wiki.scanner.scanOnce(), 0);
    const before = w.wiki.scheduler.syncCount;
    // A person edits in Files/Text over WebDAV, several times.
    for (let i = 0; i < 5; i++) {
      await dav.put(path('manual.md'), `# Manual page ${i}\n`, {});
      await dav.put(path('.draft.md'), 'hidden', {});
      w.wiki.scanner.fileEvent();
      assert.equal(await w.wiki.scanner.scanOnce(), 1);
    }
    assert.equal(w.wiki.scheduler.pendingCount, 1, 'one sync pending for the root');
    await w.wiki.scheduler.flush();
    assert.equal(w.wiki.scheduler.syncCount - before, 1, 'exactly one sync ran');
    const lines = pageLines(w.nc.dav.files.read('alice', `${ROOT}/index.md`));
    assert.ok(
      lines.some((l) => l.startsWith('- [Manual page 4](manual.md)')),
      lines.join('\n'),
    );
    assert.ok(!lines.some((l) => /draft|log\.md|schema\.md|index\.md/.test(l)), lines.join('\n'));
    // The sync's own write does not trigger another one.
    assert.equal(await w.wiki.scanner.scanOnce(), 0);
  });

  it('an edit saved while a sync writes index.md is not lost: the next scan syncs again', async () => {
    const dav = new FilesDav(w.client.as(issueFromConfirmedTalkAuthor('alice')));
    const path = (rel: string) => ({ segments: `${ROOT}/${rel}`.split('/'), relative: `${ROOT}/${rel}` });
    await w.wiki.scanner.scanOnce();
    await w.wiki.scheduler.flush();
    assert.equal(await w.wiki.scanner.scanOnce(), 0);
    const events = w.nc.dav.files.onNodeEvent;
    let during: Promise<unknown> | null = null;
    // A person saves another page while the sync writes index.md, after the sync's walk.
    w.nc.dav.files.onNodeEvent = (e) => {
      events(e);
      if (during === null && e.data.node?.path.endsWith('/index.md')) during = dav.put(path('during.md'), '# Saved during the sync\n', {});
    };
    try {
      await dav.put(path('first.md'), '# First\n', {});
      assert.equal(await w.wiki.scanner.scanOnce(), 1);
      await w.wiki.scheduler.flush();
    } finally {
      w.nc.dav.files.onNodeEvent = events;
    }
    assert.ok(during, 'the sync wrote index.md');
    await during;
    assert.equal(await w.wiki.scanner.scanOnce(), 1, 'the root still differs from the etag the sync recorded');
    await w.wiki.scheduler.flush();
    const lines = pageLines(w.nc.dav.files.read('alice', `${ROOT}/index.md`));
    assert.ok(
      lines.some((l) => l.includes('(during.md)')),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => l.includes('(first.md)')),
      lines.join('\n'),
    );
  });

  it('follows a moved wiki folder by file id', async () => {
    const dav = new FilesDav(w.client.as(issueFromConfirmedTalkAuthor('alice')));
    const from = { segments: ROOT.split('/'), relative: ROOT };
    const moved = 'Talk AI/Personal Wikis/tutor-archive';
    const res = await dav.transfer('MOVE', from, { segments: moved.split('/'), relative: moved });
    assert.equal(res.status, 201);
    await dav.put({ segments: `${moved}/after-move.md`.split('/'), relative: `${moved}/after-move.md` }, '# After the move\n', {});
    assert.equal(await w.wiki.scanner.scanOnce(), 1);
    await w.wiki.scheduler.flush();
    assert.equal((await w.wiki.roots.get('bot-personal'))?.rootPath, moved);
    assert.ok(pageLines(w.nc.dav.files.read('alice', `${moved}/index.md`)).some((l) => l.includes('(after-move.md)')));
    // Move it back for the next tests.
    await dav.transfer('MOVE', { segments: moved.split('/'), relative: moved }, from);
    await w.wiki.syncRoot('bot-personal');
    assert.equal((await w.wiki.roots.get('bot-personal'))?.rootPath, ROOT);
  });

  it('is unavailable to anyone but the owner, without any call as the owner', async () => {
    const mark = w.nc.calls.length;
    const r = await w.run('wiki_search', { query: 'fractions' }, 'bob');
    assert.equal(r.result.isError, true);
    assert.match(r.json.error, /wiki tools are unavailable to you/);
    assert.deepEqual(
      w.callsSince(mark).filter((c) => c.user === 'alice'),
      [],
    );
  });

  it('S16: refuses a wiki folder that is shared out, before any write', async () => {
    const files = w.nc.dav.files;
    const original = files.shareTypesOf;
    const rootId = files.node('alice', ROOT)!.fileId;
    files.shareTypesOf = (owner, id) => (owner === 'alice' && id === rootId ? [0] : original(owner, id));
    try {
      const mark = w.nc.calls.length;
      const r = await w.run('wiki_write_page', { path: 'new.md', content: 'x' });
      assert.equal(r.result.isError, true);
      assert.match(r.json.error, /shared with others/);
      assert.deepEqual(
        w.callsSince(mark).filter((c) => c.method !== 'PROPFIND'),
        [],
      );
      const log = await w.run('wiki_log_event', { title: 'x' });
      assert.match(log.json.error, /shared with others/);
    } finally {
      files.shareTypesOf = original;
    }
  });
});

describe('S16: a shared or mounted folder named "Talk AI" is refused', () => {
  let w: WikiWorld;
  before(async () => {
    w = await startWikiWorld('sqlite');
  });
  after(async () => w.close());

  it('refuses to initialise or write into a "Talk AI" folder someone shared with the owner', async () => {
    // carol shares her "Talk AI" folder with bob: it shows up in bob's home as a share.
    w.nc.dav.files.receiveShare('bob', 'Talk AI', 'carol');
    w.bots.set('bot-bob', personalBot({ id: 'bot-bob', ownerUid: 'bob', mention: 'helper' }));
    const mark = w.nc.calls.length;
    await assert.rejects(
      w.assignments.replace('bot-bob', [{ name: 'wiki_search', config: {} }]),
      (err: Error) => err instanceof ToolAssignmentError && /belongs to someone else/.test(err.message),
    );
    assert.deepEqual(await w.assignments.list('bot-bob'), [], 'nothing stored');
    assert.equal(await w.wiki.roots.get('bot-bob'), null);
    // Used anyway (e.g. assigned before the share appeared): every write is refused, nothing is created.
    const r = await w.run('wiki_write_page', { path: 'x.md', content: 'x' }, 'bob', 'bot-bob');
    assert.match(r.json.error, /belongs to someone else/);
    assert.deepEqual(
      w.callsSince(mark).filter((c) => c.method === 'PUT' || c.method === 'MKCOL'),
      [],
    );
  });

  it("refuses a custom root below a mounted folder (external storage) and accepts the owner's own", async () => {
    w.bots.set('bot-alice', personalBot({ id: 'bot-alice' }));
    const mount = w.nc.dav.files.mkdir('alice', 'Talk AI/External');
    mount.mountType = 'external';
    await assert.rejects(
      w.assignments.replace('bot-alice', [{ name: 'wiki_search', config: { location: 'personal_files', rootPath: 'Talk AI/External/wiki' } }]),
      /mounted folder \(external\)/,
    );
    const ok = await w.assignments.replace('bot-alice', [{ name: 'wiki_search', config: { location: 'personal_files', rootPath: 'Talk AI/Class 7b' } }]);
    assert.equal(ok.length, 4);
    assert.ok(w.nc.dav.files.read('alice', 'Talk AI/Class 7b/index.md'));
  });
});
