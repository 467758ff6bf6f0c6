// Tool-call and think markup in model text: finding, cutting and balancing it, shared by the parser and the stream filter.

export interface Span {
  start: number;
  end: number;
}

export interface MarkupBlock extends Span {
  tag: string;
  inner: string;
}

export const WRAPPER_TAG_RE = /^(?:[a-z0-9_-]+:)?(?:tool_call|function_call)$/i;
export const OPEN_TAG_RE = /<((?:[a-z0-9_-]+:)?(?:tool_call|function_call)|invoke)(?=[\s>/])[^>]*>/gi;
export const STRAY_CLOSE_RE = /<\/(?:(?:[a-z0-9_-]+:)?(?:tool_call|function_call)|invoke)\s*>/gi;

// ---------------------------------------------------------------- helpers

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function isToolTagName(name: string): boolean {
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

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

export function removeSpans(text: string, spans: Span[]): string {
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
export function cutTagBlocks(text: string, openRe: RegExp, closeFor: (tag: string) => RegExp): MarkupBlock[] {
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

export function findMarkupBlocks(text: string): MarkupBlock[] {
  return cutTagBlocks(text, OPEN_TAG_RE, (tag) => new RegExp(`</${escapeRegExp(tag)}\\s*>`, 'gi'));
}

/** Removes tool-call markup: wrapper and `<invoke>` blocks (closed or running to the end) and stray closers. */
export function stripToolCallMarkup(text: string): string {
  if (typeof text !== 'string' || text === '') return '';
  return removeSpans(text, findMarkupBlocks(text)).replace(STRAY_CLOSE_RE, '');
}
