// The DAV side of knowledge: parsing real NC 29 answers (captures 70, 77) and a round trip
// through the fake Nextcloud's WebDAV (SEARCH by file id, PROPFIND Depth 1, GET), as one user.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueForStoredPrincipal } from '../../lib/nextcloud/identity.ts';
import { DavFileAccess, FileTooLargeError, ownerMayShare, parseMultistatus } from '../../lib/knowledge/nextcloud-files.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { readFixture } from '../helpers/fixtures.ts';

type Exchange = { response: { body: string } };

test('parses the captured SEARCH-by-file-id and PROPFIND answers', () => {
  const search = (readFixture('77-webdav-search.json') as Record<string, Exchange>).searchByFileId!.response.body;
  const [pixel] = parseMultistatus(search, 'alice');
  assert.deepEqual(pixel, {
    fileId: '250',
    path: 'educai-more/pixel.png',
    name: 'pixel.png',
    folder: false,
    etag: '"b3f27622f9d92e7abe23e206ce6b5d9d"',
    size: 73,
    mimeType: 'image/png',
    ownerId: '',
    permissions: 'RGDNVW',
    // The captured SEARCH asked for neither owner-id nor mount-type: unreported is not "home".
    mountType: null,
  });
  assert.deepEqual(parseMultistatus(search, 'bob'), [], 'entries outside the user’s own tree are dropped');
  const listing = parseMultistatus((readFixture('70-webdav-propfind-nextcloud-props.json') as Record<string, Exchange>).propfindDepth1!.response.body, 'alice');
  const home = listing.find((n) => n.path === '')!;
  assert.equal(home.folder, true);
  assert.equal(home.ownerId, 'alice');
  const collectives = listing.find((n) => n.path === 'Collectives')!;
  assert.deepEqual([collectives.folder, collectives.fileId, collectives.permissions], [true, '126', 'RGDNVCK']);
  const sheet = listing.find((n) => n.name === 'EducAI-worksheet.txt')!;
  assert.deepEqual([sheet.folder, sheet.size, sheet.mimeType], [false, 23, 'text/plain']);
  assert.equal(ownerMayShare(sheet, 'alice'), true);
  assert.equal(ownerMayShare({ ...sheet, ownerId: 'bob', permissions: 'SGDNVW' }, 'alice'), false);
  assert.equal(ownerMayShare({ ...sheet, ownerId: 'bob', permissions: 'SRGDNVW' }, 'alice'), true);
  // A group folder (or external storage) names the viewer as owner: without R, alice may not pass it on.
  assert.equal(sheet.mountType, '', 'her own home storage, as capture 70 reports it');
  assert.equal(ownerMayShare({ ...sheet, mountType: 'group', permissions: 'GDNVW' }, 'alice'), false);
  assert.equal(ownerMayShare({ ...sheet, mountType: 'external', permissions: 'GDNVW' }, 'alice'), false);
  assert.equal(ownerMayShare({ ...sheet, mountType: 'group', permissions: 'RGDNVW' }, 'alice'), true, 'unless Nextcloud lets her reshare it');
  assert.equal(ownerMayShare({ ...sheet, mountType: null, permissions: 'GDNVW' }, 'alice'), false, 'an unreported mount type is not proof of ownership');
});

describe('DAV file access against the fake Nextcloud', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  const alice = issueForStoredPrincipal('alice');
  const bob = issueForStoredPrincipal('bob');

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: 'knowledge-secret-0123456789abcdef' });
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '1.0.0', appSecret: 'knowledge-secret-0123456789abcdef' });
    const as = client.as(alice);
    await as.dav('MKCOL', '/files/{uid}/{*path}', { params: { uid: 'alice', path: 'Course' } });
    await as.dav('MKCOL', '/files/{uid}/{*path}', { params: { uid: 'alice', path: 'Course/sub' } });
    await as.dav('PUT', '/files/{uid}/{*path}', { params: { uid: 'alice', path: 'Course/a.md' }, body: '# Alpha\n\nFirst file.' });
    await as.dav('PUT', '/files/{uid}/{*path}', { params: { uid: 'alice', path: 'Course/sub/b.txt' }, body: 'Second file, nested.' });
  });
  after(() => nc.close());

  test('finds by id, lists, reads, and sees only the user’s own files', async () => {
    const files = new DavFileAccess(client);
    const course = nc.dav.files.node('alice', 'Course')!;
    const folder = await files.findById(alice, String(course.fileId));
    assert.ok(folder);
    assert.deepEqual([folder.path, folder.folder, folder.ownerId], ['Course', true, 'alice']);
    const children = await files.list(alice, folder);
    assert.deepEqual(children.map((c) => [c.path, c.folder]).sort(), [
      ['Course/a.md', false],
      ['Course/sub', true],
    ]);
    const sub = children.find((c) => c.folder)!;
    const nested = await files.list(alice, sub);
    assert.deepEqual(
      nested.map((c) => c.name),
      ['b.txt'],
    );
    const text = new TextDecoder().decode(await files.read(alice, nested[0]!, 1024));
    assert.equal(text, 'Second file, nested.');
    await assert.rejects(files.read(alice, { ...nested[0]!, size: 5000 }, 1024), FileTooLargeError);
    assert.equal(await files.findById(bob, String(course.fileId)), null, 'bob cannot resolve alice’s file id');
    assert.equal(await files.findById(alice, '999999'), null);
    assert.equal(await files.findById(alice, '../../etc'), null);
    assert.deepEqual(nc.headerViolations, []);
    const searches = nc.calls.filter((c) => c.method === 'SEARCH');
    assert.ok(searches.every((c) => c.path === '/remote.php/dav/' && c.user !== null));
  });
});

describe('room share check through Talk (S15)', () => {
  test('the file must still be on the author’s message in that room', async () => {
    const { talkShareCheck } = await import('../../lib/knowledge/knowledge-module.ts');
    const { createLogger } = await import('../../lib/log/logger.ts');
    const secret = 'knowledge-secret-0123456789abcdef';
    const nc = await FakeNextcloud.start({ appId: 'educai', appSecret: secret });
    try {
      const client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '1.0.0', appSecret: secret });
      const room = nc.createRoom({
        name: 'Class',
        type: 2,
        participants: [
          { actorId: 'alice', participantType: 1 },
          { actorId: 'bob', participantType: 3 },
        ],
      });
      const msg = nc.postMessage(room.token, { actorType: 'users', actorId: 'alice' }, '{file}', {
        parameters: {
          file: {
            type: 'file',
            id: '38',
            name: 'EducAI-worksheet.txt',
            size: 23,
            path: 'EducAI-worksheet.txt',
            link: `${nc.url}/index.php/f/38`,
            mimetype: 'text/plain',
            'preview-available': 'no',
            permissions: 27,
          },
        },
      });
      const check = talkShareCheck(client, createLogger({ level: 'silent' }));
      const alice = issueForStoredPrincipal('alice');
      assert.equal(await check(alice, room.token, String(msg.id), '38'), true);
      assert.equal(await check(alice, room.token, String(msg.id), '39'), false, 'another file id');
      assert.equal(await check(issueForStoredPrincipal('bob'), room.token, String(msg.id), '38'), false, 'not the author');
      assert.equal(await check(alice, room.token, '999999', '38'), false, 'no such message');
    } finally {
      await nc.close();
    }
  });
});
