import { createHash } from 'node:crypto';
import { BotSendError, type BotMessage, type MessageSender } from './bot-sender.ts';
import { splitForTalk } from './message-splitter.ts';
import { ReplyChunker } from './reply-chunker.ts';
import type { LoggedChunk, ReplyRecord } from './reply-log.ts';
import type { ReplySanitizer } from './reply-sanitizer.ts';
import { talkTexts } from './talk-texts.ts';
import { ThinkFilter } from '../llm/think-filter.ts';

export interface ReplyTarget {
  inboxId: number;
  route: string;
  roomToken: string;
  /** The message the first chunk replies to (the user's message, or its reply parent). */
  replyTo: number | null;
  /** Inside a Talk thread every chunk keeps replyTo, so the answer stays in the thread. */
  inThread: boolean;
  /**
   * When `route` is a bot's own Talk identity chosen for this room: the identity the message came
   * through, and how to forget that the own one is enabled here once Talk refuses it.
   */
  fallback?: { route: string; forget: () => Promise<void> };
  /**
   * The answering bot's name, when the answer goes out through the shared identity in a room with
   * several of our bots: the first message then starts with "**Name:** ". Only Talk sees it; the
   * reply log keeps the text without it, so the model and memory never take it for the bot's words.
   */
  speaker?: string;
}

/** "**Name:**": a name without Markdown, line breaks or brackets, so it cannot open emphasis, a link or a second line. */
export function speakerLabel(name: string): string {
  const clean = name
    .replace(/[\r\n*_`~[\]()<>|#\\]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 64);
  return clean === '' ? '' : `**${clean}:**`;
}

/** Deterministic per reply and position, so a resumed reply can find what it already posted. */
export function chunkReferenceId(inboxId: number, seq: number, salt: string): string {
  return createHash('sha256').update(`${salt}:${inboxId}:${seq}`).digest('hex');
}

/**
 * Turns model deltas into Talk messages: think filter → paragraph/time
 * chunker → link and mention sanitiser (before each flush, S8) → split at
 * Talk's 32000-character limit → signed post, each recorded in the reply log.
 */
export class ReplyStream {
  readonly #target: ReplyTarget;
  #route: string;
  readonly #sender: MessageSender;
  readonly #log: ReplyRecord;
  readonly #sanitizer: ReplySanitizer;
  readonly #salt: string;
  readonly #now: () => number;
  #think = new ThinkFilter();
  #chunker: ReplyChunker;
  #seq: number;
  #postedCount: number;
  #placeholderSent = false;
  #streamedText: string[] = [];
  #sawThinking = false;

  constructor(deps: {
    target: ReplyTarget;
    sender: MessageSender;
    log: ReplyRecord;
    sanitizer: ReplySanitizer;
    salt: string;
    now?: () => number;
    previous?: LoggedChunk[];
  }) {
    this.#target = deps.target;
    this.#route = deps.target.route;
    this.#sender = deps.sender;
    this.#log = deps.log;
    this.#sanitizer = deps.sanitizer;
    this.#salt = deps.salt;
    this.#now = deps.now ?? Date.now;
    this.#chunker = new ReplyChunker({ now: this.#now });
    const previous = deps.previous ?? [];
    this.#seq = previous.length ? Math.max(...previous.map((c) => c.seq)) + 1 : 0;
    this.#postedCount = previous.filter((c) => c.posted).length;
  }

  /** True once anything reached Talk: from then on the model must not be switched (no fallback). */
  get committed(): boolean {
    return this.#postedCount > 0;
  }

  /** The visible text sent in this stream (thinking removed). */
  get text(): string {
    return this.#streamedText.join('\n\n');
  }

  get sawThinking(): boolean {
    return this.#sawThinking;
  }

  async push(delta: string): Promise<void> {
    const { text, thinkingStarted } = this.#think.push(delta);
    if (thinkingStarted) {
      this.#sawThinking = true;
      if (!this.#placeholderSent && !this.committed) {
        this.#placeholderSent = true;
        await this.post(talkTexts().thinking, false);
      }
    }
    if (!text) return;
    // Most deltas complete no chunk: no further await for them (this runs once per token).
    const chunks = this.#chunker.push(text);
    if (chunks.length > 0) await this.#flush(chunks);
  }

  /** Time-based flush while the model pauses. */
  async tick(): Promise<void> {
    const chunks = this.#chunker.tick();
    if (chunks.length > 0) await this.#flush(chunks);
  }

  /** The model switched (fallback before anything was posted): drop what is buffered. */
  restart(): void {
    this.#think = new ThinkFilter();
    this.#chunker = new ReplyChunker({ now: this.#now });
    this.#streamedText = [];
  }

  async finish(): Promise<string> {
    const rest = this.#think.finish();
    if (rest.sawThinking) this.#sawThinking = true;
    const chunks = rest.text ? this.#chunker.push(rest.text) : [];
    await this.#flush([...chunks, ...this.#chunker.finish()]);
    return this.text;
  }

  /** A message of its own (progress line, error, canned answer), through the same log and sanitiser. */
  async post(message: string, sanitize = true): Promise<void> {
    const clean = sanitize ? this.#sanitizer.sanitize(message) : message;
    if (clean.trim() === '') return;
    // The name goes before the first message only, through the sanitiser too (a name may look like a mention or link, S8).
    const name = this.#postedCount === 0 && this.#target.speaker ? this.#sanitizer.sanitize(speakerLabel(this.#target.speaker)).trim() : '';
    let label = name === '' ? '' : `${name} `;
    for (const piece of splitForTalk(label + clean)) {
      if (piece.trim() === '') continue;
      const logged = label !== '' && piece.startsWith(label) ? piece.slice(label.length) : piece;
      label = '';
      const seq = this.#seq++;
      const referenceId = chunkReferenceId(this.#target.inboxId, seq, this.#salt);
      await this.#log.intend(this.#target.inboxId, seq, referenceId, logged);
      const first = this.#postedCount === 0;
      const replyTo = this.#target.inThread || first ? this.#target.replyTo : null;
      // One notification per answer: the first message notifies (a reply, or a message in a one-to-one
      // room); every later chunk is silent, so a long answer or a thread reply does not ring for each.
      await this.#send({ message: piece, replyTo, referenceId, ...(first ? {} : { silent: true }) });
      await this.#log.posted(this.#target.inboxId, seq);
      this.#postedCount++;
    }
  }

  async #send(msg: BotMessage): Promise<void> {
    try {
      await this.#sender.send(this.#route, this.#target.roomToken, msg);
    } catch (err) {
      // Talk answers 401 when the identity is not enabled in the room (a moderator removed it): answer
      // through the identity the message came through, and stop choosing the removed one here. Sending
      // through it again would only earn more 401s, which Talk throttles for all our bots.
      const fallback = this.#target.fallback;
      if (!(err instanceof BotSendError) || err.status !== 401 || !fallback || this.#route === fallback.route) throw err;
      await fallback.forget();
      this.#route = fallback.route;
      await this.#sender.send(this.#route, this.#target.roomToken, msg);
    }
  }

  async #flush(chunks: string[]): Promise<void> {
    for (const chunk of chunks) {
      if (chunk.trim() === '') continue;
      this.#streamedText.push(chunk);
      await this.post(chunk);
    }
  }
}
