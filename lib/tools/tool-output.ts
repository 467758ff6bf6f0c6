// Tool results as model-facing text, and assistant text as user-facing text.

import { stripThinkBlocks, stripToolCallMarkup } from '../llm/tool-markup.ts';

export const TOOL_OUTPUT_MAX_CHARS = 4000;

export interface ToolResultLike {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
}

const MAX_JSON_DEPTH = 64;

/** First `max` code points of `text` (lone surrogates replaced), plus "..." when cut. */
export function truncateUtf8Chars(text: string, max: number = TOOL_OUTPUT_MAX_CHARS): string {
  const source = (typeof text === 'string' ? text : String(text ?? '')).toWellFormed();
  const limit = typeof max === 'number' && Number.isFinite(max) ? Math.max(0, Math.floor(max)) : Infinity;
  if (limit === Infinity || source.length <= limit) return source;
  let count = 0;
  let index = 0;
  while (index < source.length) {
    if (count === limit) return source.slice(0, index) + '...';
    index += (source.codePointAt(index) ?? 0) > 0xffff ? 2 : 1;
    count++;
  }
  return source;
}

function safeJson(value: unknown): string | null {
  const seen = new WeakSet<object>();
  const depthOf = new WeakMap<object, number>();
  try {
    const json = JSON.stringify(
      value,
      function (this: unknown, _key: string, child: unknown): unknown {
        if (typeof child === 'bigint') return child.toString();
        if (child === null || typeof child !== 'object') return child;
        const parentDepth = this !== null && typeof this === 'object' ? (depthOf.get(this) ?? 0) : 0;
        if (seen.has(child) || parentDepth > MAX_JSON_DEPTH) return '[unserializable]';
        seen.add(child);
        depthOf.set(child, parentDepth + 1);
        return child;
      },
      2,
    );
    return typeof json === 'string' ? json : null;
  } catch {
    return null;
  }
}

function textParts(result: unknown): string | null {
  if (result === null || typeof result !== 'object') return null;
  const record = result as Record<string, unknown>;
  const parts: string[] = [];
  if (Array.isArray(record['content'])) {
    for (const item of record['content'] as unknown[]) {
      let text: unknown = null;
      if (typeof item === 'string') text = item;
      else if (item !== null && typeof item === 'object') {
        const block = item as Record<string, unknown>;
        if (block['type'] === 'text') text = block['text'];
      }
      if (typeof text === 'string' && text.trim() !== '') parts.push(text.trim());
    }
  }
  if (parts.length > 0) return parts.join('\n\n');
  if (typeof record['text'] === 'string' && record['text'].trim() !== '') return record['text'].trim();
  return null;
}

/**
 * The text a model sees for a tool result: the text blocks joined by blank lines,
 * else the result as pretty JSON; marked as an error when the result says so, and
 * truncated to `maxChars` code points.
 */
export function toolResultText(result: ToolResultLike | unknown, maxChars: number = TOOL_OUTPUT_MAX_CHARS): string {
  let text = textParts(result);
  if (text === null) {
    if (typeof result === 'string') text = result;
    else text = result === undefined ? null : safeJson(result);
  }
  if (text === null) text = 'Received invalid tool response';
  const isError = result !== null && typeof result === 'object' && (result as Record<string, unknown>)['isError'] === true;
  if (isError && !/^error\b/i.test(text)) text = `ERROR: ${text}`;
  return truncateUtf8Chars(text, maxChars);
}

// Space runs between words collapse; indentation and code fences are left alone.
function collapseWhitespace(text: string): string {
  const segments = text.split(/(```[\s\S]*?(?:```|$))/);
  return segments
    .map((segment, i) => {
      if (i % 2 === 1) return segment;
      return segment.replace(/(\S)[ \t]{2,}(?=\S)/g, '$1 ').replace(/\n[ \t]*\n(?:[ \t]*\n)+/g, '\n\n');
    })
    .join('');
}

// The whole answer written twice (optionally separated by whitespace) → once.
function removeWholeRepetition(text: string): string {
  const length = text.length;
  if (length % 2 === 0 && length >= 40) {
    const half = length / 2;
    if (text.slice(0, half) === text.slice(half)) return text.slice(0, half);
  }
  const gaps = /\s+/g;
  let gap: RegExpExecArray | null;
  while ((gap = gaps.exec(text)) !== null) {
    const start = gap.index;
    const end = start + gap[0].length;
    if (start >= 20 && start + end === length && text.slice(0, start) === text.slice(end)) return text.slice(0, start);
    if (start + end > length) break;
  }
  return text;
}

/** Assistant text fit for the user: no think blocks, no tool-call markup, tidy spacing, no doubled answer. */
export function sanitizeAssistantText(text: string): string {
  if (typeof text !== 'string' || text === '') return '';
  let cleaned = stripThinkBlocks(text);
  cleaned = stripToolCallMarkup(cleaned);
  cleaned = collapseWhitespace(cleaned).trim();
  return removeWholeRepetition(cleaned).trim();
}
