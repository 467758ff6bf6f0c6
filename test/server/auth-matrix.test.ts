import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startHarness, TEST_SECRET, type Harness } from '../helpers/harness.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('AppAPI auth matrix', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ dialect: 'sqlite' });
  });
  after(async () => h.close());

  it('keeps /heartbeat open', async () => {
    const r = await h.fetch('/heartbeat');
    assert.equal(r.status, 200);
  });

  const bad: Array<[string, (h: Harness) => Record<string, string>]> = [
    ['no headers', () => ({})],
    ['wrong secret', (h) => h.headers('alice', { 'AUTHORIZATION-APP-API': b64('alice:not-the-secret') })],
    ['malformed header', (h) => h.headers('alice', { 'AUTHORIZATION-APP-API': '%%%not base64%%%' })],
    ['header without colon', (h) => h.headers('alice', { 'AUTHORIZATION-APP-API': b64(TEST_SECRET) })],
    ['wrong app id', (h) => h.headers('alice', { 'EX-APP-ID': 'other_app' })],
    ['empty version', (h) => h.headers('alice', { 'EX-APP-VERSION': '' })],
  ];
  for (const [name, headers] of bad) {
    it(`refuses ${name} with 401 JSON`, async () => {
      for (const [method, path] of [
        ['GET', '/api/v1/me'],
        ['POST', '/init'],
        ['POST', '/talk_bot'],
      ] as const) {
        const r = await h.fetch(path, { method, headers: headers(h) });
        assert.equal(r.status, 401, `${method} ${path}`);
        assert.equal(r.json?.error?.code, 'unauthorized');
        assert.equal(typeof r.json?.error?.message, 'string');
      }
    });
  }

  it('refuses the empty user on a user route', async () => {
    const r = await h.fetch('/api/v1/me', { headers: h.headers('') });
    assert.equal(r.status, 401);
    assert.equal(r.json.error.code, 'user_required');
  });

  it('gives a user their identity and asks Nextcloud about admin rights', async () => {
    const alice = await h.fetch('/api/v1/me', { headers: h.browserHeaders('alice') });
    assert.equal(alice.status, 200);
    assert.equal(alice.json.uid, 'alice');
    assert.equal(alice.json.admin, false);
    assert.equal(alice.headers.get('cache-control'), 'no-store');
    assert.equal(alice.headers.get('x-content-type-options'), 'nosniff');
    const admin = await h.fetch('/api/v1/me', { headers: h.browserHeaders('admin') });
    assert.equal(admin.json.admin, true);
    const asked = h.nc.calls.filter((c) => c.path.endsWith('/cloud/user'));
    assert.deepEqual(new Set(asked.map((c) => c.user)), new Set(['alice', 'admin']), 'admin rights are read as the user');
  });

  it('never forwards the browser password or cookies to Nextcloud, and never logs header values', async () => {
    await h.fetch('/api/v1/me', { headers: h.browserHeaders('bob') });
    for (const call of h.nc.calls) {
      assert.equal(call.headers.authorization, undefined);
      assert.equal(call.headers.cookie, undefined);
    }
    const all = h.logLines.join('');
    assert.ok(!all.includes(TEST_SECRET), 'the secret is not logged');
    assert.ok(!all.includes(b64(`alice:${TEST_SECRET}`)), 'auth header values are not logged');
    assert.ok(!all.includes('YWxpY2U6cGFzc3dvcmQ='), 'the browser password is not logged');
    assert.ok(all.includes('AppAPI authentication refused'), 'refusals are logged');
  });
});
