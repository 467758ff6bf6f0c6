import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  analyzePolicy,
  batchLoopThreshold,
  destructivePolicy,
  policyFromMcpAnnotations,
  readPolicy,
  searchPolicy,
  transcribePolicy,
  unknownPolicy,
  writePolicy,
} from '../../lib/tools/tool-policy.ts';
import type { ToolPolicy } from '../../lib/tools/tool-policy.ts';

test('constructors carry the upstream policy tuples', () => {
  assert.deepEqual(searchPolicy(), { kind: 'search', readOnly: true, idempotent: true, destructive: false, loopThreshold: 10 });
  assert.deepEqual(readPolicy(), { kind: 'read', readOnly: true, idempotent: true, destructive: false, loopThreshold: 8 });
  assert.deepEqual(analyzePolicy(), { kind: 'analyze', readOnly: true, idempotent: true, destructive: false, loopThreshold: 8 });
  assert.deepEqual(transcribePolicy(), { kind: 'transcribe', readOnly: true, idempotent: true, destructive: false, loopThreshold: 8 });
  assert.deepEqual(writePolicy(), { kind: 'write', readOnly: false, idempotent: false, destructive: false, loopThreshold: 4 });
  assert.deepEqual(destructivePolicy(), { kind: 'write', readOnly: false, idempotent: false, destructive: true, loopThreshold: 4 });
  assert.deepEqual(unknownPolicy(), { kind: 'unknown', readOnly: false, idempotent: false, destructive: false, loopThreshold: 4 });
});

test('constructors return fresh objects', () => {
  const a = searchPolicy();
  a.loopThreshold = 1;
  assert.equal(searchPolicy().loopThreshold, 10);
});

test('destructiveHint wins over everything', () => {
  assert.deepEqual(policyFromMcpAnnotations('web_search', 'Search the web', { destructiveHint: true }), destructivePolicy());
  assert.deepEqual(policyFromMcpAnnotations('search', 'x', { destructiveHint: true, readOnlyHint: true }), destructivePolicy());
});

test('readOnlyHint wins over name heuristics', () => {
  assert.deepEqual(policyFromMcpAnnotations('delete_everything', 'Deletes all', { readOnlyHint: true }), readPolicy());
  assert.deepEqual(policyFromMcpAnnotations('web_search', 'Search the web', { readOnlyHint: true }), readPolicy());
});

test('an explicit readOnlyHint:false is never read-only, and destructive unless said otherwise', () => {
  assert.deepEqual(policyFromMcpAnnotations('web_search', 'Search the web', { readOnlyHint: false }), destructivePolicy());
  assert.deepEqual(policyFromMcpAnnotations('web_search', 'Search the web', { readOnlyHint: false, destructiveHint: false }), writePolicy());
});

test('search words in the name give a search policy', () => {
  for (const name of ['web_search', 'lookupCustomer', 'query-index', 'find_files', 'rag', 'SearchDocs', 'searches', 'queries']) {
    assert.deepEqual(policyFromMcpAnnotations(name, ''), searchPolicy(), name);
  }
});

test('mutating words give a write policy, for every upstream token', () => {
  const tokens = [
    'add',
    'append',
    'commit',
    'create',
    'delete',
    'deploy',
    'disable',
    'enable',
    'execute',
    'install',
    'log',
    'merge',
    'move',
    'patch',
    'post',
    'push',
    'put',
    'remove',
    'rename',
    'run',
    'save',
    'send',
    'set',
    'store',
    'uninstall',
    'update',
    'upload',
    'write',
  ];
  for (const token of tokens) {
    assert.deepEqual(policyFromMcpAnnotations(`${token}_item`, ''), writePolicy(), token);
    assert.deepEqual(policyFromMcpAnnotations(`item${token[0]!.toUpperCase()}${token.slice(1)}`, ''), writePolicy(), token);
  }
  assert.deepEqual(policyFromMcpAnnotations('tool', 'Creates a ticket'), writePolicy());
  assert.deepEqual(policyFromMcpAnnotations('tool', 'Deleted items are gone'), writePolicy());
  assert.deepEqual(policyFromMcpAnnotations('tool', 'Updating records'), writePolicy());
});

test('a mutating word beats a search word (stricter than upstream)', () => {
  assert.deepEqual(policyFromMcpAnnotations('run_query', 'Runs SQL'), writePolicy());
  assert.deepEqual(policyFromMcpAnnotations('search_and_delete', ''), writePolicy());
  assert.deepEqual(policyFromMcpAnnotations('helper', 'Find duplicates and delete them'), writePolicy());
});

test('the name is judged before the description', () => {
  assert.deepEqual(policyFromMcpAnnotations('web_search', 'Search the web. Set count to limit results.'), searchPolicy());
  assert.deepEqual(policyFromMcpAnnotations('create_page', 'Search first, then write'), writePolicy());
  assert.deepEqual(policyFromMcpAnnotations('helper', 'Look things up with a query'), searchPolicy());
});

test('words are matched whole: substrings do not count', () => {
  // "storage" contains "rag", "settings" contains "set", "output" contains "put", "catalog" contains "log".
  for (const [name, description] of [
    ['storage_info', ''],
    ['get_settings', ''],
    ['format_output', ''],
    ['catalog', 'The catalogue'],
    ['drag_info', 'Login details'],
  ]) {
    assert.deepEqual(policyFromMcpAnnotations(name!, description!), unknownPolicy(), name);
  }
});

test('unclassified remote tools are non-read-only with threshold 4', () => {
  const p = policyFromMcpAnnotations('mensa_openings', 'Opening hours of the canteen');
  assert.deepEqual(p, unknownPolicy());
  assert.equal(p.readOnly, false);
  assert.equal(p.loopThreshold, 4);
});

test('malformed inputs do not throw', () => {
  const bad = [undefined, null, 42, {}, []] as unknown[];
  for (const value of bad) {
    assert.doesNotThrow(() => policyFromMcpAnnotations(value as string, value as string, value as undefined));
  }
  assert.deepEqual(policyFromMcpAnnotations('x', 'y', null as unknown as undefined), unknownPolicy());
  assert.deepEqual(policyFromMcpAnnotations('x', 'y', { readOnlyHint: 'yes' as unknown as boolean }), unknownPolicy());
});

test('batch threshold: any mutating or destructive tool → 4', () => {
  assert.equal(batchLoopThreshold([searchPolicy(), writePolicy()]), 4);
  assert.equal(batchLoopThreshold([searchPolicy(), unknownPolicy()]), 4);
  const odd: ToolPolicy = { ...readPolicy(), destructive: true };
  assert.equal(batchLoopThreshold([odd]), 4);
});

test('batch threshold: searches only → 10, other read-only mixes → 8', () => {
  assert.equal(batchLoopThreshold([searchPolicy()]), 10);
  assert.equal(batchLoopThreshold([searchPolicy(), searchPolicy()]), 10);
  assert.equal(batchLoopThreshold([searchPolicy(), readPolicy()]), 8);
  assert.equal(batchLoopThreshold([analyzePolicy()]), 8);
  assert.equal(batchLoopThreshold([transcribePolicy(), readPolicy()]), 8);
});

test('batch threshold: a policy asking for less keeps it; nonsense thresholds are ignored', () => {
  assert.equal(batchLoopThreshold([{ ...searchPolicy(), loopThreshold: 3 }]), 3);
  assert.equal(batchLoopThreshold([{ ...searchPolicy(), loopThreshold: 50 }]), 10);
  assert.equal(batchLoopThreshold([{ ...searchPolicy(), loopThreshold: Number.NaN }]), 10);
  assert.equal(batchLoopThreshold([{ ...searchPolicy(), loopThreshold: 0 }]), 10);
});

test('batch threshold: empty or malformed batches get the strictest value', () => {
  assert.equal(batchLoopThreshold([]), 4);
  assert.equal(batchLoopThreshold(null as unknown as ToolPolicy[]), 4);
  assert.equal(batchLoopThreshold([null as unknown as ToolPolicy, searchPolicy()]), 4);
});
