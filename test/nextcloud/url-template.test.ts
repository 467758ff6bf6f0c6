import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UnsafeRequestError } from '../../lib/nextcloud/errors.ts';
import { buildUrl, expandPath, splitSafePath } from '../../lib/nextcloud/url-template.ts';

describe('URL templates (S2)', () => {
  it('encodes each parameter as one segment', () => {
    assert.equal(expandPath('/files/{uid}/{*path}', { uid: 'alice', path: 'Talk/a b/ü.txt' }, 't'), '/files/alice/Talk/a%20b/%C3%BC.txt');
    assert.equal(expandPath('/chat/{token}/{id}', { token: 'abc123', id: 42 }, 't'), '/chat/abc123/42');
  });

  const attacks = ['..', '.', '', 'a/b', '%2e%2e', '%252e%252e', 'a?x=1', 'a#frag', 'a\\b', 'a\u0000', '%2F', '%3F'];
  for (const value of attacks) {
    it(`refuses the segment ${JSON.stringify(value)}`, () => {
      assert.throws(() => expandPath('/x/{id}', { id: value }, 't'), UnsafeRequestError);
    });
  }

  it('refuses traversal inside multi-segment paths', () => {
    for (const p of ['a/../b', 'a/%2e%2e/b', 'a//b', './a']) assert.throws(() => splitSafePath(p, 't'), UnsafeRequestError, p);
    assert.deepEqual(splitSafePath('/a/b/', 't'), ['a', 'b']);
  });

  it('keeps the base path and query from typed fields only', () => {
    const url = buildUrl('https://cloud.example/nc', '/ocs/v2.php/x', { format: 'json', limit: 5, skip: undefined }, 't');
    assert.equal(url.toString(), 'https://cloud.example/nc/ocs/v2.php/x?format=json&limit=5');
    assert.throws(() => buildUrl('https://cloud.example', '//evil.example/x', undefined, 't'), UnsafeRequestError);
  });
});
