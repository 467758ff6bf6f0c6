// Tool calls that weak models write as text (JSON or XML) instead of native calls.
// Only tools the bot has are ever accepted; a plain JSON answer stays an answer.

import { coerceValue } from './argument-normalizer.ts';
import { isPlainObject, schemaProperties, schemaRequired, setOwn } from '../tools/json-schema.ts';
import type { JsonSchema } from '../tools/json-schema.ts';

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

interface Span {
  start: number;
  end: number;
}

interface MarkupBlock extends Span {
  tag: string;
  inner: string;
}

type ToolIndex = Map<string, JsonSchema>;

const META_KEYS = new Set(['name', 'tool', 'function', 'parameters', 'arguments', 'id', 'type']);
const WRAPPER_TAG_RE = /^(?:[a-z0-9_-]+:)?(?:tool_call|function_call)$/i;
const OPEN_TAG_RE = /<((?:[a-z0-9_-]+:)?(?:tool_call|function_call)|invoke)(?=[\s>/])[^>]*>/gi;
const STRAY_CLOSE_RE = /<\/(?:(?:[a-z0-9_-]+:)?(?:tool_call|function_call)|invoke)\s*>/gi;
const MAX_JSON_CANDIDATES = 100;
const MAX_JSON_DEPTH = 4;

// ---------------------------------------------------------------- helpers

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function isToolTagName(name: string): boolean {
  return WRAPPER_TAG_RE.test(name) || name.toLowerCase() === 'invoke';
}

export function decodeXmlEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (whole, entity: string) => {
    const lower = entity.toLowerCase();
    if (lower === 'amp') return '&';
    if (lower === 'lt') return '<';
    if (lower === 'gt') return '>';
    if (lower === 'quot') return '"';
    if (lower === 'apos') return "'";
    const code = lower.startsWith('#x') ? parseInt(lower.slice(2), 16) : parseInt(lower.slice(1), 10);
    if (!Number.isFinite(code) || code < 1 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return whole;
    return String.fromCodePoint(code);
  });
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function removeSpans(text: string, spans: Span[]): string {
  const sorted = [...spans].sort((a, b) => a.start - b.start);
  let out = '';
  let pos = 0;
  for (const span of sorted) {
    if (span.start < pos) continue;
    out += text.slice(pos, span.start);
    pos = span.end;
  }
  return out + text.slice(pos);
}

/** Index just past the JSON value that opens at `start`, or -1 if it never closes. */
export function balancedJsonEnd(text: string, start: number): number {
  const open = text[start];
  if (open !== '{' && open !== '[') return -1;
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') stack.push('}');
    else if (ch === '[') stack.push(']');
    else if (ch === '}' || ch === ']') {
      if (stack.pop() !== ch) return -1;
      if (stack.length === 0) return i + 1;
    }
  }
  return -1;
}

// ---------------------------------------------------------------- think blocks and markup

// Blocks from an opening tag to its closing tag, or to the end when it never closes.
function cutTagBlocks(text: string, openRe: RegExp, closeFor: (tag: string) => RegExp): MarkupBlock[] {
  const blocks: MarkupBlock[] = [];
  const open = new RegExp(openRe.source, 'gi');
  let match: RegExpExecArray | null;
  while ((match = open.exec(text)) !== null) {
    const tag = match[1] ?? '';
    const innerStart = match.index + match[0].length;
    const close = closeFor(tag);
    close.lastIndex = innerStart;
    const closing = close.exec(text);
    if (closing === null) {
      blocks.push({ start: match.index, end: text.length, tag, inner: text.slice(innerStart) });
      break;
    }
    blocks.push({ start: match.index, end: closing.index + closing[0].length, tag, inner: text.slice(innerStart, closing.index) });
    open.lastIndex = closing.index + closing[0].length;
  }
  return blocks;
}

/** Removes `<think>` blocks: closed ones, an unclosed one to the end, and stray tags. */
export function stripThinkBlocks(text: string): string {
  if (typeof text !== 'string' || text === '') return '';
  const blocks = cutTagBlocks(text, /<(think)\b[^>]*>/, () => /<\/think\s*>/gi);
  return removeSpans(text, blocks).replace(/<\/?think\b[^>]*>/gi, '');
}

function findMarkupBlocks(text: string): MarkupBlock[] {
  return cutTagBlocks(text, OPEN_TAG_RE, (tag) => new RegExp(`</${escapeRegExp(tag)}\\s*>`, 'gi'));
}

/** Removes tool-call markup: wrapper and `<invoke>` blocks (closed or running to the end) and stray closers. */
export function stripToolCallMarkup(text: string): string {
  if (typeof text !== 'string' || text === '') return '';
  return removeSpans(text, findMarkupBlocks(text)).replace(STRAY_CLOSE_RE, '');
}

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

function callsFromJsonValue(value: unknown, tools: ToolIndex, minEvidence: number, depth = 0): TextToolCall[] {
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
function looksLikeCallAttempt(value: unknown): boolean {
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

function toolIndex(tools: unknown): ToolIndex {
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

// ---------------------------------------------------------------- streaming

const PARTIAL_TAG_LIMIT = 64;

/**
 * Filters one iteration's streamed text. XML tool-call blocks are removed as they
 * arrive, with a tag split across deltas held back until it is complete. A stream
 * whose first visible character is `{` or `[` is held, as it is probably a JSON tool
 * call, until it is clearly not one; otherwise `finish()` returns the held text and
 * the caller, knowing whether a call was parsed, decides whether to show it.
 * Pass the tools to let a complete leading JSON value be judged before the end.
 */
export class ToolMarkupStreamFilter {
  #tools: ToolIndex | null;
  #mode: 'probe' | 'hold' | 'pass' = 'probe';
  #held = '';
  #carry = '';
  #inside: string | null = null;
  #finished = false;
  #verdictPending = true;
  #secondTokenSeen = false;

  constructor(options?: { tools?: ReadonlyArray<TextToolSpec> }) {
    this.#tools = options?.tools !== undefined ? toolIndex(options.tools) : null;
  }

  /** True while the stream is held as a possible JSON tool call. */
  get holding(): boolean {
    return this.#mode === 'hold';
  }

  push(delta: string): string {
    if (this.#finished || typeof delta !== 'string' || delta === '') return '';
    if (this.#mode === 'pass') return this.#filter(delta, false);
    this.#held += delta;
    if (this.#mode === 'probe') {
      const visible = this.#held.trimStart();
      if (visible === '') return '';
      if (!visible.startsWith('{') && !visible.startsWith('[')) return this.#release();
      this.#mode = 'hold';
    }
    // The verdict can only change once a closing bracket or the first token arrives.
    if (this.#verdictPending && (!this.#secondTokenSeen || /[}\]]/.test(delta))) {
      if (this.#clearlyNotToolCall()) return this.#release();
    }
    return '';
  }

  finish(): string {
    if (this.#finished) return '';
    this.#finished = true;
    const rest = this.#held;
    this.#held = '';
    this.#mode = 'pass';
    return this.#filter(rest, true);
  }

  #release(): string {
    const text = this.#held;
    this.#held = '';
    this.#mode = 'pass';
    return this.#filter(text, false);
  }

  #clearlyNotToolCall(): boolean {
    const visible = this.#held.trimStart();
    const next = visible.slice(1).trimStart();
    if (next === '') return false;
    this.#secondTokenSeen = true;
    if (visible.startsWith('{') && !next.startsWith('"')) return true;
    if (visible.startsWith('[') && !next.startsWith('{')) return true;
    const end = balancedJsonEnd(visible, 0);
    if (end === -1) return false;
    // The leading value is complete: from here on the answer cannot change.
    this.#verdictPending = false;
    const parsed = parseJson(visible.slice(0, end));
    if (!parsed.ok) return true;
    if (this.#tools === null || looksLikeCallAttempt(parsed.value)) return false;
    return callsFromJsonValue(parsed.value, this.#tools, 2).length === 0;
  }

  #filter(text: string, final: boolean): string {
    let buf = this.#carry + text;
    this.#carry = '';
    let out = '';
    while (buf !== '') {
      if (this.#inside !== null) {
        const close = new RegExp(`</${escapeRegExp(this.#inside)}\\s*>`, 'i').exec(buf);
        if (close !== null) {
          buf = buf.slice(close.index + close[0].length);
          this.#inside = null;
          continue;
        }
        // Keep only what could still become the closing tag.
        if (!final) this.#carry = buf.slice(-(this.#inside.length + 16));
        return out;
      }
      const scanned = this.#scanOutside(buf, final);
      out += scanned.visible;
      if (scanned.rest === null) return out;
      buf = scanned.rest;
    }
    return out;
  }

  // Emits text up to the next tool tag. rest === null: buffer consumed (or carried).
  #scanOutside(buf: string, final: boolean): { visible: string; rest: string | null } {
    let from = 0;
    while (true) {
      const lt = buf.indexOf('<', from);
      if (lt === -1) return { visible: buf, rest: null };
      const head = /^<(\/?)([A-Za-z0-9_:-]*)/.exec(buf.slice(lt, lt + PARTIAL_TAG_LIMIT + 2));
      const closing = head?.[1] === '/';
      const name = head?.[2] ?? '';
      const afterIndex = lt + (head?.[0].length ?? 1);
      if (afterIndex >= buf.length) {
        if (!final && afterIndex - lt <= PARTIAL_TAG_LIMIT) {
          this.#carry = buf.slice(lt);
          return { visible: buf.slice(0, lt), rest: null };
        }
        return { visible: buf, rest: null };
      }
      const after = buf[afterIndex] ?? '';
      if (name !== '' && isToolTagName(name)) {
        if (closing) {
          const gt = buf.indexOf('>', afterIndex);
          if (gt !== -1 && buf.slice(afterIndex, gt).trim() === '') {
            return { visible: buf.slice(0, lt), rest: buf.slice(gt + 1) };
          }
          if (gt === -1 && !final && /^\s*$/.test(buf.slice(afterIndex))) {
            this.#carry = buf.slice(lt);
            return { visible: buf.slice(0, lt), rest: null };
          }
        } else if (after === '>' || after === '/' || /\s/.test(after)) {
          this.#inside = name;
          return { visible: buf.slice(0, lt), rest: buf.slice(afterIndex) };
        }
      }
      from = lt + 1;
    }
  }
}
