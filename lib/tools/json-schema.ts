// JSON Schema as tools declare it, plus the shape OpenAI-compatible providers accept.

export type JsonSchemaType = 'string' | 'number' | 'integer' | 'boolean' | 'array' | 'object' | 'null';

export type JsonSchema = {
  type?: JsonSchemaType | JsonSchemaType[] | string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema | JsonSchema[];
  enum?: unknown[];
  description?: string;
  default?: unknown;
  [keyword: string]: unknown;
};

export interface ToolSchemaSource {
  name: string;
  description?: string;
  schema?: unknown;
}

export interface ModelToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

// Keywords whose value maps names to subschemas: their keys are names, never keywords.
const NAME_MAP_KEYWORDS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const MAX_DEPTH = 64;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// Assignment through defineProperty so a "__proto__" key stays an ordinary key.
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export function schemaProperties(schema: unknown): Record<string, JsonSchema> {
  if (!isPlainObject(schema)) return {};
  const props = schema['properties'];
  if (!isPlainObject(props)) return {};
  const out: Record<string, JsonSchema> = {};
  for (const [key, value] of Object.entries(props)) {
    setOwn(out, key, isPlainObject(value) ? (value as JsonSchema) : {});
  }
  return out;
}

export function schemaRequired(schema: unknown): string[] {
  if (!isPlainObject(schema)) return [];
  const required = schema['required'];
  if (!Array.isArray(required)) return [];
  const seen = new Set<string>();
  for (const key of required) {
    if (typeof key === 'string' && key !== '') seen.add(key);
  }
  return [...seen];
}

function cleanSchemaNode(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (Array.isArray(value)) {
    if (depth > MAX_DEPTH || seen.has(value)) return [];
    seen.add(value);
    const out = value.map((item) => cleanSchemaNode(item, depth + 1, seen));
    seen.delete(value);
    return out;
  }
  if (value === null || typeof value !== 'object') {
    return typeof value === 'bigint' ? Number(value) : value;
  }
  if (depth > MAX_DEPTH || seen.has(value)) return {};
  seen.add(value);
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$schema') continue;
    if (NAME_MAP_KEYWORDS.has(key)) {
      // PHP encoders turn an empty map into [], which providers reject.
      const map: Record<string, unknown> = {};
      if (isPlainObject(child)) {
        for (const [name, sub] of Object.entries(child)) setOwn(map, name, cleanSchemaNode(sub, depth + 1, seen));
      }
      setOwn(out, key, map);
      continue;
    }
    setOwn(out, key, cleanSchemaNode(child, depth + 1, seen));
  }
  seen.delete(value);
  return out;
}

export function toProviderSchema(schema: unknown): Record<string, unknown> {
  const isObject = schema !== null && typeof schema === 'object' && !Array.isArray(schema);
  const cleaned = isObject ? cleanSchemaNode(schema, 0, new WeakSet()) : {};
  const out = isPlainObject(cleaned) ? cleaned : {};
  out['type'] = 'object';
  if (!isPlainObject(out['properties'])) out['properties'] = {};
  if ('required' in out) {
    const required = schemaRequired(out);
    if (required.length > 0) out['required'] = required;
    else delete out['required'];
  }
  return out;
}

export function serializeToolsForModel(tools: readonly ToolSchemaSource[]): ModelToolDefinition[] {
  const out: ModelToolDefinition[] = [];
  if (!Array.isArray(tools)) return out;
  for (const tool of tools) {
    if (tool === null || typeof tool !== 'object') continue;
    const name = typeof tool.name === 'string' ? tool.name.trim() : '';
    if (name === '') continue;
    out.push({
      type: 'function',
      function: { name, description: typeof tool.description === 'string' ? tool.description : '', parameters: toProviderSchema(tool.schema) },
    });
  }
  return out;
}
