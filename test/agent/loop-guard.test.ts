import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LoopGuard, MAX_TOOL_ITERATIONS, callSignature } from '../../lib/agent/loop-guard.ts';
import { readPolicy, searchPolicy, writePolicy } from '../../lib/tools/tool-policy.ts';

function argsJsonOf(signature: string): string {
  const parts = JSON.parse(signature) as Array<[string, string]>;
  return parts[0]![1];
}

test('keys are sorted at every depth', () => {
  const a = callSignature([{ name: 't', args: { b: 1, a: { d: 1, c: 2 } } }]);
  const b = callSignature([{ name: 't', args: { a: { c: 2, d: 1 }, b: 1 } }]);
  assert.equal(a, b);
  assert.equal(argsJsonOf(a), '{"a":{"c":2,"d":1},"b":1}');
});

test('whitespace inside strings is collapsed and trimmed', () => {
  assert.equal(callSignature([{ name: 't', args: { q: '  hello \n\t world ' } }]), callSignature([{ name: 't', args: { q: 'hello world' } }]));
});

test('strings are cut to 250 characters, counted as code points', () => {
  const long = '😀'.repeat(300);
  const json = argsJsonOf(callSignature([{ name: 't', args: [long] }]));
  const value = (JSON.parse(json) as string[])[0]!;
  assert.equal([...value].length, 250);
  assert.equal(callSignature([{ name: 't', args: { q: 'x'.repeat(250) + 'A' } }]), callSignature([{ name: 't', args: { q: 'x'.repeat(250) + 'B' } }]));
});

test('the argument JSON is cut to 400 characters', () => {
  const args = { a: 'x'.repeat(240), b: 'y'.repeat(240), c: 'z' };
  const json = argsJsonOf(callSignature([{ name: 't', args }]));
  assert.equal([...json].length, 400);
  assert.equal(callSignature([{ name: 't', args }]), callSignature([{ name: 't', args: { ...args, c: 'different, but beyond the cut' } }]));
});

test('floats are rounded to 6 places, integers kept', () => {
  assert.equal(callSignature([{ name: 't', args: { s: 0.30000000001 } }]), callSignature([{ name: 't', args: { s: 0.3 } }]));
  assert.notEqual(callSignature([{ name: 't', args: { s: 0.3 } }]), callSignature([{ name: 't', args: { s: 0.300002 } }]));
  assert.equal(argsJsonOf(callSignature([{ name: 't', args: { n: 12, m: -0 } }])), '{"m":0,"n":12}');
});

test('different arguments give different signatures', () => {
  assert.notEqual(
    callSignature([{ name: 'rag_search_documents', args: { query: 'cats' } }]),
    callSignature([{ name: 'rag_search_documents', args: { query: 'dogs' } }]),
  );
  assert.notEqual(callSignature([{ name: 'a', args: { q: 1 } }]), callSignature([{ name: 'b', args: { q: 1 } }]));
});

test('argument JSON text and objects give the same signature', () => {
  assert.equal(callSignature([{ name: 't', args: '{ "b": 2, "a": "x  y" }' }]), callSignature([{ name: 't', args: { a: 'x y', b: 2 } }]));
  assert.equal(callSignature([{ name: 't', args: '' }]), callSignature([{ name: 't', args: {} }]));
  assert.equal(callSignature([{ name: 't', args: undefined }]), callSignature([{ name: 't', args: {} }]));
});

test('the order of calls within a batch does not matter', () => {
  assert.equal(
    callSignature([
      { name: 'a', args: { q: 1 } },
      { name: 'b', args: { q: 2 } },
    ]),
    callSignature([
      { name: 'b', args: { q: 2 } },
      { name: 'a', args: { q: 1 } },
    ]),
  );
});

test('malformed calls and arguments do not throw', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  const throwing = {
    get boom(): never {
      throw new Error('no');
    },
  };
  const inputs: unknown[] = [
    [],
    [null],
    [42],
    [{}],
    [{ name: 5, args: 1 }],
    [{ name: 't', args: 'not json' }],
    [{ name: 't', args: cyclic }],
    [{ name: 't', args: { n: 10n, f: () => 1, u: undefined, s: Symbol('x'), inf: Infinity, nan: NaN } }],
    [{ name: 't', args: throwing }],
  ];
  for (const calls of inputs) assert.doesNotThrow(() => callSignature(calls as []));
  assert.doesNotThrow(() => callSignature(null as unknown as []));
  assert.equal(argsJsonOf(callSignature([{ name: 't', args: { inf: Infinity, u: undefined } }])), '{"inf":null}');
});

test('a "__proto__" argument key is kept in the signature', () => {
  const a = callSignature([{ name: 't', args: JSON.parse('{"__proto__":{"x":1}}') as unknown }]);
  const b = callSignature([{ name: 't', args: JSON.parse('{"__proto__":{"x":2}}') as unknown }]);
  assert.notEqual(a, b);
});

test('the iteration cap is 50 and can only be lowered', () => {
  assert.equal(MAX_TOOL_ITERATIONS, 50);
  assert.equal(new LoopGuard({ maxIterations: 500 }).maxIterations, 50);
  assert.equal(new LoopGuard({ maxIterations: 7.9 }).maxIterations, 7);
  assert.equal(new LoopGuard({ maxIterations: 0 }).maxIterations, 1);
  assert.equal(new LoopGuard({ maxIterations: -3 }).maxIterations, 1);
  assert.equal(new LoopGuard({ maxIterations: Number.NaN }).maxIterations, 50);
  assert.equal(new LoopGuard(undefined as unknown as { maxIterations: number }).maxIterations, 50);
});

test('the cap stops the loop at the configured iteration', () => {
  const guard = new LoopGuard({ maxIterations: 3 });
  const decisions = [1, 2, 3].map((i) => guard.recordBatch([{ name: 'search', args: { q: i } }], [searchPolicy()]));
  assert.deepEqual(
    decisions.map((d) => d.stop),
    [false, false, true],
  );
  assert.equal(decisions[2]?.reason, 'cap');
  assert.equal(guard.iterations, 3);
});

test('the default cap is reached after 50 distinct batches', () => {
  const guard = new LoopGuard({ maxIterations: 50 });
  let decision = { stop: false, reason: null as string | null };
  let count = 0;
  while (!decision.stop) {
    count++;
    decision = guard.recordBatch([{ name: 'search', args: { q: count } }], [searchPolicy()]);
  }
  assert.equal(count, 50);
  assert.equal(decision.reason, 'cap');
});

test('search batches repeat 10 times before stopping', () => {
  const guard = new LoopGuard({ maxIterations: 50 });
  const call = [{ name: 'rag_search_documents', args: { query: 'same' } }];
  for (let i = 1; i < 10; i++) assert.deepEqual(guard.recordBatch(call, [searchPolicy()]), { stop: false, reason: null });
  assert.deepEqual(guard.recordBatch(call, [searchPolicy()]), { stop: true, reason: 'repeat' });
  assert.equal(guard.repeats, 10);
});

test('read batches repeat 8 times, write batches 4 times', () => {
  for (const [policy, threshold] of [
    [readPolicy(), 8],
    [writePolicy(), 4],
  ] as const) {
    const guard = new LoopGuard({ maxIterations: 50 });
    const call = [{ name: 'tool', args: { x: 1 } }];
    let stoppedAt = 0;
    for (let i = 1; i <= 20 && stoppedAt === 0; i++) {
      if (guard.recordBatch(call, [policy]).stop) stoppedAt = i;
    }
    assert.equal(stoppedAt, threshold);
  }
});

test('a mixed batch uses the strictest rule', () => {
  const guard = new LoopGuard({ maxIterations: 50 });
  const calls = [
    { name: 'search', args: { q: 1 } },
    { name: 'write', args: { p: 'a' } },
  ];
  const stops = [1, 2, 3, 4].map(() => guard.recordBatch(calls, [searchPolicy(), writePolicy()]).stop);
  assert.deepEqual(stops, [false, false, false, true]);
});

test('calls without a policy count as possibly mutating', () => {
  const guard = new LoopGuard({ maxIterations: 50 });
  const calls = [
    { name: 'search', args: { q: 1 } },
    { name: 'mystery', args: {} },
  ];
  const stops = [1, 2, 3, 4].map(() => guard.recordBatch(calls, [searchPolicy()]).stop);
  assert.deepEqual(stops, [false, false, false, true]);
});

test('only consecutive repeats count; a different batch resets the streak', () => {
  const guard = new LoopGuard({ maxIterations: 50 });
  const same = [{ name: 'w', args: { p: 1 } }];
  const other = [{ name: 'w', args: { p: 2 } }];
  for (let i = 0; i < 3; i++) assert.equal(guard.recordBatch(same, [writePolicy()]).stop, false);
  assert.equal(guard.recordBatch(other, [writePolicy()]).stop, false);
  assert.equal(guard.repeats, 1);
  for (let i = 0; i < 3; i++) assert.equal(guard.recordBatch(same, [writePolicy()]).stop, false);
  assert.equal(guard.recordBatch(same, [writePolicy()]).reason, 'repeat');
});

test('different queries never count as repeats', () => {
  const guard = new LoopGuard({ maxIterations: 50 });
  for (let i = 0; i < 40; i++) {
    assert.equal(guard.recordBatch([{ name: 'search', args: { query: `q${i}` } }], [writePolicy()]).stop, false);
  }
});

test('a repeat detected on the capped iteration reports repeat', () => {
  const guard = new LoopGuard({ maxIterations: 4 });
  const call = [{ name: 'w', args: {} }];
  const decisions = [1, 2, 3, 4].map(() => guard.recordBatch(call, [writePolicy()]));
  assert.deepEqual(decisions[3], { stop: true, reason: 'repeat' });
});

test('an empty batch counts toward the cap and breaks a streak', () => {
  const guard = new LoopGuard({ maxIterations: 2 });
  assert.deepEqual(guard.recordBatch([], []), { stop: false, reason: null });
  assert.equal(guard.repeats, 0);
  assert.deepEqual(guard.recordBatch([], []), { stop: true, reason: 'cap' });
  const g2 = new LoopGuard({ maxIterations: 50 });
  assert.doesNotThrow(() => g2.recordBatch(null as unknown as [], null as unknown as []));
});
