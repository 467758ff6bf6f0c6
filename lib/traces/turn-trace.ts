// One turn's trace: events are written in order in the background, so tracing never slows or breaks a turn.
import type { StartRunInput, TraceEventInput, TraceStatus, TraceStore } from './trace-store.ts';

export class TurnTrace {
  readonly runId: string | null;
  readonly #store: TraceStore | null;
  #chain: Promise<void> = Promise.resolve();
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
    const store = this.#store;
    const runId = this.runId;
    this.#chain = this.#chain.then(() => store.recordEvent(runId, event)).catch(() => undefined);
  }

  /** Waits for the queued events, then closes the run. */
  async finish(status: Exclude<TraceStatus, 'running'>, errorSummary?: string | null): Promise<void> {
    if (!this.active || this.#store === null) return;
    this.#finished = true;
    await this.#chain;
    await this.#store.finishRun(this.runId, status, errorSummary ?? null);
  }

  /** Resolves once every queued event is written (tests, shutdown). */
  flushed(): Promise<void> {
    return this.#chain;
  }
}
