import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verifyAppApiHeaders } from '../../lib/appapi/auth-header.ts';
import { isIssued } from '../../lib/nextcloud/identity.ts';

const SECRET = 'app-secret-for-tests-0123456789';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const headers = (over: Record<string, string | undefined> = {}) => ({
  'ex-app-id': 'educai',
  'ex-app-version': '0.1.0',
  'authorization-app-api': b64(`alice:${SECRET}`),
  ...over,
});

describe('AppAPI header verification', () => {
  it('accepts the right secret and issues the acting user', () => {
    const r = verifyAppApiHeaders(headers(), 'educai', SECRET);
    assert.equal(r.ok, true);
    assert.ok(r.ok && r.uid === 'alice' && r.user?.uid === 'alice' && isIssued(r.user));
  });

  it('treats an empty uid as no user', () => {
    const r = verifyAppApiHeaders(headers({ 'authorization-app-api': b64(`:${SECRET}`) }), 'educai', SECRET);
    assert.ok(r.ok && r.uid === '' && r.user === null);
  });

  it('splits at the first colon, so a secret containing colons still verifies', () => {
    const secret = 'a:b:c-secret-with-colons';
    const r = verifyAppApiHeaders(headers({ 'authorization-app-api': b64(`bob:${secret}`) }), 'educai', secret);
    assert.ok(r.ok && r.uid === 'bob');
  });

  const refusals: Array<[string, Record<string, string | undefined>, string]> = [
    ['missing auth header', { 'authorization-app-api': undefined }, 'missing-headers'],
    ['missing app id', { 'ex-app-id': undefined }, 'missing-headers'],
    ['missing version', { 'ex-app-version': undefined }, 'missing-headers'],
    ['wrong app id', { 'ex-app-id': 'other' }, 'wrong-app-id'],
    ['empty version', { 'ex-app-version': ' ' }, 'empty-version'],
    ['not base64', { 'authorization-app-api': 'Basic abc!' }, 'malformed'],
    ['no colon', { 'authorization-app-api': b64(SECRET) }, 'malformed'],
    ['wrong secret', { 'authorization-app-api': b64('alice:nope') }, 'wrong-secret'],
    ['secret prefix only', { 'authorization-app-api': b64(`alice:${SECRET.slice(0, -1)}`) }, 'wrong-secret'],
    ['uid with a slash', { 'authorization-app-api': b64(`../admin:${SECRET}`) }, 'malformed'],
  ];
  for (const [name, over, reason] of refusals) {
    it(`refuses: ${name}`, () => {
      const r = verifyAppApiHeaders(headers(over), 'educai', SECRET);
      assert.deepEqual(r, { ok: false, reason });
    });
  }
});
