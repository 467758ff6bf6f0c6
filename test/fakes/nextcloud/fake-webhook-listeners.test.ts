// The fake webhook_listeners against its capture on Nextcloud 33 (test/fixtures/nextcloud33/webhook-listeners.json).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeNextcloud } from './server.ts';

const capture = JSON.parse(readFileSync(new URL('../../fixtures/nextcloud33/webhook-listeners.json', import.meta.url), 'utf8')) as Record<string, any>;
const SECRET = 'fake-webhook-listeners-secret-0123456789';
const W = '/ocs/v2.php/apps/webhook_listeners/api/v1/webhooks?format=json';

const body = (step: string) => JSON.parse(capture[step].response.body);
const keys = (o: object) => Object.keys(o).sort();

describe('fake webhook_listeners matches the Nextcloud 33 capture', () => {
  let nc: FakeNextcloud;
  const call = async (method: string, path: string, uid: string | null, payload?: unknown, secret = SECRET) => {
    const headers: Record<string, string> = { 'OCS-APIRequest': 'true', Accept: 'application/json', 'EX-APP-ID': 'educai', 'EX-APP-VERSION': '1.0.0' };
    if (uid !== null) headers['AUTHORIZATION-APP-API'] = Buffer.from(`${uid}:${secret}`).toString('base64');
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${nc.url}${path}`, { method, headers, body: payload === undefined ? undefined : JSON.stringify(payload) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const written = capture['register-written'].request.body;

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: SECRET });
  });
  after(async () => nc.close());

  it('answers 404 with OCS 998 while the app is missing, like Nextcloud 29 or a disabled webhook_listeners', async () => {
    const res = await call('POST', W, '', written);
    assert.equal(res.status, capture['register-while-webhook_listeners-disabled'].response.status);
    assert.equal(res.json.ocs.meta.statuscode, body('register-while-webhook_listeners-disabled').ocs.meta.statuscode);
  });

  it('registers for the ExApp with the empty user, refuses a plain user, a wrong secret and an unknown event, lists and removes by app id', async () => {
    nc.webhookListeners.available = true;
    const ok = await call('POST', W, '', written);
    assert.equal(ok.status, 200);
    assert.deepEqual(keys(ok.json.ocs.data), keys(body('register-written').ocs.data));
    assert.equal(ok.json.ocs.data.appId, 'educai');
    assert.deepEqual(ok.json.ocs.data.eventFilter, body('register-written').ocs.data.eventFilter);
    for (const [step, uid, payload, secret] of [
      ['register-as-user-alice', 'alice', written, SECRET],
      ['register-wrong-secret', '', written, 'wrong'],
      ['register-unknown-event', '', capture['register-unknown-event'].request.body, SECRET],
    ] as const) {
      const res = await call('POST', W, uid, payload, secret);
      assert.equal(res.status, capture[step].response.status, step);
      assert.equal(res.json.ocs.meta.statuscode, body(step).ocs.meta.statuscode, step);
    }
    const listed = await call('GET', `${W}&uri=%2Fwebhooks%2Ffiles`, '');
    assert.equal(listed.json.ocs.data.length, 1);
    const removed = await call('DELETE', '/ocs/v2.php/apps/webhook_listeners/api/v1/webhooks/byappid/educai?format=json', '');
    assert.equal(removed.json.ocs.data, 1);
    assert.equal(nc.webhookListeners.listeners.size, 0);
  });

  it('queues a delivery shaped like the captured one for a matching WebDAV change only', async () => {
    for (const step of ['register-written', 'register-renamed', 'register-deleted']) await call('POST', W, '', capture[step].request.body);
    nc.dav.files.mkdir('alice', 'Talk AI');
    const dav = (method: string, path: string, extra: Record<string, string> = {}, content?: string) =>
      fetch(`${nc.url}/remote.php/dav/files/alice/${path}`, {
        method,
        headers: {
          'EX-APP-ID': 'educai',
          'EX-APP-VERSION': '1.0.0',
          'OCS-APIRequest': 'true',
          'AUTHORIZATION-APP-API': Buffer.from(`alice:${SECRET}`).toString('base64'),
          ...extra,
        },
        body: content,
      });
    await dav('PUT', 'Talk%20AI/cap.md', {}, '# Cap\n');
    await dav('MOVE', 'Talk%20AI/cap.md', { Destination: `${nc.url}/remote.php/dav/files/alice/Talk%20AI/cap2.md` });
    await dav('PUT', 'Talk%20AI/cap.png', {}, 'not an image');
    await dav('DELETE', 'Talk%20AI/cap2.md');
    const real = capture['deliveries'] as Array<{ headers: Record<string, string>; body: string }>;
    const fake = nc.webhookListeners.jobs;
    assert.equal(fake.length, real.length, 'the .png was filtered out, as on the server');
    const transport = new Set(['host', 'content-length', 'accept-encoding']);
    for (const [i, r] of real.entries()) {
      const f = fake[i]!;
      assert.deepEqual(
        keys(f.headers),
        keys(r.headers).filter((k) => !transport.has(k)),
        'no Content-Type, AA-REQUEST-ID "CLI"',
      );
      assert.equal(Buffer.from(f.headers['authorization-app-api']!, 'base64').toString().split(':')[0], 'alice', "the changing user's header");
      const rb = JSON.parse(r.body);
      const fb = JSON.parse(f.body);
      assert.deepEqual(keys(fb), keys(rb));
      assert.deepEqual(keys(fb.event), keys(rb.event));
      assert.equal(fb.event.class, rb.event.class);
      assert.deepEqual(fb.user, rb.user);
    }
  });
});
