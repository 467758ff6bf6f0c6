// Lossless repair of model-written tool arguments against the tool's schema.
// Never renames keys or "corrects" values: a wrong argument stays wrong and the tool says so.

import { isPlainObject, schemaProperties, schemaRequired, setOwn } from './json-schema.ts';
import type { JsonSchema } from './json-schema.ts';

export type NormalizeResult = { ok: true; args: Record<string, unknown> } | { ok: false; observation: string };

const MAX_DEPTH = 32;
const INTEGER_RE = /^-?\d+$/;
const NUMBER_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function toolLabel(toolName: unknown): string {
  return typeof toolName === 'string' && toolName.trim() !== '' ? toolName.trim() : 'unknown';
}

function invalid(toolName: unknown, problem: string): { ok: false; observation: string } {
  return {
    ok: false,
    observation: `ERROR: Invalid tool arguments for ${toolLabel(toolName)}: ${problem}. Please call the tool again with valid schema arguments.`,
  };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function schemaTypes(schema: JsonSchema): string[] {
  const type = schema.type;
  if (typeof type === 'string') return [type];
  if (Array.isArray(type)) return type.filter((t): t is string => typeof t === 'string');
  return [];
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
    case 'null':
      return value === null;
    default:
      return false;
  }
}

// Returns undefined when the value cannot be turned into `type` without loss.
function convert(value: unknown, type: string): unknown {
  if (type === 'array') {
    if (typeof value === 'string') {
      const parsed = parseJson(value.trim());
      if (parsed.ok && Array.isArray(parsed.value)) return parsed.value;
    }
    return value === null || value === undefined ? undefined : [value];
  }
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  switch (type) {
    case 'object': {
      const parsed = parseJson(trimmed);
      return parsed.ok && isPlainObject(parsed.value) ? parsed.value : undefined;
    }
    case 'integer': {
      if (!INTEGER_RE.test(trimmed)) return undefined;
      const n = Number(trimmed);
      return Number.isSafeInteger(n) ? n + 0 : undefined;
    }
    case 'number': {
      if (!NUMBER_RE.test(trimmed)) return undefined;
      const n = Number(trimmed);
      return Number.isFinite(n) ? n : undefined;
    }
    case 'boolean': {
      const lower = trimmed.toLowerCase();
      if (lower === 'true' || lower === '1') return true;
      if (lower === 'false' || lower === '0') return false;
      return undefined;
    }
    default:
      return undefined;
  }
}

function coerceChildren(value: unknown, schema: JsonSchema, depth: number): unknown {
  if (Array.isArray(value) && isPlainObject(schema.items)) {
    const items = schema.items as JsonSchema;
    return value.map((item) => coerceAt(item, items, depth + 1));
  }
  if (isPlainObject(value)) {
    const props = schemaProperties(schema);
    if (Object.keys(props).length === 0) return value;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const sub = Object.hasOwn(props, key) ? props[key] : undefined;
      setOwn(out, key, sub ? coerceAt(child, sub, depth + 1) : child);
    }
    return out;
  }
  return value;
}

function coerceAt(value: unknown, schema: unknown, depth: number): unknown {
  if (!isPlainObject(schema) || depth > MAX_DEPTH) return value;
  const types = schemaTypes(schema);
  if (types.length === 0) return coerceChildren(value, schema, depth);

  const nonNull = types.filter((t) => t !== 'null');
  if (types.includes('null')) {
    if (value === null) return null;
    if (typeof value === 'string' && value.trim().toLowerCase() === 'null') return null;
  }
  // A string that a union accepts as a string is already valid.
  if (typeof value === 'string' && nonNull.includes('string')) return value;
  for (const type of nonNull) {
    if (matchesType(value, type)) return coerceChildren(value, schema, depth);
  }
  for (const type of nonNull) {
    const converted = convert(value, type);
    if (converted !== undefined) return coerceChildren(converted, schema, depth);
  }
  return value;
}

/** Coerces one value to its property schema (lossless conversions only). */
export function coerceValue(schema: unknown, value: unknown): unknown {
  return coerceAt(value, schema, 0);
}

function isMissing(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

function readArgs(args: unknown, toolName: unknown): { ok: true; args: Record<string, unknown> } | { ok: false; observation: string } {
  if (args === undefined || args === null) return { ok: true, args: {} };
  let value: unknown = args;
  if (typeof args === 'string') {
    const trimmed = args.trim();
    if (trimmed === '') return { ok: true, args: {} };
    const parsed = parseJson(trimmed);
    if (!parsed.ok) return invalid(toolName, 'arguments are not valid JSON');
    value = parsed.value;
    if (value === null) return { ok: true, args: {} };
  }
  if (!isPlainObject(value)) return invalid(toolName, 'arguments must be a JSON object');
  return { ok: true, args: value };
}

/**
 * Filters arguments to the schema's properties (when it declares any), applies
 * lossless coercions, and refuses the call when a required argument is absent,
 * null or blank. `args` may be an object or the JSON text a provider returned.
 */
export function normalizeArguments(schema: JsonSchema, args: unknown, toolName = 'unknown'): NormalizeResult {
  const read = readArgs(args, toolName);
  if (!read.ok) return read;

  const props = schemaProperties(schema);
  const restrict = Object.keys(props).length > 0;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(read.args)) {
    if (restrict && !Object.hasOwn(props, key)) continue;
    const sub = restrict ? props[key] : undefined;
    setOwn(out, key, sub ? coerceAt(value, sub, 0) : value);
  }

  const missing = schemaRequired(schema).filter((key) => !Object.hasOwn(out, key) || isMissing(out[key]));
  if (missing.length > 0) return invalid(toolName, `missing required argument(s): ${missing.join(', ')}`);
  return { ok: true, args: out };
}
