// Streamed text with tool-call markup held back or cut as it arrives.
import { escapeRegExp, isToolTagName, parseJson, balancedJsonEnd } from '../llm/tool-markup.ts';
import { callsFromJsonValue, looksLikeCallAttempt, toolIndex, type TextToolSpec, type ToolIndex } from './text-tool-calls.ts';

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
