// Server-sent events as OpenAI-compatible providers send them: `data:` lines
// (several join with "\n"), an optional `event:` name, comments (":"),
// events ended by a blank line, and LF, CRLF or CR line ends. Small and
// allocation-light, because a streamed answer is decoded once per token.

export interface SseEvent {
  /** The `event:` field, or null for the default ("message"). */
  event: string | null;
  data: string;
}

export class SseDecoder {
  #text = new TextDecoder('utf-8');
  // The start of a line whose end has not arrived yet.
  #partial = '';
  // A chunk ended in "\r": a "\n" at the start of the next one belongs to it.
  #skipLf = false;
  #data: string[] = [];
  #event: string | null = null;

  /** Decodes one body chunk; returns the events it completed (often none or one). */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.#text.decode(chunk, { stream: true });
    return this.#lines(text);
  }

  /** The body ended. An event without its closing blank line is dropped, as the SSE spec says. */
  finish(): SseEvent[] {
    const out = this.#lines(this.#text.decode());
    this.#partial = '';
    this.#data = [];
    this.#event = null;
    return out;
  }

  #lines(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    if (this.#skipLf && text.charCodeAt(0) === 10) start = 1;
    this.#skipLf = false;
    const length = text.length;
    while (start < length) {
      // The next line end: "\n", "\r" or "\r\n".
      let at = start;
      while (at < length) {
        const c = text.charCodeAt(at);
        if (c === 10 || c === 13) break;
        at++;
      }
      if (at === length) break;
      const line = this.#partial === '' ? text.slice(start, at) : this.#partial + text.slice(start, at);
      this.#partial = '';
      if (text.charCodeAt(at) === 13) {
        if (at + 1 === length) this.#skipLf = true;
        else if (text.charCodeAt(at + 1) === 10) at++;
      }
      start = at + 1;
      this.#line(line, out);
    }
    if (start < length) this.#partial += text.slice(start);
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) out.push({ event: this.#event, data: this.#data.length === 1 ? (this.#data[0] as string) : this.#data.join('\n') });
      this.#data = [];
      this.#event = null;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    // id and retry matter for reconnecting browsers only.
  }
}
