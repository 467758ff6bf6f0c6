import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '../../lib/validation/canonical-json.ts';
import { actionHash } from '../../lib/confirmations/canonical.ts';
import { toolHash, toolListHash } from '../../lib/mcp/mcp-tool-review.ts';

test('RFC 8785 section 3.2.3 example: sorted keys, ES number form, minimal string escapes', () => {
  const input = JSON.parse(
    '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  );
  assert.equal(
    canonicalJson(input),
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
  );
});

test('an own "__proto__" key is part of the form, so two actions that differ only there hash apart', () => {
  const withProto = JSON.parse('{"path":"/a","__proto__":{"admin":true}}') as Record<string, unknown>;
  assert.equal(canonicalJson(withProto), '{"__proto__":{"admin":true},"path":"/a"}');
  const base = { userUid: 'alice', botId: 'b', roomToken: 'r', providerId: 'p', tool: 't', binding: {} };
  assert.notEqual(actionHash({ ...base, args: withProto }), actionHash({ ...base, args: { path: '/a' } }));
});

test('values JSON cannot carry exactly are refused rather than hashed as something else', () => {
  assert.throws(() => canonicalJson({ n: Number.NaN }));
  assert.throws(() => canonicalJson({ n: Number.POSITIVE_INFINITY }));
  assert.throws(() => canonicalJson({ s: '\ud800' }));
  assert.throws(() => canonicalJson(undefined), /no JSON form/);
});

test('undefined members are left out and undefined array items become null, as JSON.stringify does', () => {
  assert.equal(canonicalJson({ b: undefined, a: [undefined, 1] }), '{"a":[null,1]}');
});

// Pending confirmations and admins' MCP approvals store these hashes; the switch to RFC 8785
// must not turn every stored approval into "changed". The values were computed by the copies this replaced.
test('hashes stored before the switch to RFC 8785 stay the same', () => {
  const action = {
    userUid: 'alice',
    botId: 'b1',
    roomToken: 'r1',
    providerId: 'first-party',
    tool: 'files_delete',
    args: { path: '/Notes/ä.md', nested: { z: 1, a: [1, 2.5, 'x', null, true] }, n: 1e21 },
    binding: { fileId: 42, etag: 'abc' },
  };
  assert.equal(actionHash(action), '44bcc1a719063de39b87e8b4a7b62b7d2e8d861c35a6eedfebbe7e11fa2c9af4');
  assert.equal(actionHash({ ...action, sealed: 'CIPHER', execution: '{"mode":"user"}' }), '36b1fed314ee0aea600a7049c946ac72e33f1f79d1c9f65689f50da2a0876fb7');
  const tool = {
    name: 'search',
    description: 'Search things',
    inputSchema: { type: 'object', properties: { q: { type: 'string' }, limit: { type: 'integer', minimum: 1 } }, required: ['q'] },
    meta: { configSchema: { fields: {} } },
  } as unknown as Parameters<typeof toolHash>[0];
  assert.equal(toolHash(tool), '47fe124fd4208b18dc60bb11a52ea13451254dbbf93c7bcd243d15fa39c782fd');
  assert.equal(toolListHash([tool, { ...tool, name: 'fetch', meta: {} }]), 'c4394ea0c29cc9248ba4eeda356eaf68ad7ff516ba3d45985847a3e0d87493ab');
});
