import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { NextcloudAuthError, NextcloudError, NextcloudNotFoundError, NextcloudTimeoutError, UnsafeRequestError } from '../../lib/nextcloud/errors.ts';
import { ActingUser, issueFromVerifiedHeader } from '../../lib/nextcloud/identity.ts';
import { runWithRequestId } from '../../lib/nextcloud/request-context.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { TEST_SECRET } from '../helpers/harness.ts';

describe('Nextcloud client against the fake Nextcloud', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    client = new NextcloudClient({ baseUrl: `${nc.url}/index.php`.replace(/\/index\.php$/, ''), appId: 'educai', appVersion: '0.1.0', appSecret: TEST_SECRET });
  });
  after(async () => nc.close());

  it('acts as the verified user with the exact AppAPI headers and unwraps OCS', async () => {
    nc.reset();
    const me = await runWithRequestId('req-42', () => client.as(issueFromVerifiedHeader('alice')).ocs<{ id: string }>('GET', '/ocs/v2.php/cloud/user'));
    assert.equal(me.id, 'alice');
    const call = nc.calls.at(-1)!;
    assert.equal(call.user, 'alice');
    assert.equal(call.headers['ex-app-id'], 'educai');
    assert.equal(call.headers['ex-app-version'], '0.1.0');
    assert.equal(call.headers['ocs-apirequest'], 'true');
    assert.equal(call.headers['aa-request-id'], 'req-42', 'the request id travels along');
    assert.equal(call.headers.cookie, undefined);
    assert.equal(call.query.get('format'), 'json');
    assert.deepEqual(nc.headerViolations, []);
  });

  it('maps failures to typed errors without response bodies', async () => {
    await assert.rejects(
      client.as(issueFromVerifiedHeader('alice')).ocs('GET', '/ocs/v2.php/cloud/users/{uid}/groups', { params: { uid: 'bob' } }),
      NextcloudNotFoundError,
    );
    const wrong = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '0.1.0', appSecret: 'not-the-secret-at-all' });
    await assert.rejects(wrong.as(issueFromVerifiedHeader('alice')).ocs('GET', '/ocs/v2.php/cloud/user'), NextcloudAuthError);
  });

  it('accepts only issued identities, and WebDAV never runs without a user', async () => {
    assert.throws(() => client.as({ uid: 'admin', source: 'appapi-request' } as unknown as ActingUser), TypeError);
    assert.throws(() => new ActingUser(Symbol('forged'), 'admin', 'appapi-request'), TypeError);
    await assert.rejects(client.system().dav('PROPFIND', '/files/{uid}', { params: { uid: 'alice' } }), NextcloudAuthError);
  });

  it('refuses path injection before anything is sent', async () => {
    nc.reset();
    await assert.rejects(
      client.as(issueFromVerifiedHeader('alice')).ocs('GET', '/ocs/v2.php/apps/spreed/api/v4/room/{token}', { params: { token: '../../cloud/users' } }),
      UnsafeRequestError,
    );
    assert.equal(nc.calls.length, 0);
  });
});

describe('Nextcloud client transport rules (S1)', () => {
  let server: Server;
  let base: string;
  let hits: Array<{ url: string; headers: Record<string, unknown> }> = [];
  before(async () => {
    server = createServer((req, res) => {
      hits.push({ url: req.url ?? '', headers: req.headers });
      if (req.url?.startsWith('/ocs/v2.php/redirect')) {
        res.writeHead(302, { Location: 'http://127.0.0.1:9/steal' }).end();
      } else if (req.url?.startsWith('/ocs/v2.php/slow')) {
        setTimeout(() => res.end('{}'), 2000);
      } else {
        res
          .writeHead(200, { 'Content-Type': 'application/json', 'Set-Cookie': 'nc_session=abc' })
          .end('{"ocs":{"meta":{"status":"ok","statuscode":200,"message":"OK"},"data":{"ok":true}}}');
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('follows no redirect and keeps no cookies', async () => {
    hits = [];
    const client = new NextcloudClient({ baseUrl: base, appId: 'educai', appVersion: '1', appSecret: TEST_SECRET });
    const alice = client.as(issueFromVerifiedHeader('alice'));
    await assert.rejects(alice.ocs('GET', '/ocs/v2.php/redirect'), (e: unknown) => e instanceof NextcloudError && e.status === 302);
    assert.equal(hits.length, 1, 'the redirect target was never contacted');
    await alice.ocs('GET', '/ocs/v2.php/ok');
    await alice.ocs('GET', '/ocs/v2.php/ok');
    assert.equal(hits.at(-1)!.headers.cookie, undefined, 'no cookie jar');
  });

  it('times out with a typed error', async () => {
    const client = new NextcloudClient({ baseUrl: base, appId: 'educai', appVersion: '1', appSecret: TEST_SECRET, timeoutMs: 100 });
    await assert.rejects(client.as(issueFromVerifiedHeader('alice')).ocs('GET', '/ocs/v2.php/slow'), NextcloudTimeoutError);
  });

  it('never sends the secret outside the Nextcloud origin', async () => {
    const before = hits.length;
    const client = new NextcloudClient({ baseUrl: base, appId: 'educai', appVersion: '1', appSecret: TEST_SECRET });
    const alice = client.as(issueFromVerifiedHeader('alice'));
    assert.equal(alice.davUrl('/files/{uid}/{*path}', { uid: 'alice', path: '//evil.example/x' }), `${base}/remote.php/dav/files/alice/evil.example/x`);
    assert.throws(() => alice.davUrl('/files/{uid}/{*path}', { uid: 'alice', path: 'a/../../bob' }), UnsafeRequestError);
    await assert.rejects(alice.ocs('GET', '//evil.example/ocs'), UnsafeRequestError);
    await assert.rejects(
      alice.dav('GET', '/files/{uid}/x', { params: { uid: 'alice' }, headers: { 'X-Injected': 'a\r\nAuthorization: x' } }),
      UnsafeRequestError,
    );
    assert.equal(hits.length, before, 'nothing was sent');
  });
});
