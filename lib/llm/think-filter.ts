// Removes reasoning blocks (<think>…</think>, <thinking>…</thinking>) from streamed
// model output. Users see the answer, not the model's scratchpad, and a streamed
// chunk cannot be taken back, so the filter works before text is released.

export const THINKING_PLACEHOLDER = '🤔 _(thinking… this may take a moment)_';

const ANY_TAG = /<\/?think(?:ing)?>/i;
const CLOSE_TAG = /<\/think(?:ing)?>/i;
const OPEN_TAGS = ['<think>', '<thinking>'];
const CLOSE_TAGS = ['</think>', '</thinking>'];
const ALL_TAGS = [...OPEN_TAGS, ...CLOSE_TAGS];

// Start of a trailing proper prefix of a tag, else text.length. Tags hold a single
// "<", so only the last "<" can start one: the hold-back stays minimal.
function heldTagStart(text: string, tags: string[]): number {
  const lt = text.lastIndexOf('<');
  if (lt === -1) return text.length;
  const tail = text.slice(lt).toLowerCase();
  return tags.some((tag) => tag.length > tail.length && tag.startsWith(tail)) ? lt : text.length;
}

export class ThinkFilter {
  #inThink = false;
  #held = '';
  #seenTag = false;
  #sawThinking = false;
  #startReported = false;

  /**
   * Returns the visible text of this delta. `thinkingStarted` is true once, on the
   * delta where the first think block opens, so the caller can send one placeholder.
   */
  push(delta: string): { text: string; thinkingStarted: boolean } {
    let rest = this.#held + delta;
    this.#held = '';
    let text = '';
    let thinkingStarted = false;
    for (;;) {
      if (this.#inThink) {
        const close = CLOSE_TAG.exec(rest);
        if (!close) {
          // Thinking text is dropped; only a possible closer prefix is kept.
          const held = heldTagStart(rest, CLOSE_TAGS);
          this.#held = rest.slice(held);
          break;
        }
        this.#inThink = false;
        rest = rest.slice(close.index + close[0].length);
        continue;
      }
      const tag = ANY_TAG.exec(rest);
      if (!tag) {
        const held = heldTagStart(rest, ALL_TAGS);
        text += rest.slice(0, held);
        this.#held = rest.slice(held);
        break;
      }
      const before = rest.slice(0, tag.index);
      rest = rest.slice(tag.index + tag[0].length);
      const isCloser = tag[0][1] === '/';
      if (isCloser) {
        // A closer as the very first tag means the model skipped the opener (chat
        // templates that prefill it): what came before was thinking. Text already
        // released by earlier deltas cannot be recalled; stripThinking() sees all.
        if (this.#seenTag) text += before;
        else this.#sawThinking = true;
        this.#seenTag = true;
        continue;
      }
      text += before;
      this.#seenTag = true;
      this.#inThink = true;
      this.#sawThinking = true;
      if (!this.#startReported) {
        this.#startReported = true;
        thinkingStarted = true;
      }
    }
    return { text, thinkingStarted };
  }

  /** Ends the stream: releases a held partial tag, drops an unclosed block. */
  finish(): { text: string; sawThinking: boolean } {
    const text = this.#inThink ? '' : this.#held;
    const sawThinking = this.#sawThinking;
    this.#inThink = false;
    this.#held = '';
    this.#seenTag = false;
    this.#sawThinking = false;
    this.#startReported = false;
    return { text, sawThinking };
  }
}

/** Strips think blocks (closed, unclosed, leading stray closer) from a whole text. */
export function stripThinking(text: string): string {
  const filter = new ThinkFilter();
  const head = filter.push(text).text;
  return (head + filter.finish().text).trim();
}
