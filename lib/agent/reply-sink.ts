// Where a turn's output goes (a ReplyStream into Talk), serialised with its time-based flush.

/** The part of ReplyStream a turn uses. */
export interface ReplySink {
  /** True once anything reached Talk. */
  readonly committed: boolean;
  /** Visible text streamed so far (thinking removed). */
  readonly text: string;
  readonly sawThinking: boolean;
  push(delta: string): Promise<void>;
  tick(): Promise<void>;
  /** Drops what is buffered and not yet posted (model switched before anything was posted). */
  restart(): void;
  /** Flushes what is buffered; the sink stays usable. */
  finish(): Promise<string>;
  /** A message of its own (progress line, notice). */
  post(message: string, sanitize?: boolean): Promise<void>;
}

/**
 * Serialises pushes, posts and a periodic tick into one queue, so a slow model
 * still gets its text out at sentence ends while Talk sees messages in order.
 * The first failure sticks: later calls reject with it.
 */
export class SerialReplySink implements ReplySink {
  readonly #inner: ReplySink;
  readonly #tickMs: number;
  #chain: Promise<void> = Promise.resolve();
  #failure: { error: unknown } | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(inner: ReplySink, tickMs = 500) {
    this.#inner = inner;
    this.#tickMs = tickMs;
  }

  get committed(): boolean {
    return this.#inner.committed;
  }

  get text(): string {
    return this.#inner.text;
  }

  get sawThinking(): boolean {
    return this.#inner.sawThinking;
  }

  start(): void {
    if (this.#timer !== null || this.#tickMs <= 0) return;
    this.#timer = setInterval(() => void this.#run(() => this.#inner.tick()).catch(() => undefined), this.#tickMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  push(delta: string): Promise<void> {
    return this.#run(() => this.#inner.push(delta));
  }

  tick(): Promise<void> {
    return this.#run(() => this.#inner.tick());
  }

  restart(): void {
    this.#inner.restart();
  }

  async finish(): Promise<string> {
    await this.#run(async () => void (await this.#inner.finish()));
    return this.#inner.text;
  }

  post(message: string, sanitize = true): Promise<void> {
    return this.#run(() => this.#inner.post(message, sanitize));
  }

  /** Waits for everything queued; rejects with the first failure. */
  async settle(): Promise<void> {
    await this.#chain;
    if (this.#failure) throw this.#failure.error;
  }

  #run(fn: () => Promise<void>): Promise<void> {
    const next = this.#chain.then(async () => {
      if (this.#failure) throw this.#failure.error;
      try {
        await fn();
      } catch (error) {
        this.#failure ??= { error };
        throw error;
      }
    });
    this.#chain = next.catch(() => undefined);
    return next;
  }
}
