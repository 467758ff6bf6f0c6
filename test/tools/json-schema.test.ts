import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPlainObject, schemaProperties, schemaRequired, serializeToolsForModel, setOwn, toProviderSchema } from '../../lib/tools/json-schema.ts';

test('an argument-less tool serialises properties as {} and never []', () => {
  const tools = serializeToolsForModel([{ name: 'list_campuses', description: 'List campuses', schema: {} }]);
  const json = JSON.stringify(tools);
  assert.ok(json.includes('"properties":{}'), json);
  assert.ok(!json.includes('"properties":[]'), json);
  assert.deepEqual(tools, [
    { type: 'function', function: { name: 'list_campuses', description: 'List campuses', parameters: { type: 'object', properties: {} } } },
  ]);
});

test('missing, array and non-object properties all become {}', () => {
  for (const schema of [undefined, null, {}, { type: 'object' }, { properties: [] }, { properties: 'x' }, { properties: null }, 'oops', 42, []]) {
    const out = toProviderSchema(schema);
    assert.equal(out['type'], 'object');
    assert.deepEqual(out['properties'], {});
    assert.equal(JSON.stringify(out).includes('"properties":{}'), true);
  }
});

test('type is forced to object even when the tool declares something else', () => {
  assert.equal(toProviderSchema({ type: 'string' })['type'], 'object');
  assert.equal(toProviderSchema({ type: ['object', 'null'] })['type'], 'object');
});

test('$schema keywords are stripped at every depth, property names called $schema are kept', () => {
  const schema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: {
      filter: { $schema: 'x', type: 'object', properties: { inner: { $schema: 'y', type: 'string' } } },
      list: { type: 'array', items: { $schema: 'z', type: 'object', properties: [] } },
      $schema: { type: 'string', description: 'a property that happens to be named $schema' },
    },
    anyOf: [{ $schema: 'w', required: ['filter'] }],
  };
  const out = toProviderSchema(schema);
  const json = JSON.stringify(out);
  assert.ok(!json.includes('draft-07'));
  assert.ok(!/"\$schema":"[xyzw]"/.test(json), json);
  const props = out['properties'] as Record<string, Record<string, unknown>>;
  assert.deepEqual(props['$schema'], { type: 'string', description: 'a property that happens to be named $schema' });
  assert.deepEqual(props['list'], { type: 'array', items: { type: 'object', properties: {} } });
  assert.deepEqual(out['anyOf'], [{ required: ['filter'] }]);
});

test('the input schema is not mutated', () => {
  const schema = { $schema: 'x', properties: [] as unknown, required: ['a'] };
  const copy = structuredClone(schema);
  toProviderSchema(schema);
  assert.deepEqual(schema, copy);
});

test('required keeps only non-empty strings and disappears when empty', () => {
  assert.deepEqual(toProviderSchema({ properties: { a: {} }, required: ['a', 3, '', 'a', null] })['required'], ['a']);
  assert.equal('required' in toProviderSchema({ properties: {}, required: [] }), false);
  assert.equal('required' in toProviderSchema({ properties: {}, required: 'a' }), false);
});

test('other keywords survive unchanged', () => {
  const schema = {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'What to look for' },
      limit: { type: 'integer', default: 5, minimum: 1, maximum: 20 },
      scope: { type: 'string', enum: ['wiki', 'sources', 'all'], default: 'wiki' },
    },
    required: ['query'],
    additionalProperties: false,
  };
  assert.deepEqual(toProviderSchema(schema), schema);
});

test('cyclic and very deep schemas do not throw', () => {
  const cyclic: Record<string, unknown> = { type: 'object', properties: {} };
  (cyclic['properties'] as Record<string, unknown>)['self'] = cyclic;
  assert.doesNotThrow(() => JSON.stringify(toProviderSchema(cyclic)));
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 500; i++) deep = { type: 'object', properties: { next: deep } };
  assert.doesNotThrow(() => JSON.stringify(toProviderSchema(deep)));
});

test('a "__proto__" property name stays a property and does not touch prototypes', () => {
  const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}') as unknown;
  const out = toProviderSchema(schema);
  const props = out['properties'] as Record<string, unknown>;
  assert.equal(Object.hasOwn(props, '__proto__'), true);
  assert.equal(Object.getPrototypeOf(props), Object.prototype);
  assert.ok(JSON.stringify(out).includes('"__proto__":{"type":"string"}'));
});

test('serializeToolsForModel skips nameless entries, trims names and defaults descriptions', () => {
  const input = [
    { name: '  rag_search  ', description: 'Search', schema: { type: 'object', properties: { query: { type: 'string' } } } },
    { name: '', description: 'x', schema: {} },
    null,
    42,
    { description: 'no name' },
    { name: 'no_description', schema: { $schema: 'x' } },
  ] as unknown as Parameters<typeof serializeToolsForModel>[0];
  const out = serializeToolsForModel(input);
  assert.deepEqual(
    out.map((t) => t.function.name),
    ['rag_search', 'no_description'],
  );
  assert.equal(out[1]?.function.description, '');
  assert.deepEqual(out[1]?.function.parameters, { type: 'object', properties: {} });
  assert.deepEqual(serializeToolsForModel(undefined as unknown as []), []);
});

test('schemaProperties and schemaRequired read malformed schemas safely', () => {
  assert.deepEqual(schemaProperties(null), {});
  assert.deepEqual(schemaProperties({ properties: [] }), {});
  assert.deepEqual(schemaProperties({ properties: { a: { type: 'string' }, b: true } }), { a: { type: 'string' }, b: {} });
  assert.deepEqual(schemaRequired({ required: ['a', 'a', 1, ''] }), ['a']);
  assert.deepEqual(schemaRequired({ required: 'a' }), []);
});

test('isPlainObject and setOwn', () => {
  assert.equal(isPlainObject({}), true);
  assert.equal(isPlainObject(Object.create(null)), true);
  assert.equal(isPlainObject([]), false);
  assert.equal(isPlainObject(new Date()), false);
  assert.equal(isPlainObject(null), false);
  const target: Record<string, unknown> = {};
  setOwn(target, '__proto__', { polluted: true });
  assert.equal(Object.hasOwn(target, '__proto__'), true);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  assert.equal(Object.getPrototypeOf(target), Object.prototype);
});
