// fast-check arbitraries for request bodies: values that follow a route's JSON schema (from its zod schema,
// z.toJSONSchema), and the same values broken in one place, so that both the accepting and the refusing
// paths of every route are exercised.
import fc from 'fast-check';

type Schema = Record<string, unknown>;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function stringArb(s: Schema): fc.Arbitrary<string> {
  const minLength = num(s.minLength) ?? 0;
  const maxLength = Math.max(minLength, Math.min(num(s.maxLength) ?? 40, 200));
  if (typeof s.pattern === 'string') {
    try {
      return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= minLength && v.length <= (num(s.maxLength) ?? Infinity));
    } catch {
      // A pattern fast-check cannot invert: fall through to plain strings.
    }
  }
  if (s.format === 'uri' || s.format === 'url') return fc.webUrl();
  if (s.format === 'email') return fc.emailAddress();
  if (s.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4102444800000), noInvalidDate: true }).map((d) => d.toISOString());
  return fc.string({
    minLength,
    maxLength,
    unit: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-_ 0123456789'.split('')) },
      { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: 'binary' }) },
    ),
  });
}

function numberArb(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = num(s.minimum) ?? (num(s.exclusiveMinimum) !== undefined ? num(s.exclusiveMinimum)! + (integer ? 1 : 1e-6) : -1e6);
  const max = num(s.maximum) ?? (num(s.exclusiveMaximum) !== undefined ? num(s.exclusiveMaximum)! - (integer ? 1 : 1e-6) : 1e6);
  return integer ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/** A value the schema accepts (as far as JSON Schema can say: refinements in zod may still refuse it). */
export function fromSchema(schema: unknown, depth = 0): fc.Arbitrary<unknown> {
  const s = (schema ?? {}) as Schema;
  if (depth > 6) return fc.constant(null);
  if (Array.isArray(s.enum) && s.enum.length > 0) return fc.constantFrom(...(s.enum as unknown[]));
  if ('const' in s) return fc.constant(s.const);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = s[key];
    if (Array.isArray(options) && options.length > 0) return fc.oneof(...options.map((o) => fromSchema(o, depth + 1)));
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) return fromSchema(s.allOf[0], depth + 1);
  const type = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : [];
  if (type.length > 1) return fc.oneof(...type.map((t) => fromSchema({ ...s, type: t }, depth)));
  switch (type[0]) {
    case 'string':
      return stringArb(s);
    case 'integer':
      return numberArb(s, true);
    case 'number':
      return numberArb(s, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const maxLength = Math.min(num(s.maxItems) ?? 4, 6);
      return fc.array(fromSchema(s.items, depth + 1), { minLength: Math.min(num(s.minItems) ?? 0, maxLength), maxLength });
    }
    case 'object':
      return objectArb(s, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectArb(s: Schema, depth: number): fc.Arbitrary<unknown> {
  const properties = (s.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const keys = Object.keys(properties);
  if (keys.length === 0) {
    // A record (z.record): keys from propertyNames, values from additionalProperties.
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      const key = s.propertyNames
        ? (fromSchema(s.propertyNames, depth + 1) as fc.Arbitrary<string>).filter((k) => typeof k === 'string')
        : stringArb({ minLength: 1, maxLength: 12 });
      return fc.dictionary(key, fromSchema(s.additionalProperties, depth + 1), { maxKeys: 4 });
    }
    return fc.constant({});
  }
  return fc.record(Object.fromEntries(keys.map((k) => [k, fromSchema(properties[k], depth + 1)])), { requiredKeys: keys.filter((k) => required.has(k)) });
}

/** Paths into a JSON value: every key and index, the root too. */
function paths(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

type Edit = { kind: 'replace'; with: unknown } | { kind: 'delete' } | { kind: 'add'; key: string; with: unknown };

function applyEdit(value: unknown, path: Array<string | number>, edit: Edit): unknown {
  if (path.length === 0) {
    if (edit.kind === 'replace') return edit.with;
    if (edit.kind === 'add' && value !== null && typeof value === 'object' && !Array.isArray(value)) return { ...value, [edit.key]: edit.with };
    return edit.kind === 'delete' ? undefined : value;
  }
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    const next = applyEdit(copy[head as number], rest, edit);
    if (next === undefined && rest.length === 0) copy.splice(head as number, 1);
    else copy[head as number] = next;
    return copy;
  }
  const copy = { ...(value as Record<string, unknown>) };
  const next = applyEdit(copy[head as string], rest, edit);
  if (next === undefined && rest.length === 0) delete copy[head as string];
  else copy[head as string] = next;
  return copy;
}

/** Odd JSON values: wrong types, huge and empty strings, deep nesting, prototype keys. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    '%00',
    '\ud800',
    'x'.repeat(70_000),
    -1,
    0,
    1e308,
    -0,
    2 ** 53 + 1,
    true,
    null,
    [],
    {},
    JSON.parse('{"__proto__":{"admin":true}}'),
    { constructor: { prototype: {} } },
  ),
  fc.string({ unit: 'binary', maxLength: 60 }),
);

/** `value` with one place replaced by an odd value, deleted, or given an extra key. */
export function mutated(value: unknown): fc.Arbitrary<unknown> {
  const all = paths(value);
  return fc
    .tuple(
      fc.constantFrom(...all),
      fc.oneof(
        oddValue.map((w): Edit => ({ kind: 'replace', with: w })),
        fc.constant<Edit>({ kind: 'delete' }),
        fc
          .tuple(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'id', 'ownerUid', 'status', 'approvedBy')), oddValue)
          .map(([key, w]): Edit => ({ kind: 'add', key, with: w })),
      ),
    )
    .map(([path, edit]) => applyEdit(value, path, edit));
}

/** A body for a route: mostly schema-shaped values, often broken in one place, sometimes anything at all. */
export function bodyFor(schema: unknown): fc.Arbitrary<unknown> {
  const valid = fromSchema(schema);
  return fc.oneof({ weight: 3, arbitrary: valid }, { weight: 4, arbitrary: valid.chain((v) => mutated(v)) }, { weight: 1, arbitrary: oddValue });
}
