import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { collectFieldErrors } from '../../lib/validation/field-errors.ts';

const schema = z
  .object({ name: z.string({ error: 'Must be a text' }), tools: z.array(z.object({ id: z.number({ error: 'Must be a number' }) }).strict()) })
  .strict();

function fieldsOf(input: unknown, options?: Parameters<typeof collectFieldErrors>[2]): Record<string, string> {
  const parsed = schema.safeParse(input);
  assert.equal(parsed.success, false);
  const fields: Record<string, string> = {};
  if (!parsed.success) collectFieldErrors(parsed.error.issues, fields, options);
  return fields;
}

describe('collectFieldErrors', () => {
  it('names each field by its dotted path and each refused key by name', () => {
    assert.deepEqual(fieldsOf({ name: 3, tools: [{ id: 'x', extra: 1 }], other: true }), {
      name: 'Must be a text',
      'tools.0.id': 'Must be a number',
      'tools.0.extra': 'Unknown field',
      other: 'Unknown field',
    });
  });

  it('puts an issue about the whole value under the root key, and keeps the first message of a key', () => {
    const fields: Record<string, string> = { name: 'already said' };
    const parsed = schema.safeParse('text');
    assert.equal(parsed.success, false);
    if (!parsed.success) collectFieldErrors(parsed.error.issues, fields, { root: 'query' });
    assert.equal(fields.name, 'already said');
    assert.ok(fields.query);
    const more = fieldsOf({ name: 3, tools: [] });
    assert.deepEqual(more, { name: 'Must be a text' });
  });

  it('reports refused keys as zod does when asked to', () => {
    const fields = fieldsOf({ name: 'a', tools: [], z: 1 }, { unknownKey: null, root: 'input' });
    assert.deepEqual(Object.keys(fields), ['input']);
    assert.match(fields.input!, /z/);
    assert.deepEqual(fieldsOf({ name: 'a', tools: [], z: 1 }, { unknownKey: 'Unknown parameter' }), { z: 'Unknown parameter' });
  });
});
