import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coerceValue, normalizeArguments } from '../../lib/tools/argument-normalizer.ts';
import type { JsonSchema } from '../../lib/tools/json-schema.ts';

const ragSchema: JsonSchema = {
  type: 'object',
  properties: { query: { type: 'string' }, limit: { type: 'integer', default: 5 }, min_score: { type: 'number', default: 0.3 } },
  required: ['query'],
};

function ok(result: ReturnType<typeof normalizeArguments>): Record<string, unknown> {
  assert.equal(result.ok, true, result.ok ? '' : result.observation);
  return result.ok ? result.args : {};
}

function observation(result: ReturnType<typeof normalizeArguments>): string {
  assert.equal(result.ok, false);
  return result.ok ? '' : result.observation;
}

test('integer strings become integers, other strings stay', () => {
  assert.deepEqual(ok(normalizeArguments(ragSchema, { query: 'x', limit: '7' })), { query: 'x', limit: 7 });
  assert.deepEqual(ok(normalizeArguments(ragSchema, { query: 'x', limit: ' -3 ' })), { query: 'x', limit: -3 });
  for (const limit of ['7.5', 'seven', '1e3', '', '99999999999999999999']) {
    assert.deepEqual(ok(normalizeArguments(ragSchema, { query: 'x', limit })), { query: 'x', limit }, limit);
  }
});

test('numeric strings become numbers', () => {
  for (const [input, expected] of [
    ['0.5', 0.5],
    ['1', 1],
    ['-2.25', -2.25],
    ['.7', 0.7],
    ['1e-2', 0.01],
    ['+3', 3],
  ] as const) {
    assert.equal(ok(normalizeArguments(ragSchema, { query: 'x', min_score: input }))['min_score'], expected, input);
  }
  for (const input of ['abc', '0x10', 'Infinity', 'NaN', '1,5', '']) {
    assert.equal(ok(normalizeArguments(ragSchema, { query: 'x', min_score: input }))['min_score'], input, input);
  }
});

test('booleans from true/false/1/0 strings only', () => {
  const schema: JsonSchema = { type: 'object', properties: { flag: { type: 'boolean' } } };
  for (const [input, expected] of [
    ['true', true],
    ['TRUE', true],
    [' 1 ', true],
    ['false', false],
    ['0', false],
  ] as const) {
    assert.equal(ok(normalizeArguments(schema, { flag: input }))['flag'], expected, input);
  }
  for (const input of ['yes', 'no', 'on', '2']) {
    assert.equal(ok(normalizeArguments(schema, { flag: input }))['flag'], input, input);
  }
  assert.equal(ok(normalizeArguments(schema, { flag: 1 }))['flag'], 1);
});

test('arrays from JSON-array strings, scalars wrapped', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: { urls: { type: 'array', items: { type: 'string' } }, ids: { type: 'array', items: { type: 'integer' } } },
  };
  assert.deepEqual(ok(normalizeArguments(schema, { urls: '["a","b"]' })), { urls: ['a', 'b'] });
  assert.deepEqual(ok(normalizeArguments(schema, { urls: 'https://example.org' })), { urls: ['https://example.org'] });
  assert.deepEqual(ok(normalizeArguments(schema, { urls: '{"a":1}' })), { urls: ['{"a":1}'] });
  assert.deepEqual(ok(normalizeArguments(schema, { ids: 5 })), { ids: [5] });
  assert.deepEqual(ok(normalizeArguments(schema, { ids: ['1', '2', 'x'] })), { ids: [1, 2, 'x'] });
  assert.deepEqual(ok(normalizeArguments(schema, { ids: { a: 1 } })), { ids: [{ a: 1 }] });
  assert.deepEqual(ok(normalizeArguments(schema, { ids: null })), { ids: null });
});

test('objects from JSON-object strings only', () => {
  const schema: JsonSchema = { type: 'object', properties: { filter: { type: 'object', properties: { year: { type: 'integer' } } } } };
  assert.deepEqual(ok(normalizeArguments(schema, { filter: '{"year":"2024"}' })), { filter: { year: 2024 } });
  assert.deepEqual(ok(normalizeArguments(schema, { filter: '[1,2]' })), { filter: '[1,2]' });
  assert.deepEqual(ok(normalizeArguments(schema, { filter: 'year=2024' })), { filter: 'year=2024' });
});

test('union types with null accept null and "null"', () => {
  const schema: JsonSchema = { type: 'object', properties: { n: { type: ['integer', 'null'] }, s: { type: ['string', 'null'] } } };
  assert.deepEqual(ok(normalizeArguments(schema, { n: null })), { n: null });
  assert.deepEqual(ok(normalizeArguments(schema, { n: 'NULL' })), { n: null });
  assert.deepEqual(ok(normalizeArguments(schema, { n: '12' })), { n: 12 });
  assert.deepEqual(ok(normalizeArguments(schema, { s: 'null' })), { s: null });
});

test('a union containing string leaves strings untouched', () => {
  const schema: JsonSchema = { type: 'object', properties: { v: { type: ['integer', 'string'] } } };
  assert.deepEqual(ok(normalizeArguments(schema, { v: '12' })), { v: '12' });
  assert.deepEqual(ok(normalizeArguments(schema, { v: 12 })), { v: 12 });
});

test('"null" for a non-nullable type is not turned into null', () => {
  const schema: JsonSchema = { type: 'object', properties: { n: { type: 'integer' } } };
  assert.deepEqual(ok(normalizeArguments(schema, { n: 'null' })), { n: 'null' });
});

test('keys outside non-empty properties are dropped; empty properties keep everything', () => {
  assert.deepEqual(ok(normalizeArguments(ragSchema, { query: 'x', extra: 1, urls: ['a'] })), { query: 'x' });
  assert.deepEqual(ok(normalizeArguments({ type: 'object', properties: {} }, { anything: '1' })), { anything: '1' });
  assert.deepEqual(ok(normalizeArguments({} as JsonSchema, { anything: '1' })), { anything: '1' });
});

test('no renames and no semantic corrections', () => {
  const schema: JsonSchema = { type: 'object', properties: { urls: { type: 'array' }, id: { type: 'string' } }, required: ['urls'] };
  // `url` is not renamed to `urls`: it is dropped and the call is refused.
  const refused = observation(normalizeArguments(schema, { url: 'https://x', id: 'abc' }, 'fetch_pages'));
  assert.match(refused, /missing required argument\(s\): urls/);
  // Ids and strings are passed through as written.
  assert.deepEqual(ok(normalizeArguments(schema, { urls: ['u'], id: ' ABC-00O ' })), { urls: ['u'], id: ' ABC-00O ' });
});

test('missing required arguments produce the exact observation', () => {
  const schema: JsonSchema = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'string' } }, required: ['a', 'b', 'c'] };
  assert.equal(
    observation(normalizeArguments(schema, { a: null, b: '   ', c: 'ok' }, 'wiki_write_page')),
    'ERROR: Invalid tool arguments for wiki_write_page: missing required argument(s): a, b. Please call the tool again with valid schema arguments.',
  );
  assert.equal(
    observation(normalizeArguments(schema, {}, '  ')),
    'ERROR: Invalid tool arguments for unknown: missing required argument(s): a, b, c. Please call the tool again with valid schema arguments.',
  );
  assert.match(observation(normalizeArguments(schema, {})), /for unknown:/);
});

test('false and 0 are present values for required arguments', () => {
  const schema: JsonSchema = { type: 'object', properties: { f: { type: 'boolean' }, n: { type: 'integer' } }, required: ['f', 'n'] };
  assert.deepEqual(ok(normalizeArguments(schema, { f: false, n: 0 })), { f: false, n: 0 });
  assert.deepEqual(ok(normalizeArguments(schema, { f: '0', n: '0' })), { f: false, n: 0 });
});

test('arguments given as JSON text are parsed', () => {
  assert.deepEqual(ok(normalizeArguments(ragSchema, '{"query":"x","limit":"3"}', 'rag')), { query: 'x', limit: 3 });
  assert.deepEqual(ok(normalizeArguments({ type: 'object', properties: {} }, '')), {});
  assert.deepEqual(ok(normalizeArguments({ type: 'object', properties: {} }, 'null')), {});
  assert.deepEqual(ok(normalizeArguments({ type: 'object', properties: {} }, undefined)), {});
});

test('invalid JSON or non-object arguments give an error observation', () => {
  assert.equal(
    observation(normalizeArguments(ragSchema, '{"query": "x"', 'rag_search_documents')),
    'ERROR: Invalid tool arguments for rag_search_documents: arguments are not valid JSON. Please call the tool again with valid schema arguments.',
  );
  for (const args of ['[1,2]', '"text"', '42', [1, 2], 42, true, 'plain words']) {
    const text = observation(normalizeArguments(ragSchema, args, 'rag'));
    assert.match(text, /^ERROR: Invalid tool arguments for rag: /);
    assert.match(text, /Please call the tool again with valid schema arguments\.$/);
  }
});

test('the input is not mutated and the result is a fresh object', () => {
  const input = { query: 'x', limit: '5', extra: true };
  const result = ok(normalizeArguments(ragSchema, input));
  assert.deepEqual(input, { query: 'x', limit: '5', extra: true });
  assert.notEqual(result, input);
});

test('a "__proto__" argument never pollutes prototypes', () => {
  const args = JSON.parse('{"__proto__":{"polluted":true},"query":"x"}') as unknown;
  const open = ok(normalizeArguments({ type: 'object' }, args));
  assert.equal(Object.hasOwn(open, '__proto__'), true);
  assert.equal(Object.getPrototypeOf(open), Object.prototype);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  assert.deepEqual(Object.keys(ok(normalizeArguments(ragSchema, args))), ['query']);
});

test('malformed schemas do not throw', () => {
  const schemas = [null, undefined, 42, 'x', { properties: [] }, { properties: { a: 5 } }, { required: 'a' }, { properties: { a: { type: 7 } } }];
  for (const schema of schemas) {
    assert.doesNotThrow(() => normalizeArguments(schema as unknown as JsonSchema, { a: '1' }));
  }
  assert.deepEqual(ok(normalizeArguments({ properties: { a: { type: 7 } } } as unknown as JsonSchema, { a: '1' })), { a: '1' });
});

test('coerceValue applies the same lossless rules to one value', () => {
  assert.equal(coerceValue({ type: 'integer' }, '42'), 42);
  assert.equal(coerceValue({ type: 'string' }, '42'), '42');
  assert.deepEqual(coerceValue({ type: 'array' }, 'x'), ['x']);
  assert.equal(coerceValue(undefined, '42'), '42');
  let deep: JsonSchema = { type: 'integer' };
  let value: unknown = '1';
  for (let i = 0; i < 100; i++) {
    deep = { type: 'array', items: deep };
    value = [value];
  }
  assert.doesNotThrow(() => coerceValue(deep, value));
});
