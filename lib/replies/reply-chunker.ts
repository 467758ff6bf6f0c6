// Turns streamed model deltas into readable Talk messages. Talk bots cannot edit
// a message, so every flush becomes its own message: flush on paragraphs, or on a
// sentence end after a quiet spell, never token by token.

export interface ReplyChunkerOptions {
  now?: () => number;
  idleFlushMs?: number;
  minBufferedChars?: number;
  minCutIndex?: number;
}

interface FenceSpan {
  start: number; // offset of the opening fence line
  end: number; // offset of the newline ending the closing line; Infinity while open
}

// CommonMark fence: up to 3 spaces, then ``` or ~~~ (3 or more), then an info string.
const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
// A partial last line that may still grow into a fence opener.
const MAYBE_FENCE = /^ {0,3}[`~]/;
const SENTENCE_END = /[.!?][ \n]/g;
// Only these characters create cut points (sentence ends and newlines; fences change on newlines).
const CUT_CHAR = /[.!?\n]/;
// Newline fallback only counts after this offset, so a chunk is not just a heading.
const MIN_NEWLINE_INDEX = 30;

export class ReplyChunker {
  readonly #now: () => number;
  readonly #idleFlushMs: number;
  readonly #minBufferedChars: number;
  readonly #minCutIndex: number;
  #buffer = '';
  #lastFlush: number;
  // Fence bookkeeping over the complete lines of #buffer, rebuilt after every cut.
  #scanned = 0;
  #spans: FenceSpan[] = [];
  #open: { char: string; len: number } | null = null;
  // A time-based search found no cut, and no delta since brought a character that could make one.
  #searchFailed = false;
  #cutChance = false;
  // The last delta ended in a cut character, so the next character may complete a cut point (". ").
  #prevEndsCut = false;

  constructor(options: ReplyChunkerOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#idleFlushMs = options.idleFlushMs ?? 3000;
    this.#minBufferedChars = options.minBufferedChars ?? 100;
    this.#minCutIndex = options.minCutIndex ?? 50;
    this.#lastFlush = this.#now();
  }

  /** Adds a delta; returns the chunks that are ready to be sent now. */
  push(delta: string): string[] {
    if (delta === '') return this.tick();
    const before = this.#buffer.length;
    // Appending makes a rope that every search would copy flat again; a delta
    // without a newline (most of them) needs no search at all.
    this.#buffer += delta;
    this.#cutChance ||= this.#prevEndsCut || CUT_CHAR.test(delta);
    this.#prevEndsCut = CUT_CHAR.test(delta.charAt(delta.length - 1));
    if (delta.includes('\n')) {
      this.#scanLines();
      // Older text holds no usable boundary (it would have been flushed), so a new
      // "\n\n" must involve at least one new character.
      const paragraphs = this.#flushParagraphs(Math.max(0, before - 1));
      if (paragraphs.length > 0) return paragraphs;
    }
    return this.tick();
  }

  /** Time-based flush without new text, for a timer while the model is slow. */
  tick(): string[] {
    if (this.#now() - this.#lastFlush <= this.#idleFlushMs) return [];
    // UTF-16 length is close enough for a "has enough text" threshold.
    if (this.#buffer.length <= this.#minBufferedChars) return [];
    // A failed search stays failed until a sentence end or a newline arrives, so a
    // long sentence costs one search per such character, not one per delta.
    if (this.#searchFailed && !this.#cutChance) return [];
    const cut = this.#findCut();
    if (cut <= this.#minCutIndex) {
      this.#searchFailed = true;
      this.#cutChance = false;
      return [];
    }
    const chunk = this.#buffer.slice(0, cut).trim();
    this.#consume(cut);
    if (chunk === '') return [];
    this.#lastFlush = this.#now();
    return [chunk];
  }

  /** Ends the stream; returns whatever is left, even an unclosed code block. */
  finish(): string[] {
    const chunk = this.#buffer.trim();
    this.#consume(this.#buffer.length);
    this.#lastFlush = this.#now();
    return chunk === '' ? [] : [chunk];
  }

  #flushParagraphs(from: number): string[] {
    const buffer = this.#buffer;
    const chunks: string[] = [];
    let start = 0;
    let at = buffer.indexOf('\n\n', from);
    while (at !== -1) {
      let next = at + 2;
      while (buffer[next] === '\n') next++;
      if (!this.#insideFence(at)) {
        const chunk = buffer.slice(start, at).trim();
        if (chunk !== '') chunks.push(chunk);
        start = next;
      }
      at = buffer.indexOf('\n\n', next);
    }
    if (start === 0) return [];
    this.#consume(start);
    if (chunks.length > 0) this.#lastFlush = this.#now();
    return chunks;
  }

  // Cut point for a time-based flush: sentence end, else a late newline.
  #findCut(): number {
    const buffer = this.#buffer;
    const limit = this.#cutLimit();
    // Only text before the limit is searched, so a long open fence costs nothing per delta.
    const head = buffer.slice(0, limit);
    const allowed = (cut: number): boolean => !this.#insideFence(cut);
    const last = buffer.length - 1;
    if (limit === buffer.length && /[.!?]/.test(buffer[last] ?? '') && this.#isSentenceEnd(last) && allowed(limit)) {
      return buffer.length;
    }
    let best = -1;
    for (const match of head.matchAll(SENTENCE_END)) {
      const cut = match.index + 2;
      if (this.#isSentenceEnd(match.index) && allowed(cut)) best = cut;
    }
    if (best > this.#minCutIndex) return best;
    let newline = head.lastIndexOf('\n');
    while (newline > MIN_NEWLINE_INDEX) {
      if (allowed(newline + 1)) return newline + 1;
      newline = head.lastIndexOf('\n', newline - 1);
    }
    return best;
  }

  // "1. " starts an ordered list item; cutting there would orphan the marker.
  #isSentenceEnd(index: number): boolean {
    if (this.#buffer[index] !== '.') return true;
    const lineStart = this.#buffer.lastIndexOf('\n', index - 1) + 1;
    return !/^\s*\d+$/.test(this.#buffer.slice(lineStart, index));
  }

  // Cuts stay before an open fence and before a partial last line that could
  // still become a fence opener.
  #cutLimit(): number {
    if (this.#open) return this.#spans.at(-1)?.start ?? 0;
    const partial = this.#buffer.slice(this.#scanned);
    return MAYBE_FENCE.test(partial) ? this.#scanned : this.#buffer.length;
  }

  #insideFence(offset: number): boolean {
    return this.#spans.some((span) => offset > span.start && offset < span.end);
  }

  #consume(count: number): void {
    this.#buffer = this.#buffer.slice(count);
    this.#searchFailed = false;
    // Every cut lies outside a fence, so the remainder starts outside one too.
    this.#scanned = 0;
    this.#spans = [];
    this.#open = null;
    this.#scanLines();
  }

  #scanLines(): void {
    let newline = this.#buffer.indexOf('\n', this.#scanned);
    while (newline !== -1) {
      const match = FENCE_LINE.exec(this.#buffer.slice(this.#scanned, newline));
      const marker = match?.[1] ?? '';
      const rest = match?.[2] ?? '';
      const open = this.#open;
      if (open) {
        const closes = match && marker[0] === open.char && marker.length >= open.len && rest.trim() === '';
        const span = this.#spans.at(-1);
        if (closes && span) {
          span.end = newline;
          this.#open = null;
        }
      } else if (match && !(marker[0] === '`' && rest.includes('`'))) {
        // A backtick in the info string makes it inline code, not a fence.
        this.#open = { char: marker[0] ?? '`', len: marker.length };
        this.#spans.push({ start: this.#scanned, end: Infinity });
      }
      this.#scanned = newline + 1;
      newline = this.#buffer.indexOf('\n', this.#scanned);
    }
  }
}
