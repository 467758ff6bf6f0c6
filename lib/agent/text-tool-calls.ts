// Tool calls that weak models write as text (JSON or XML) instead of native calls.
// Only tools the bot has are ever accepted; a plain JSON answer stays an answer.

import { coerceValue } from '../tools/argument-normalizer.ts';
import { isPlainObject, schemaProperties, schemaRequired, setOwn } from '../tools/json-schema.ts';
import type { JsonSchema } from '../tools/json-schema.ts';
import {
  type Span,
  STRAY_CLOSE_RE,
  decodeXmlEntities,
  parseJson,
  removeSpans,
  balancedJsonEnd,
  stripThinkBlocks,
  findMarkupBlocks,
} from '../llm/tool-markup.ts';

export interface TextToolSpec {
  name: string;
  schema: JsonSchema;
}

export interface TextToolCall {
  name: string;
  args: Record<string, unknown>;
}

export interface TextToolCallResult {
  calls: TextToolCall[];
  remainingText: string;
}

export type ToolIndex = Map<string, JsonSchema>;

const META_KEYS = new Set(['name', 'tool', 'function', 'parameters', 'arguments', 'id', 'type']);
const MAX_JSON_CANDIDATES = 100;
const MAX_JSON_DEPTH = 4;

// ---------------------------------------------------------------- JSON entries

function argsFromValue(value: unknown): Record<string, unknown> | null {
  if (isPlainObject(value)) return value;
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  if (trimmed === '') return {};
  const parsed = parseJson(trimmed);
  return parsed.ok && isPlainObject(parsed.value) ? parsed.value : null;
}

function withoutMetaKeys(entry: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (!META_KEYS.has(key)) setOwn(out, key, value);
  }
  return out;
}

function nameCandidates(entry: Record<string, unknown>): string[] {
  const fn = entry['function'];
  const raw = [entry['name'], entry['tool'], isPlainObject(fn) ? fn['name'] : fn];
  return raw.filter((v): v is string => typeof v === 'string' && v.trim() !== '').map((v) => v.trim());
}

function explicitArgs(entry: Record<string, unknown>): { args: Record<string, unknown>; loose: boolean } {
  const fn = entry['function'];
  const sources: unknown[] = [entry['arguments'], entry['parameters'], isPlainObject(fn) ? fn['arguments'] : undefined];
  for (const source of sources) {
    if (source === undefined) continue;
    const args = argsFromValue(source);
    if (args !== null) return { args, loose: false };
  }
  return { args: withoutMetaKeys(entry), loose: true };
}

// The one tool whose required keys are all present and whose properties cover every key.
function toolByKeys(args: Record<string, unknown>, tools: ToolIndex, minEvidence: number): string | null {
  const keys = Object.keys(args);
  if (keys.length < minEvidence) return null;
  let found: string | null = null;
  for (const [name, schema] of tools) {
    const required = schemaRequired(schema);
    const props = schemaProperties(schema);
    if (required.length === 0) continue;
    if (!required.every((key) => Object.hasOwn(args, key))) continue;
    if (!keys.every((key) => Object.hasOwn(props, key))) continue;
    if (found !== null) return null;
    found = name;
  }
  return found;
}

function callFromEntry(entry: Record<string, unknown>, tools: ToolIndex, minEvidence: number): TextToolCall | null {
  const fn = entry['function'];
  const names = nameCandidates(entry);
  const known = names.find((name) => tools.has(name));
  if (known !== undefined) {
    const { args, loose } = explicitArgs(entry);
    // Loose keys beside a name are arguments only if the tool declares them all.
    const props = schemaProperties(tools.get(known));
    if (loose && Object.keys(props).length > 0 && !Object.keys(args).every((key) => Object.hasOwn(props, key))) return null;
    return { name: known, args };
  }

  const callShaped = 'arguments' in entry || 'parameters' in entry || isPlainObject(fn) || typeof entry['tool'] === 'string';
  // A call addressed to a tool this bot does not have is refused, not re-routed.
  if (names.length > 0 && callShaped) return null;

  let args: Record<string, unknown> = entry;
  const outer = Object.keys(entry);
  if (outer.length > 0 && outer.every((key) => META_KEYS.has(key))) {
    const inner = argsFromValue(entry['arguments'] ?? entry['parameters']);
    if (inner === null) return null;
    args = inner;
  }
  const name = toolByKeys(args, tools, Math.max(1, minEvidence));
  return name === null ? null : { name, args: { ...args } };
}

export function callsFromJsonValue(value: unknown, tools: ToolIndex, minEvidence: number, depth = 0): TextToolCall[] {
  if (depth > MAX_JSON_DEPTH) return [];
  if (Array.isArray(value)) {
    return value.flatMap((item) => (isPlainObject(item) ? callsFromJsonValue(item, tools, minEvidence, depth + 1) : []));
  }
  if (!isPlainObject(value)) return [];
  const nested = value['tool_calls'];
  if (Array.isArray(nested) && Object.keys(value).length === 1) return callsFromJsonValue(nested, tools, minEvidence, depth + 1);
  const call = callFromEntry(value, tools, minEvidence);
  return call === null ? [] : [call];
}

const CALL_SHAPE_KEYS = ['name', 'tool', 'function', 'arguments', 'parameters', 'tool_calls'];

// Shaped like a call, known tool or not: not something to show the user early.
export function looksLikeCallAttempt(value: unknown): boolean {
  const entries = Array.isArray(value) ? value : [value];
  return entries.some((entry) => isPlainObject(entry) && CALL_SHAPE_KEYS.some((key) => key in entry));
}

// ---------------------------------------------------------------- XML variants

function xmlArgValue(raw: string, propertySchema: JsonSchema | undefined): unknown {
  const value = decodeXmlEntities(raw).trim();
  if (propertySchema === undefined || propertySchema.type === undefined) {
    if (value.startsWith('{') || value.startsWith('[')) {
      const parsed = parseJson(value);
      if (parsed.ok && (isPlainObject(parsed.value) || Array.isArray(parsed.value))) return parsed.value;
    }
    return value;
  }
  return coerceValue(propertySchema, value);
}

function invokeCalls(section: string, tools: ToolIndex): TextToolCall[] {
  const calls: TextToolCall[] = [];
  const invokeRe = /<invoke\s+name\s*=\s*(["'])([\s\S]*?)\1[^>]*>([\s\S]*?)(?:<\/invoke\s*>|$)/gi;
  let match: RegExpExecArray | null;
  while ((match = invokeRe.exec(section)) !== null) {
    if (match[0] === '') break;
    const name = decodeXmlEntities(match[2] ?? '').trim();
    const schema = tools.get(name);
    if (schema === undefined) continue;
    const props = schemaProperties(schema);
    const args: Record<string, unknown> = {};
    const paramRe = /<parameter\s+name\s*=\s*(["'])([\s\S]*?)\1[^>]*>([\s\S]*?)<\/parameter\s*>/gi;
    let param: RegExpExecArray | null;
    while ((param = paramRe.exec(match[3] ?? '')) !== null) {
      const key = decodeXmlEntities(param[2] ?? '').trim();
      if (key === '') continue;
      setOwn(args, key, xmlArgValue(param[3] ?? '', Object.hasOwn(props, key) ? props[key] : undefined));
    }
    calls.push({ name, args });
  }
  return calls;
}

function nameTagCall(inner: string, tools: ToolIndex): TextToolCall | null {
  const nameMatch = /<name>([\s\S]*?)<\/name\s*>/i.exec(inner);
  if (nameMatch === null) return null;
  const name = decodeXmlEntities(nameMatch[1] ?? '').trim();
  if (!tools.has(name)) return null;
  const argsMatch = /<arguments>([\s\S]*?)<\/arguments\s*>/i.exec(inner) ?? /<parameters>([\s\S]*?)<\/parameters\s*>/i.exec(inner);
  const args = argsMatch === null ? {} : (argsFromValue(argsMatch[1] ?? '') ?? argsFromValue(decodeXmlEntities(argsMatch[1] ?? '')) ?? {});
  return { name, args };
}

function argPairCall(inner: string, tools: ToolIndex): TextToolCall | null {
  const head = /^\s*([^\s<]+)\s*([\s\S]*)$/.exec(inner);
  if (head === null) return null;
  const name = (head[1] ?? '').trim();
  const schema = tools.get(name);
  if (schema === undefined) return null;
  const props = schemaProperties(schema);
  const args: Record<string, unknown> = {};
  const pairRe = /<arg_key>([\s\S]*?)<\/arg_key\s*>\s*<arg_value>([\s\S]*?)<\/arg_value\s*>/gi;
  let pair: RegExpExecArray | null;
  while ((pair = pairRe.exec(head[2] ?? '')) !== null) {
    const key = decodeXmlEntities(pair[1] ?? '').trim();
    if (key === '') continue;
    setOwn(args, key, xmlArgValue(pair[2] ?? '', Object.hasOwn(props, key) ? props[key] : undefined));
  }
  return { name, args };
}

function unfence(text: string): string {
  const fenced = /^```[\w-]*[ \t]*\r?\n?([\s\S]*?)\r?\n?```$/.exec(text);
  return fenced === null ? text : (fenced[1] ?? '').trim();
}

function wrapperCalls(inner: string, tools: ToolIndex): TextToolCall[] {
  const body = unfence(inner.trim());
  if (body === '') return [];
  if (body.startsWith('{') || body.startsWith('[')) {
    const parsed = parseJson(body);
    // The wrapper already says "tool call", so one matching key is evidence enough.
    if (parsed.ok) {
      const calls = callsFromJsonValue(parsed.value, tools, 1);
      if (calls.length > 0) return calls;
    }
  }
  const invokes = invokeCalls(body, tools);
  if (invokes.length > 0) return invokes;
  const named = nameTagCall(body, tools);
  if (named !== null) return [named];
  const pairs = argPairCall(body, tools);
  return pairs === null ? [] : [pairs];
}

function xmlCalls(text: string, tools: ToolIndex): TextToolCallResult | null {
  const blocks = findMarkupBlocks(text);
  if (blocks.length === 0) return null;
  const calls: TextToolCall[] = [];
  for (const block of blocks) {
    if (block.tag.toLowerCase() === 'invoke') calls.push(...invokeCalls(text.slice(block.start, block.end), tools));
    else calls.push(...wrapperCalls(block.inner, tools));
  }
  if (calls.length === 0) return null;
  return { calls, remainingText: removeSpans(text, blocks).replace(STRAY_CLOSE_RE, '').trim() };
}

// ---------------------------------------------------------------- JSON variants

function jsonCalls(text: string, tools: ToolIndex): TextToolCallResult | null {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const direct = parseJson(trimmed);
    if (direct.ok) {
      const calls = callsFromJsonValue(direct.value, tools, 2);
      return calls.length > 0 ? { calls, remainingText: '' } : null;
    }
  }

  const fenceRe = /```[ \t]*([\w-]*)[ \t]*\r?\n?([\s\S]*?)```/g;
  const fencedCalls: TextToolCall[] = [];
  const fencedSpans: Span[] = [];
  let fence: RegExpExecArray | null;
  while ((fence = fenceRe.exec(text)) !== null) {
    const body = (fence[2] ?? '').trim();
    if (!body.startsWith('{') && !body.startsWith('[')) continue;
    const parsed = parseJson(body);
    if (!parsed.ok) continue;
    const calls = callsFromJsonValue(parsed.value, tools, 2);
    if (calls.length === 0) continue;
    fencedCalls.push(...calls);
    fencedSpans.push({ start: fence.index, end: fence.index + fence[0].length });
  }
  if (fencedCalls.length > 0) return { calls: fencedCalls, remainingText: removeSpans(text, fencedSpans).trim() };

  const found: TextToolCall[] = [];
  const spans: Span[] = [];
  let attempts = 0;
  let pos = 0;
  const opener = /\{|\[\s*\{/g;
  while (pos < text.length && attempts < MAX_JSON_CANDIDATES) {
    opener.lastIndex = pos;
    const next = opener.exec(text);
    if (next === null) break;
    const start = next.index;
    pos = start + 1;
    attempts++;
    const end = balancedJsonEnd(text, start);
    if (end === -1) continue;
    const parsed = parseJson(text.slice(start, end));
    if (!parsed.ok) continue;
    const calls = callsFromJsonValue(parsed.value, tools, 2);
    if (calls.length === 0) continue;
    found.push(...calls);
    spans.push({ start, end });
    pos = end;
  }
  return found.length > 0 ? { calls: found, remainingText: removeSpans(text, spans).trim() } : null;
}

export function toolIndex(tools: unknown): ToolIndex {
  const index: ToolIndex = new Map();
  if (!Array.isArray(tools)) return index;
  for (const tool of tools as unknown[]) {
    if (tool === null || typeof tool !== 'object') continue;
    const { name, schema } = tool as { name?: unknown; schema?: unknown };
    if (typeof name !== 'string' || name.trim() === '') continue;
    index.set(name.trim(), isPlainObject(schema) ? (schema as JsonSchema) : {});
  }
  return index;
}

/**
 * Finds tool calls written as text, for a response without native calls. XML markup
 * is tried first, then JSON (whole text, fenced blocks, embedded objects). Think blocks
 * are ignored. With no call found, `remainingText` is the text unchanged.
 */
export function extractTextToolCalls(text: string, tools: ReadonlyArray<TextToolSpec>): TextToolCallResult {
  const original = typeof text === 'string' ? text : '';
  const index = toolIndex(tools);
  if (original === '' || index.size === 0) return { calls: [], remainingText: original };
  const visible = stripThinkBlocks(original);
  return xmlCalls(visible, index) ?? jsonCalls(visible, index) ?? { calls: [], remainingText: original };
}
