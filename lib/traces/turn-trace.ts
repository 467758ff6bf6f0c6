// One turn's trace: events are written in order in the background, in batches, so tracing never slows or
// breaks a turn and the processing thread takes the database write lock once per batch, not per event.
import type { StartRunInput, TraceEventInput, TraceStatus, TraceStore } from './trace-store.ts';

/** Events wait at most this long before they are written (a crash loses at most this much of a trace). */
const FLUSH_AFTER_MS = 250;
const FLUSH_AT_EVENTS = 32;

export class TurnTrace {
  readonly runId: string | null;
  readonly #store: TraceStore | null;
  #chain: Promise<void> = Promise.resolve();
  #buffer: TraceEventInput[] = [];
  #timer: NodeJS.Timeout | null = null;
  #finished = false;

  private constructor(store: TraceStore | null, runId: string | null) {
    this.#store = store;
    this.runId = runId;
  }

  /** A trace that records nothing (no store, or tracing failed to start). */
  static none(): TurnTrace {
    return new TurnTrace(null, null);
  }

  static async start(store: TraceStore | null, input: StartRunInput): Promise<TurnTrace> {
    if (store === null) return TurnTrace.none();
    return new TurnTrace(store, await store.startRun(input));
  }

  get active(): boolean {
    return this.runId !== null && !this.#finished;
  }

  /** Queues one event; TraceStore never throws, and the queue keeps their order. */
  record(event: TraceEventInput): void {
    if (!this.active || this.#store === null) return;
    this.#buffer.push(event);
    if (this.#buffer.length >= FLUSH_AT_EVENTS) this.#flush();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => this.#flush(), FLUSH_AFTER_MS);
      this.#timer.unref();
    }
  }

  /** Writes the queued events, then closes the run. */
  async finish(status: Exclude<TraceStatus, 'running'>, errorSummary?: string | null): Promise<void> {
    if (!this.active || this.#store === null) return;
    this.#finished = true;
    this.#flush();
    await this.#chain;
    await this.#store.finishRun(this.runId, status, errorSummary ?? null);
  }

  /** Resolves once every queued event is written (tests, shutdown). */
  flushed(): Promise<void> {
    this.#flush();
    return this.#chain;
  }

  #flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#buffer.length === 0 || this.#store === null) return;
    const batch = this.#buffer;
    this.#buffer = [];
    const store = this.#store;
    const runId = this.runId;
    this.#chain = this.#chain.then(() => store.recordEvents(runId, batch)).catch(() => undefined);
  }
}
