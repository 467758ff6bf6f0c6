import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { createDavFetch, davSegments } from '../../lib/tools/calendar/dav-fetch.ts';
import {
  componentNames,
  DavParseError,
  hrefSegments,
  isCollection,
  parseDavXml,
  parseMultistatus,
  propHrefs,
  propList,
  propText,
  sabreMessage,
} from '../../lib/nextcloud/multistatus.ts';
import { parseUserPath } from '../../lib/tools/files/user-paths.ts';
import { readNc29Exchange } from '../fakes/nextcloud/fixtures.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { APP_ID, APP_SECRET, USERS } from '../tools/first-party-fixture.ts';

describe('multistatus parsing of the captures', () => {
  it('reads oc/nc file properties and 404 propstats (capture 70)', () => {
    const entries = parseMultistatus(readNc29Exchange('70-webdav-propfind-nextcloud-props.json', 'propfindDepth1').response.body);
    const root = entries[0];
    assert.ok(root);
    assert.equal(root.href, '/remote.php/dav/files/alice/');
    assert.equal(isCollection(root), true);
    assert.equal(propText(root, 'fileid'), '25');
    assert.equal(propText(root, 'permissions'), 'GDNVCK');
    assert.equal(propText(root, 'getcontentlength'), '', 'a 404 propstat gives nothing');
    const sheet = entries.find((e) => e.href.endsWith('EducAI-worksheet.txt'));
    assert.ok(sheet);
    assert.equal(propText(sheet, 'getetag'), '"fdd051c0f59476645c9e62bcc05f379d"');
    assert.deepEqual(propList(sheet, 'share-types', 'share-type'), ['10']);
    assert.equal(isCollection(sheet), false);
  });

  it('reads trash items, calendar components, principals and Sabre errors', () => {
    const trash = parseMultistatus(readNc29Exchange('73-webdav-delete-trashbin-restore.json', 'propfindTrash').response.body);
    const item = trash.find((e) => e.href.endsWith('H.txt.d1796011647'));
    assert.ok(item);
    assert.equal(propText(item, 'trashbin-original-location'), 'educai-more/H.txt');
    const cals = parseMultistatus(readNc29Exchange('22-caldav-propfind-calendars-alice.json').response.body);
    assert.deepEqual(componentNames(cals.find((e) => e.href.endsWith('/personal/')) ?? cals[0]!), ['VEVENT', 'VTODO']);
    const principal = parseMultistatus(readNc29Exchange('80-caldav-propfind-home-and-principal.json', 'propfindPrincipal').response.body)[0];
    assert.ok(principal);
    assert.deepEqual(propHrefs(principal, 'calendar-user-address-set'), ['mailto:alice@example.com', '/remote.php/dav/principals/users/alice/']);
    assert.equal(sabreMessage(readNc29Exchange('71-webdav-mkcol-copy-move.json', 'mkcolMissingParent').response.body), 'Parent node does not exist');
    assert.deepEqual(hrefSegments('/remote.php/dav/files/alice/a%20b/c.txt'), ['remote.php', 'dav', 'files', 'alice', 'a b', 'c.txt']);
  });

  it('refuses DOCTYPEs and entity tricks', () => {
    assert.throws(() => parseDavXml('<!DOCTYPE x [<!ENTITY a "aaaa">]><d:multistatus xmlns:d="DAV:">&a;</d:multistatus>'), DavParseError);
  });
});

describe('user paths (S2)', () => {
  it('splits and checks every segment', () => {
    assert.deepEqual(parseUserPath('/Documents/Lessons/plan.md').segments, ['Documents', 'Lessons', 'plan.md']);
    assert.deepEqual(parseUserPath('', { allowRoot: true }).segments, []);
    for (const bad of ['../bob', 'a/../../b', '%2e%2e/x', 'a/%2E%2E', 'a?b', 'a#b', 'a\\b', 'a//b', 'x/%2F/y', '%00', 'a\u0001b']) {
      assert.throws(() => parseUserPath(bad), /not allowed/, bad);
    }
    assert.throws(() => parseUserPath(''), /not your home folder/);
  });
});

describe('the DAV fetch that tsdav uses', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET, users: USERS });
    client = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
  });
  after(async () => {
    await nc.close();
  });

  it("maps only URLs below this Nextcloud's DAV root, segment by segment", () => {
    const root = new URL('https://cloud.example/nc/remote.php/dav/');
    assert.deepEqual(davSegments(root, new URL('https://cloud.example/nc/remote.php/dav/calendars/alice/personal/')), {
      segments: ['calendars', 'alice', 'personal'],
      trailingSlash: true,
    });
    assert.deepEqual(davSegments(root, new URL('https://cloud.example/nc/remote.php/dav')), { segments: [], trailingSlash: true });
    for (const bad of [
      'https://evil.example/nc/remote.php/dav/x',
      'https://cloud.example/.well-known/caldav',
      'https://cloud.example/nc/remote.php/dav/a?b',
      'https://cloud.example/nc/remote.php/dav/a%2Fb',
      'https://cloud.example/nc/remote.php/davx/a',
    ]) {
      assert.equal(davSegments(root, new URL(bad)), null, bad);
    }
  });

  it('answers foreign URLs locally (nothing is sent) and sends the rest as the user with AppAPI headers', async () => {
    const fetch = createDavFetch(client.as(issueFromConfirmedTalkAuthor('alice')));
    const mark = nc.calls.length;
    for (const url of [`${nc.url}/.well-known/caldav`, 'https://evil.example/remote.php/dav/', `${nc.url}/remote.php/dav/../../ocs/v2.php/cloud/user`]) {
      const res = await fetch(url, { method: 'PROPFIND' });
      assert.equal(res.status, 404, url);
    }
    assert.equal(nc.calls.length, mark, 'no request left for a URL we did not build');
    const res = await fetch(`${nc.url}/remote.php/dav/`, {
      method: 'PROPFIND',
      headers: { Depth: '0' },
      body: '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:current-user-principal/></d:prop></d:propfind>',
    });
    assert.equal(res.status, 207);
    assert.match(await res.text(), /principals\/users\/alice/);
    assert.equal(nc.calls.at(-1)?.user, 'alice');
    assert.deepEqual(nc.headerViolations, []);
  });
});
