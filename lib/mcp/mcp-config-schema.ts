// Per-assignment config of an MCP tool: a small, closed schema language the server declares and we check.
import { isPlainObject, setOwn } from '../tools/json-schema.ts';
import { type ConfigValidation } from '../tools/tool-provider.ts';

type ScalarType = 'string' | 'number' | 'integer' | 'boolean';

interface ConfigField {
  type: ScalarType | 'array';
  itemType?: ScalarType;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength: number;
  maxItems: number;
}

export interface ConfigSchema {
  fields: Record<string, ConfigField>;
  required: string[];
}

const MAX_CONFIG_FIELDS = 32;
const MAX_CONFIG_STRING = 500;
const MAX_CONFIG_ITEMS = 50;
const SCALARS: ReadonlySet<string> = new Set(['string', 'number', 'integer', 'boolean']);
// Words that mark a field as an address, an identity or a credential (S17).
const FORBIDDEN_WORDS = new Set([
  'url',
  'urls',
  'uri',
  'uris',
  'href',
  'link',
  'links',
  'endpoint',
  'endpoints',
  'host',
  'hostname',
  'domain',
  'webhook',
  'callback',
  'redirect',
  'uid',
  'uids',
  'user',
  'users',
  'userid',
  'username',
  'owner',
  'account',
  'email',
  'mail',
  'login',
  'principal',
  'password',
  'passwd',
  'pwd',
  'secret',
  'secrets',
  'token',
  'tokens',
  'credential',
  'credentials',
  'auth',
  'authorization',
  'apikey',
  'key',
  'keys',
  'cookie',
  'session',
  'bearer',
  'cert',
  'certificate',
  'jwt',
]);
const FORBIDDEN_FORMATS = new Set([
  'uri',
  'url',
  'uri-reference',
  'iri',
  'iri-reference',
  'uri-template',
  'email',
  'idn-email',
  'hostname',
  'idn-hostname',
  'ipv4',
  'ipv6',
]);
const URL_LIKE = /(^[a-z][a-z0-9+.-]*:\/\/)|(^\/\/)|(:\/\/)|(^www\.)/i;

function fieldWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

export function isForbiddenConfigField(name: string): boolean {
  const words = fieldWords(name);
  if (words.some((w) => FORBIDDEN_WORDS.has(w))) return true;
  const joined = words.join('');
  return /(apikey|accesstoken|privatekey|clientsecret|userid|username)/.test(joined);
}

function nonNegative(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

/** Accepts a flat object schema of scalars (or lists of scalars) with no address, identity or credential fields. */
export function compileConfigSchema(schema: unknown): { ok: true; schema: ConfigSchema } | { ok: false; error: string } {
  if (schema === undefined || schema === null) return { ok: true, schema: { fields: {}, required: [] } };
  if (!isPlainObject(schema)) return { ok: false, error: 'The config schema must be an object schema' };
  if (schema['type'] !== undefined && schema['type'] !== 'object') return { ok: false, error: 'The config schema must have type "object"' };
  const props = schema['properties'] ?? {};
  if (!isPlainObject(props)) return { ok: false, error: 'The config schema properties must be an object' };
  const names = Object.keys(props);
  if (names.length > MAX_CONFIG_FIELDS) return { ok: false, error: `At most ${MAX_CONFIG_FIELDS} config fields` };
  const fields: Record<string, ConfigField> = {};
  for (const name of names) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name)) return { ok: false, error: `Config field "${name.slice(0, 64)}" has an unusable name` };
    if (isForbiddenConfigField(name))
      return { ok: false, error: `Config field "${name}" looks like an address, user id or credential, which a provider may not ask for` };
    const prop = props[name];
    if (!isPlainObject(prop)) return { ok: false, error: `Config field "${name}" needs a schema` };
    if (typeof prop['format'] === 'string' && FORBIDDEN_FORMATS.has(prop['format']))
      return { ok: false, error: `Config field "${name}" has a format that is not allowed` };
    const type = prop['type'];
    let field: ConfigField;
    if (typeof type === 'string' && SCALARS.has(type)) {
      field = { type: type as ScalarType, maxLength: Math.min(nonNegative(prop['maxLength']) ?? MAX_CONFIG_STRING, MAX_CONFIG_STRING), maxItems: 0 };
    } else if (type === 'array' && isPlainObject(prop['items']) && typeof prop['items']['type'] === 'string' && SCALARS.has(prop['items']['type'])) {
      const items = prop['items'];
      if (typeof items['format'] === 'string' && FORBIDDEN_FORMATS.has(items['format']))
        return { ok: false, error: `Config field "${name}" has a format that is not allowed` };
      field = {
        type: 'array',
        itemType: items['type'] as ScalarType,
        maxLength: Math.min(nonNegative(items['maxLength']) ?? MAX_CONFIG_STRING, MAX_CONFIG_STRING),
        maxItems: Math.min(nonNegative(prop['maxItems']) ?? MAX_CONFIG_ITEMS, MAX_CONFIG_ITEMS),
      };
      if (Array.isArray(items['enum'])) field.enum = items['enum'];
    } else {
      return { ok: false, error: `Config field "${name}" must be a string, number, integer, boolean or a list of those` };
    }
    if (field.type !== 'array' && Array.isArray(prop['enum'])) field.enum = prop['enum'];
    if (typeof prop['minimum'] === 'number') field.minimum = prop['minimum'];
    if (typeof prop['maximum'] === 'number') field.maximum = prop['maximum'];
    const minLength = nonNegative(prop['minLength']);
    if (minLength !== undefined) field.minLength = minLength;
    setOwn(fields, name, field);
  }
  const required = Array.isArray(schema['required']) ? schema['required'].filter((r): r is string => typeof r === 'string') : [];
  for (const r of required) if (!Object.hasOwn(fields, r)) return { ok: false, error: `Required config field "${r}" is not declared` };
  return { ok: true, schema: { fields, required } };
}

function checkScalar(field: ConfigField, type: ScalarType, value: unknown): string | null {
  if (type === 'boolean' && typeof value !== 'boolean') return 'Must be true or false';
  if ((type === 'number' || type === 'integer') && (typeof value !== 'number' || !Number.isFinite(value))) return 'Must be a number';
  if (type === 'integer' && !Number.isInteger(value)) return 'Must be a whole number';
  if (type === 'string') {
    if (typeof value !== 'string') return 'Must be a text';
    if (value.length > field.maxLength) return `At most ${field.maxLength} characters`;
    if (field.minLength !== undefined && value.length < field.minLength) return `At least ${field.minLength} characters`;
    if (URL_LIKE.test(value)) return 'Addresses are not allowed in a tool configuration';
    if (/[\u0000-\u001f]/.test(value)) return 'No control characters';
  }
  if (typeof value === 'number') {
    if (field.minimum !== undefined && value < field.minimum) return `At least ${field.minimum}`;
    if (field.maximum !== undefined && value > field.maximum) return `At most ${field.maximum}`;
  }
  if (field.enum !== undefined && !field.enum.some((e) => e === value)) return 'Not one of the allowed values';
  return null;
}

export function validateConfigAgainst(schema: ConfigSchema, config: Record<string, unknown>): ConfigValidation {
  const errors: Record<string, string> = {};
  const out: Record<string, unknown> = {};
  if (!isPlainObject(config)) return { ok: false, errors: { config: 'Must be an object' } };
  for (const [key, value] of Object.entries(config)) {
    const field = Object.hasOwn(schema.fields, key) ? schema.fields[key] : undefined;
    if (field === undefined) {
      setOwn(errors, key, Object.keys(schema.fields).length === 0 ? 'This tool takes no configuration' : 'Unknown config field');
      continue;
    }
    if (field.type === 'array') {
      if (!Array.isArray(value)) setOwn(errors, key, 'Must be a list');
      else if (value.length > field.maxItems) setOwn(errors, key, `At most ${field.maxItems} entries`);
      else {
        const problem = value.map((v) => checkScalar(field, field.itemType ?? 'string', v)).find((p) => p !== null);
        if (problem) setOwn(errors, key, problem);
        else setOwn(out, key, [...value]);
      }
      continue;
    }
    const problem = checkScalar(field, field.type, value);
    if (problem) setOwn(errors, key, problem);
    else setOwn(out, key, value);
  }
  for (const r of schema.required) if (!Object.hasOwn(config, r) && !Object.hasOwn(errors, r)) setOwn(errors, r, 'Required');
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, config: out };
}
