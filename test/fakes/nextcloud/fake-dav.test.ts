// The fake's DAV side answers like the captures, including what another user gets (capture 75).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readNc29Exchange } from './fixtures.ts';
import { FakeNextcloud } from './server.ts';

const SECRET = 'fake-dav-test-secret-0123456789abcdef';

describe('fake Nextcloud: WebDAV, CalDAV and sharing', () => {
  let nc: FakeNextcloud;
  const as = (uid: string, extra: Record<string, string> = {}): Record<string, string> => ({
    'EX-APP-ID': 'educai',
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': nc.authHeaderFor(uid),
    ...extra,
  });

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: SECRET });
    nc.dav.files.putFile('bob', 'Readme.md', 'bob');
    nc.dav.files.putFile('alice', 'EducAI-worksheet.txt', 'Worksheet 1: fractions\n');
    nc.dav.calendars.createCalendar('bob', 'personal', 'Personal');
  });
  after(async () => {
    await nc.close();
  });

  it("gives alice capture 75's answers for bob's files, trash and calendars", async () => {
    const root = await fetch(`${nc.url}/remote.php/dav/files/bob/`, { method: 'PROPFIND', headers: as('alice', { Depth: '1' }) });
    assert.equal(root.status, 207);
    assert.equal(await root.text(), readNc29Exchange('75-webdav-other-users-files.json', 'alicePropfindBobsRoot').response.body);
    assert.equal((await fetch(`${nc.url}/remote.php/dav/files/bob/Readme.md`, { headers: as('alice') })).status, 404);
    assert.equal((await fetch(`${nc.url}/remote.php/dav/trashbin/bob/trash`, { method: 'PROPFIND', headers: as('alice', { Depth: '1' }) })).status, 403);
    assert.equal((await fetch(`${nc.url}/remote.php/dav/calendars/bob/`, { method: 'PROPFIND', headers: as('alice', { Depth: '1' }) })).status, 404);
  });

  it('refuses DAV without a user or with a wrong secret (401), and has no well-known redirect', async () => {
    assert.equal((await fetch(`${nc.url}/remote.php/dav/files/alice/`, { method: 'PROPFIND', headers: as('', { Depth: '0' }) })).status, 401);
    const wrong = { 'EX-APP-ID': 'educai', 'EX-APP-VERSION': '1.0.0', 'AUTHORIZATION-APP-API': Buffer.from('alice:wrong').toString('base64') };
    assert.equal((await fetch(`${nc.url}/remote.php/dav/files/alice/`, { method: 'PROPFIND', headers: { ...wrong, Depth: '0' } })).status, 401);
    assert.equal((await fetch(`${nc.url}/.well-known/caldav`, { method: 'PROPFIND', headers: as('alice') })).status, 404);
  });

  it('answers PROPFIND with the asked-for props in 200 and the unknown ones in 404 propstats (capture 70)', async () => {
    const body =
      '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:getetag/><oc:fileid/><oc:does-not-exist/></d:prop></d:propfind>';
    const res = await fetch(`${nc.url}/remote.php/dav/files/alice/EducAI-worksheet.txt`, { method: 'PROPFIND', headers: as('alice', { Depth: '0' }), body });
    const text = await res.text();
    assert.match(
      text,
      /<d:propstat><d:prop><d:getetag>&quot;[0-9a-f]+&quot;<\/d:getetag><oc:fileid>\d+<\/oc:fileid><\/d:prop><d:status>HTTP\/1\.1 200 OK<\/d:status><\/d:propstat>/,
    );
    assert.match(text, /<d:propstat><d:prop><oc:does-not-exist\/><\/d:prop><d:status>HTTP\/1\.1 404 Not Found<\/d:status><\/d:propstat>/);
  });

  it('keeps the sharing error envelopes of capture 79', async () => {
    const res = await fetch(`${nc.url}/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json`, {
      method: 'POST',
      headers: as('alice', { 'OCS-APIRequest': 'true', 'Content-Type': 'application/json' }),
      body: JSON.stringify({ path: '/EducAI-worksheet.txt', shareType: 0, shareWith: 'nobody-here', permissions: 1 }),
    });
    assert.equal(res.status, 404);
    assert.equal(await res.text(), readNc29Exchange('79-ocs-sharing-errors-v1-vs-v2.json', 'v2ShareWithNonexistentUser').response.body);
    const v1 = await fetch(`${nc.url}/ocs/v1.php/apps/files_sharing/api/v1/shares/999999?format=json`, { headers: as('alice', { 'OCS-APIRequest': 'true' }) });
    assert.equal(v1.status, 200);
    assert.equal(await v1.text(), readNc29Exchange('79-ocs-sharing-errors-v1-vs-v2.json', 'v1GetUnknownShareId').response.body);
  });
});
