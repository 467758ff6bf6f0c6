// One turn's trace: events are written in order in the background, in batches, so tracing never slows or
// breaks a turn and the processing thread takes the database write lock once per batch, not per event.
// A turn that ends before the first batch is due is written whole, in one transaction.
import type { PendingRun, StartRunInput, TraceEventInput, TraceStatus, TraceStore } from './trace-store.ts';

/** Events wait at most this long before they are written (a crash loses at most this much of a trace). */
const FLUSH_AFTER_MS = 250;
const FLUSH_AT_EVENTS = 32;

export class TurnTrace {
  readonly runId: string | null;
  readonly #store: TraceStore | null;
  /** Set until the run's row is written (or given up). */
  #pending: PendingRun | null;
  #chain: Promise<void> = Promise.resolve();
  #buffer: TraceEventInput[] = [];
  #timer: NodeJS.Timeout | null = null;
  #finished = false;
  #dropped = false;

  private constructor(store: TraceStore | null, run: PendingRun | null) {
    this.#store = store;
    this.#pending = run;
    this.runId = run?.id ?? null;
    // The row appears as "running" once the turn has taken a while, with or without events.
    if (run) this.#schedule();
  }

  /** A trace that records nothing (no store, or tracing failed to start). */
  static none(): TurnTrace {
    return new TurnTrace(null, null);
  }

  static async start(store: TraceStore | null, input: StartRunInput): Promise<TurnTrace> {
    if (store === null) return TurnTrace.none();
    return new TurnTrace(store, store.newRun(input));
  }

  get active(): boolean {
    return this.runId !== null && !this.#finished && !this.#dropped;
  }

  /** Queues one event; TraceStore never throws, and the queue keeps their order. */
  record(event: TraceEventInput): void {
    if (!this.active || this.#store === null) return;
    this.#buffer.push(event);
    if (this.#buffer.length >= FLUSH_AT_EVENTS) this.#flush();
    else this.#schedule();
  }

  /** Writes the queued events, then closes the run. */
  async finish(status: Exclude<TraceStatus, 'running'>, errorSummary?: string | null): Promise<void> {
    if (!this.active || this.#store === null) return;
    this.#finished = true;
    this.#clearTimer();
    await this.#chain;
    const store = this.#store;
    const pending = this.#pending;
    if (pending !== null) {
      // Nothing written yet: the whole run in one transaction.
      this.#pending = null;
      const events = this.#buffer;
      this.#buffer = [];
      await store.writeRun(pending, events, status, errorSummary ?? null);
      return;
    }
    if (this.#dropped) return;
    this.#flush();
    await this.#chain;
    await store.finishRun(this.runId, status, errorSummary ?? null);
  }

  /** Resolves once every queued event is written (tests, shutdown). */
  flushed(): Promise<void> {
    this.#flush();
    return this.#chain;
  }

  #schedule(): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => this.#flush(), FLUSH_AFTER_MS);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #flush(): void {
    this.#clearTimer();
    const store = this.#store;
    if (store === null || this.runId === null) return;
    const pending = this.#pending;
    if (pending !== null) {
      this.#pending = null;
      this.#chain = this.#chain
        .then(async () => {
          if (!(await store.insertRun(pending))) this.#dropped = true;
        })
        .catch(() => undefined);
    }
    if (this.#buffer.length === 0) return;
    const batch = this.#buffer;
    this.#buffer = [];
    const runId = this.runId;
    this.#chain = this.#chain.then(() => (this.#dropped ? undefined : store.recordEvents(runId, batch))).catch(() => undefined);
  }
}
