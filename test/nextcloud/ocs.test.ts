import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NextcloudAuthError, NextcloudError, NextcloudNotFoundError } from '../../lib/nextcloud/errors.ts';
import { unwrapOcs } from '../../lib/nextcloud/ocs.ts';
import { readFixture } from '../helpers/fixtures.ts';

interface Exchange {
  response: { status: number; body: string };
}

describe('OCS envelopes from the captures', () => {
  const errors = readFixture('79-ocs-sharing-errors-v1-vs-v2.json') as Record<string, Exchange>;

  it('unwraps v1 success (HTTP 200, statuscode 100)', () => {
    const ex = readFixture('10-init-progress-100.json') as Exchange;
    assert.deepEqual(unwrapOcs('t', ex.response.status, ex.response.body), []);
  });

  it('unwraps v2 success', () => {
    const ex = readFixture('20-ocs-cloud-user-as-alice.json') as Exchange;
    assert.equal(unwrapOcs<{ id: string }>('t', ex.response.status, ex.response.body).id, 'alice');
  });

  it('maps v1 and v2 errors to the same typed error', () => {
    for (const key of ['v1ShareWithNonexistentUser', 'v2ShareWithNonexistentUser', 'v1GetUnknownShareId', 'v2GetUnknownShareId']) {
      const ex = errors[key]!;
      assert.throws(
        () => unwrapOcs('t', ex.response.status, ex.response.body),
        (err: unknown) => {
          assert.ok(err instanceof NextcloudError, key);
          assert.ok(err.status >= 400, `${key}: ${err.status}`);
          return true;
        },
      );
    }
    const unknownId = errors.v2GetUnknownShareId!;
    assert.throws(() => unwrapOcs('t', unknownId.response.status, unknownId.response.body), NextcloudNotFoundError);
  });

  it('handles the non-envelope CSRF answer and the empty 200 of a wrong secret', () => {
    const csrf = errors.v2WithoutOcsApiRequestHeader!;
    assert.throws(
      () => unwrapOcs('t', csrf.response.status, csrf.response.body),
      (e: unknown) => e instanceof NextcloudError && e.status === 412,
    );
    const bad = errors.v2BadAppApiSecret!;
    assert.throws(() => unwrapOcs('t', bad.response.status, bad.response.body), NextcloudError);
    const badUser = errors.v2BadAppApiSecretCloudUser!;
    assert.throws(() => unwrapOcs('t', badUser.response.status, badUser.response.body), NextcloudAuthError);
  });
});
