import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import { readNc29Exchange } from '../../fakes/nextcloud/fixtures.ts';
import { json, seedFiles, startToolWorld, text, type ToolWorld } from '../first-party-fixture.ts';

let w: ToolWorld;
let mark = 0;

const stored = (index = -1) => w.confirmations.stored(index);

function confirm(index = -1) {
  return w.provider.executeConfirmed(stored(index), issueFromConfirmedTalkAuthor('alice'));
}

/** Every call since the mark acted as alice and honoured the AppAPI header contract. */
function assertAllAsAlice(): void {
  const calls = w.callsSince(mark);
  assert.ok(calls.length > 0);
  for (const c of calls) assert.equal(c.user, 'alice', `${c.method} ${c.path}`);
  assert.deepEqual(w.nc.headerViolations, []);
}

function methods(): string[] {
  return w.callsSince(mark).map((c) => `${c.method} ${decodeURIComponent(c.path.replace('/remote.php/dav', ''))}`);
}

describe('files tools against the fake Nextcloud', () => {
  before(async () => {
    w = await startToolWorld();
    seedFiles(w.nc);
  });
  after(async () => {
    await w.close();
  });
  beforeEach(() => {
    mark = w.nc.calls.length;
    w.nc.headerViolations.length = 0;
  });

  it('files_list lists the home folder with the properties the model needs', async () => {
    const res = await w.run('files_list', {});
    assert.equal(res.isError, false, text(res));
    const body = json(res);
    const items = body['items'] as Array<Record<string, unknown>>;
    const sheet = items.find((i) => i['name'] === 'EducAI-worksheet.txt');
    assert.ok(sheet);
    assert.equal(sheet['type'], 'file');
    assert.equal(sheet['size'], 23);
    assert.match(String(sheet['etag']), /^"[0-9a-f]+"$/);
    assert.match(String(sheet['fileId']), /^\d+$/);
    assert.equal(sheet['permissions'], 'RGDNVW');
    assert.equal(items.find((i) => i['name'] === 'Talk')?.['type'], 'folder');
    assert.equal(
      items.some((i) => i['name'] === 'Readme.md'),
      false,
      "bob's files never appear",
    );
    assertAllAsAlice();
  });

  it('files_list reports a missing folder', async () => {
    const res = await w.run('files_list', { path: 'no-such-folder' });
    assert.equal(res.isError, true);
    assert.match(text(res), /Nothing exists at \/no-such-folder/);
  });

  it('files_read returns UTF-8 text in pages with the revision', async () => {
    w.nc.dav.files.putFile('alice', 'notes/long.txt', 'héllo wörld 🎉 '.repeat(10));
    const first = await w.run('files_read', { path: 'notes/long.txt', limit: 20 });
    assert.equal(first.isError, false, text(first));
    const [headerLine, ...rest] = text(first).split('\n');
    const header = JSON.parse(headerLine ?? '{}') as Record<string, unknown>;
    assert.equal(header['offset'], 0);
    assert.equal(header['returnedChars'], 20);
    assert.equal(header['nextOffset'], 20);
    assert.equal(header['totalChars'], 'héllo wörld 🎉 '.repeat(10).length);
    assert.match(String(header['etag']), /^"/);
    assert.ok(rest.join('\n').includes('héllo wörld'));
    const last = await w.run('files_read', { path: 'notes/long.txt', offset: 140, limit: 100 });
    const lastHeader = JSON.parse(text(last).split('\n')[0] ?? '{}') as Record<string, unknown>;
    assert.equal(lastHeader['nextOffset'], null);
    assertAllAsAlice();
  });

  it("files_read finds an attachment by file id through SEARCH as the user (S15), never one of bob's", async () => {
    const node = w.nc.dav.files.putFile('alice', 'Talk/shared-in-chat.txt', 'from the chat');
    const res = await w.run('files_read', { fileId: String(node.fileId) });
    assert.equal(res.isError, false, text(res));
    assert.match(text(res), /"path":"\/Talk\/shared-in-chat\.txt"/);
    assert.match(text(res), /from the chat/);
    const search = w.callsSince(mark).find((c) => c.method === 'SEARCH');
    assert.match(search?.body ?? '', /<d:href>\/files\/alice<\/d:href>/);
    const bobs = w.nc.dav.files.node('bob', 'Readme.md');
    assert.ok(bobs);
    const other = await w.run('files_read', { fileId: String(bobs.fileId) });
    assert.match(text(other), /no file with id/);
    const bad = await w.run('files_read', { fileId: '12/../13' });
    assert.match(text(bad), /digits of a file id/);
    assertAllAsAlice();
  });

  it('files_read refuses binary files, folders and missing paths with a clear message', async () => {
    const png = await w.run('files_read', { path: 'pixel.png' });
    assert.equal(png.isError, true);
    assert.match(text(png), /binary file \(image\/png\)/);
    w.nc.dav.files.putFile('alice', 'data/blob.txt', Buffer.from([0x41, 0x00, 0x42, 0x00]));
    const blob = await w.run('files_read', { path: 'data/blob.txt' });
    assert.equal(blob.isError, true);
    assert.match(text(blob), /not a UTF-8 text file/);
    const folder = await w.run('files_read', { path: 'Talk' });
    assert.match(text(folder), /is a folder; use files_list/);
    const missing = await w.run('files_read', { path: 'nope.txt' });
    assert.match(text(missing), /Nothing exists at \/nope\.txt/);
  });

  it('files_create creates a new file and refuses an existing one unless overwrite is asked (then it needs confirmation)', async () => {
    const res = await w.run('files_create', { path: 'created/new.md', content: '# new' });
    assert.equal(res.isError, true, 'the parent folder must exist');
    assert.match(text(res), /folder \/created does not exist/);

    mark = w.nc.calls.length;
    const ok = await w.run('files_create', { path: 'Talk/new.md', content: '# new' });
    assert.equal(ok.isError, false, text(ok));
    assert.equal(json(ok)['created'], '/Talk/new.md');
    assert.equal(w.nc.dav.files.read('alice', 'Talk/new.md'), '# new');

    const again = await w.run('files_create', { path: 'Talk/new.md', content: 'other' });
    assert.equal(again.isError, true);
    assert.match(text(again), /already exists/);
    assert.equal(w.nc.dav.files.read('alice', 'Talk/new.md'), '# new');

    const before = w.confirmations.requests.length;
    const overwrite = await w.run('files_create', { path: 'Talk/new.md', content: 'replaced', overwrite: true });
    assert.equal(overwrite.isError, false);
    assert.match(text(overwrite), /NOT DONE YET/);
    assert.equal(w.confirmations.requests.length, before + 1);
    assert.equal(w.nc.dav.files.read('alice', 'Talk/new.md'), '# new', 'nothing is written before the confirmation');
    assert.equal(methods().filter((m) => m.startsWith('PUT')).length, 1, 'only the first create wrote');
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    assert.equal(w.nc.dav.files.read('alice', 'Talk/new.md'), 'replaced');
    assertAllAsAlice();
  });

  it('files_overwrite checks the etag: a stale one is "the file changed", a right one asks for confirmation', async () => {
    const node = w.nc.dav.files.putFile('alice', 'educai-more/G.txt', 'file G v1\n');
    const stale = await w.run('files_overwrite', { path: 'educai-more/G.txt', content: 'x', etag: '"0000wrongetag"' });
    assert.equal(stale.isError, true);
    assert.match(text(stale), /The file changed/);

    await w.run('files_overwrite', { path: 'educai-more/G.txt', content: 'file G v2', etag: node.etag });
    const action = stored();
    assert.equal(action.tool, 'files_overwrite');
    assert.deepEqual(action.binding, { fileId: String(node.fileId), etag: node.etag });
    assert.equal(w.nc.dav.files.read('alice', 'educai-more/G.txt'), 'file G v1\n');

    // Someone edits the file before the user confirms: the bound revision no longer matches.
    w.nc.dav.files.putFile('alice', 'educai-more/G.txt', 'edited by someone else');
    const late = await confirm();
    assert.equal(late.isError, true);
    assert.match(text(late), /The file changed/);
    assert.equal(w.nc.dav.files.read('alice', 'educai-more/G.txt'), 'edited by someone else');
  });

  it("files_overwrite turns Nextcloud's 412 (capture 72) into 'the file changed'", async () => {
    const node = w.nc.dav.files.putFile('alice', 'educai-more/race.txt', 'v1');
    await w.run('files_overwrite', { path: 'educai-more/race.txt', content: 'v2', etag: node.etag });
    const fixture = readNc29Exchange('72-webdav-put-if-match.json', 'putIfMatchWrong').response;
    w.nc.failNext({ method: 'PUT', path: /race\.txt$/ }, { status: 412, body: fixture.body });
    const res = await confirm();
    assert.equal(res.isError, true);
    assert.match(text(res), /The file changed/);
    const put = w.callsSince(mark).find((c) => c.method === 'PUT');
    assert.equal(put?.headers['if-match'], node.etag);
  });

  it('files_mkdir creates folders and reports existing ones (405) and missing parents (409)', async () => {
    const ok = await w.run('files_mkdir', { path: 'educai-more/new-folder' });
    assert.equal(ok.isError, false, text(ok));
    const again = await w.run('files_mkdir', { path: 'educai-more/new-folder' });
    assert.match(text(again), /already exists/);
    const orphan = await w.run('files_mkdir', { path: 'no-such-parent/child' });
    assert.match(text(orphan), /parent folder \/no-such-parent does not exist/);
    assertAllAsAlice();
  });

  it('files_copy and files_move never overwrite: Overwrite: F, and an existing destination is refused before any request', async () => {
    w.nc.dav.files.putFile('alice', 'cm/F.txt', 'file F');
    w.nc.dav.files.putFile('alice', 'cm/G.txt', 'file G');
    const copy = await w.run('files_copy', { source: 'cm/F.txt', destination: 'cm/F-copy.txt' });
    assert.equal(copy.isError, false, text(copy));
    assert.equal(w.nc.dav.files.read('alice', 'cm/F-copy.txt'), 'file F');
    const sent = w.callsSince(mark).find((c) => c.method === 'COPY');
    assert.equal(sent?.headers['overwrite'], 'F');
    assert.equal(sent?.headers['destination'], `${w.nc.url}/remote.php/dav/files/alice/cm/F-copy.txt`);

    mark = w.nc.calls.length;
    const onto = await w.run('files_move', { source: 'cm/F-copy.txt', destination: 'cm/G.txt' });
    assert.equal(onto.isError, true);
    assert.match(text(onto), /already exists; nothing is ever overwritten/);
    assert.equal(
      methods().some((m) => m.startsWith('MOVE')),
      false,
    );
    assert.equal(w.nc.dav.files.read('alice', 'cm/G.txt'), 'file G');

    const move = await w.run('files_move', { source: 'cm/F-copy.txt', destination: 'cm/H.txt' });
    assert.equal(move.isError, false, text(move));
    assert.equal(w.nc.dav.files.read('alice', 'cm/H.txt'), 'file F');
    assert.equal(w.nc.dav.files.read('alice', 'cm/F-copy.txt'), null);
  });

  it("files_move reports Nextcloud's 412 for an Overwrite: F race (capture 71)", async () => {
    w.nc.dav.files.putFile('alice', 'race/a.txt', 'a');
    const fixture = readNc29Exchange('71-webdav-mkcol-copy-move.json', 'moveOntoExistingOverwriteF').response;
    w.nc.failNext({ method: 'MOVE', path: /race\/a\.txt$/ }, { status: 412, body: fixture.body });
    const res = await w.run('files_move', { source: 'race/a.txt', destination: 'race/b.txt' });
    assert.equal(res.isError, true);
    assert.match(text(res), /Nothing was done/);
    assert.equal(w.nc.dav.files.read('alice', 'race/a.txt'), 'a');
  });

  it('copying into a folder other people can see needs confirmation (S6)', async () => {
    const shared = await w.run('sharing_create_user_share', { path: 'educai-share', user: 'bob' });
    assert.equal(shared.isError, false, text(shared));
    const before = w.confirmations.requests.length;
    const res = await w.run('files_copy', { source: 'EducAI-worksheet.txt', destination: 'educai-share/worksheet.txt' });
    assert.match(text(res), /NOT DONE YET/);
    assert.equal(w.confirmations.requests.length, before + 1);
    assert.match(stored().description, /a folder other people can see/);
    assert.equal(w.nc.dav.files.read('alice', 'educai-share/worksheet.txt'), null);
  });

  it('files_delete asks for confirmation, then moves the bound revision to the trash; a changed file is not deleted', async () => {
    const node = w.nc.dav.files.putFile('alice', 'del/H.txt', 'to delete');
    const res = await w.run('files_delete', { path: 'del/H.txt' });
    assert.match(text(res), /NOT DONE YET/);
    assert.equal(
      methods().some((m) => m.startsWith('DELETE')),
      false,
    );
    assert.deepEqual(stored().binding, { fileId: String(node.fileId), etag: node.etag });
    assert.match(stored().description, /to the trash bin/);

    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    assert.equal(w.nc.dav.files.read('alice', 'del/H.txt'), null);
    assert.ok(w.nc.dav.files.trashOf('alice').some((t) => t.node.fileId === node.fileId));
    const del = w.callsSince(mark).find((c) => c.method === 'DELETE');
    assert.equal(del?.headers['if-match'], node.etag);

    const again = await confirm();
    assert.equal(again.isError, true, 'the same stored action finds nothing the second time');
    assert.match(text(again), /Nothing exists/);

    const other = w.nc.dav.files.putFile('alice', 'del/I.txt', 'v1');
    await w.run('files_delete', { path: 'del/I.txt' });
    w.nc.dav.files.putFile('alice', 'del/I.txt', 'v2');
    const changed = await confirm();
    assert.match(text(changed), /The file changed/);
    assert.equal(w.nc.dav.files.read('alice', 'del/I.txt'), 'v2');
    assert.ok(other);
    assertAllAsAlice();
  });

  it('files_delete maps a 404 from Nextcloud (capture 73) to "nothing exists"', async () => {
    w.nc.dav.files.putFile('alice', 'del/gone.txt', 'x');
    await w.run('files_delete', { path: 'del/gone.txt' });
    const fixture = readNc29Exchange('73-webdav-delete-trashbin-restore.json', 'deleteHAgain').response;
    w.nc.failNext({ method: 'DELETE', path: /gone\.txt$/ }, { status: 404, body: fixture.body });
    const res = await confirm();
    assert.equal(res.isError, true);
    assert.match(text(res), /Nothing exists at \/del\/gone\.txt/);
  });

  it('files_restore lists the trash and restores an item; lists versions and restores one', async () => {
    const node = w.nc.dav.files.putFile('alice', 'rs/H.txt', 'restore me');
    await w.run('files_delete', { path: 'rs/H.txt' });
    await confirm();
    const list = await w.run('files_restore', { action: 'list_trash' });
    const items = json(list)['items'] as Array<Record<string, unknown>>;
    const item = items.find((i) => i['fileId'] === String(node.fileId));
    assert.ok(item, text(list));
    assert.equal(item['originalLocation'], 'rs/H.txt');
    const restore = await w.run('files_restore', { action: 'restore_from_trash', item: item['id'] });
    assert.equal(restore.isError, false, text(restore));
    assert.equal(w.nc.dav.files.read('alice', 'rs/H.txt'), 'restore me');
    const unknown = await w.run('files_restore', { action: 'restore_from_trash', item: 'nothing.d1' });
    assert.match(text(unknown), /no item/);

    w.nc.dav.files.putFile('alice', 'rs/V.txt', 'version 1');
    w.nc.dav.files.putFile('alice', 'rs/V.txt', 'version 2 (longer)');
    w.nc.dav.files.putFile('alice', 'rs/V.txt', 'version 3 (current)');
    const versions = json(await w.run('files_restore', { action: 'list_versions', path: 'rs/V.txt' }));
    const list2 = versions['versions'] as Array<Record<string, unknown>>;
    assert.equal(list2.length, 3, 'two older versions and the current one (capture 74)');
    const oldest = list2[0];
    assert.ok(oldest);
    const back = await w.run('files_restore', { action: 'restore_version', path: 'rs/V.txt', version: oldest['id'] });
    assert.equal(back.isError, false, text(back));
    assert.equal(w.nc.dav.files.read('alice', 'rs/V.txt'), 'version 1');
    assertAllAsAlice();
  });

  it('a 403 from Nextcloud is reported, not thrown', async () => {
    w.nc.failNext(
      { method: 'PROPFIND', path: /files\/alice\/locked$/ },
      {
        status: 403,
        body: '<?xml version="1.0" encoding="utf-8"?><d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns"><s:exception>Sabre\\DAV\\Exception\\Forbidden</s:exception><s:message/></d:error>',
      },
    );
    const res = await w.run('files_list', { path: 'locked' });
    assert.equal(res.isError, true);
    assert.match(text(res), /refused this for your account/);
  });
});
