// The per-call cookie session for Collectives 2.x (capture 91, contract corrections): one jar per
// (user, call), cookies only from and to Nextcloud's origin, discarded afterwards; the fake refuses
// a stale cookie of another user; plain calls never carry a cookie (S1 unchanged).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { CookieJar, CookieJarClosedError } from '../../lib/nextcloud/cookie-jar.ts';
import type { CookieSession } from '../../lib/nextcloud/cookie-session.ts';
import { NextcloudAuthError, UnsafeRequestError } from '../../lib/nextcloud/errors.ts';
import { issueFromVerifiedHeader } from '../../lib/nextcloud/identity.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { SESSION_COOKIE } from '../fakes/nextcloud/web-sessions.ts';
import { TEST_SECRET } from '../helpers/harness.ts';

describe('CookieJar', () => {
  const origin = 'https://cloud.example.com';
  const here = new URL('https://cloud.example.com/index.php/csrftoken');

  it('keeps cookies only from its own origin and host, and drops expired ones', () => {
    const jar = new CookieJar(origin);
    jar.store(here, ['a=1; path=/; HttpOnly', 'b=2; Domain=cloud.example.com', 'c=3; Domain=.evil.example', 'bad name=4', 'd=5;Max-Age=0']);
    jar.store(new URL('https://evil.example/x'), ['e=6']);
    assert.equal(jar.headerFor(here), 'a=1; b=2');
    jar.store(here, ['a=deleted; expires=Thu, 01 Jan 1970 00:00:00 GMT']);
    assert.equal(jar.headerFor(here), 'b=2');
    assert.throws(() => jar.headerFor(new URL('https://evil.example/')), CookieJarClosedError, 'never sent elsewhere');
  });

  it('refuses every use once discarded', () => {
    const jar = new CookieJar(origin);
    jar.store(here, ['a=1']);
    jar.discard();
    assert.equal(jar.size, 0);
    assert.throws(() => jar.headerFor(here), CookieJarClosedError);
    assert.throws(() => jar.store(here, ['a=2']), CookieJarClosedError);
  });
});

describe('cookie sessions against the fake Nextcloud (capture 91)', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  const alice = issueFromVerifiedHeader('alice');
  const bob = issueFromVerifiedHeader('bob');

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET });
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '1.0.0', appSecret: TEST_SECRET });
    nc.collectives.generation = 2;
  });
  after(async () => nc.close());
  beforeEach(() => {
    nc.reset();
    nc.webSessions.refused.length = 0;
  });

  it('without a session the 2.x API answers 412 CSRF check failed, and plain calls send no cookie', async () => {
    const res = await client.as(alice).web('GET', '/index.php/apps/collectives/_api', { allowStatuses: [412] });
    assert.equal(res.status, 412);
    assert.deepEqual(res.json, { message: 'CSRF check failed' });
    await client.as(alice).ocs('GET', '/ocs/v2.php/cloud/user');
    for (const c of nc.calls) assert.equal(c.headers.cookie, undefined);
    assert.deepEqual(nc.headerViolations, []);
  });

  it('one session per call: token, cookies, the user check and the API, then the jar is gone', async () => {
    let kept: CookieSession | null = null;
    const data = await client.as(alice).withCookieSession(async (web) => {
      kept = web;
      await web.confirmUser();
      return (await web.json('GET', '/index.php/apps/collectives/_api')).json;
    });
    assert.deepEqual(data, { data: [] });
    assert.deepEqual(
      nc.calls.map((c) => `${c.method} ${c.path}`),
      ['GET /index.php/csrftoken', 'GET /ocs/v2.php/cloud/user', 'GET /index.php/apps/collectives/_api'],
    );
    assert.equal(nc.calls[0]!.headers.cookie, undefined, 'the first call has no cookie yet');
    for (const c of nc.calls.slice(1)) assert.match(c.headers.cookie ?? '', new RegExp(`${SESSION_COOKIE}=`), `${c.path} carries the session`);
    assert.equal(nc.calls[2]!.headers['requesttoken'], nc.webSessions.opened.at(-1)!.token);
    assert.ok(nc.calls.every((c) => c.user === 'alice'));
    assert.deepEqual(nc.headerViolations, []);
    await assert.rejects(kept!.json('GET', '/index.php/apps/collectives/_api'), CookieJarClosedError, "a finished call's session cannot be used again");
  });

  it('two users in a row get two sessions; a stale cookie of another user is refused by Nextcloud', async () => {
    await client.as(alice).withCookieSession((web) => web.confirmUser());
    await client.as(bob).withCookieSession((web) => web.confirmUser());
    const [s1, s2] = nc.webSessions.opened.slice(-2);
    assert.equal(s1!.uid, 'alice');
    assert.equal(s2!.uid, 'bob');
    assert.notEqual(s1!.id, s2!.id);
    assert.equal(nc.webSessions.refused.length, 0);
    // What the per-call jar prevents: alice's cookies reused for bob.
    const stale = new CookieJar(nc.url);
    await client.as(alice).web('GET', '/index.php/csrftoken', { jar: stale });
    await assert.rejects(client.as(bob).ocs('GET', '/ocs/v2.php/cloud/user', { jar: stale }), NextcloudAuthError);
    assert.equal(nc.webSessions.refused.length, 1);
    assert.equal(nc.webSessions.refused[0]!.owner, 'alice');
    assert.equal(nc.webSessions.refused[0]!.sentAs, 'bob');
    stale.discard();
  });

  it('a jar never crosses to another origin or to the system identity (S1)', async () => {
    const foreign = new CookieJar('http://127.0.0.2:9');
    await assert.rejects(client.as(alice).web('GET', '/index.php/csrftoken', { jar: foreign }), UnsafeRequestError);
    const own = new CookieJar(nc.url);
    await assert.rejects(client.system().ocs('GET', '/ocs/v2.php/cloud/user', { jar: own }), UnsafeRequestError);
    await assert.rejects(client.as(alice).web('GET', '/remote.php/dav/files/alice/' as string), /below \/index\.php/);
  });

  it('follows no redirect and keeps no cookie from one', async () => {
    let hits = 0;
    const server: Server = createServer((_req, res) => {
      hits++;
      res.writeHead(302, { location: 'http://127.0.0.1:9/steal', 'set-cookie': 'x=1; path=/' }).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const c = new NextcloudClient({ baseUrl: url, appId: 'educai', appVersion: '1.0.0', appSecret: TEST_SECRET });
    const jar = new CookieJar(url);
    await assert.rejects(c.as(alice).web('GET', '/index.php/csrftoken', { jar }), /redirect/);
    assert.equal(hits, 1);
    assert.equal(jar.size, 0);
    await new Promise<void>((r) => server.close(() => r()));
  });
});
