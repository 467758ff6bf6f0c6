import type { Logger } from '../log/logger.ts';
import { NextcloudNetworkError, NextcloudServerError, NextcloudTimeoutError, NextcloudRateLimitError } from '../nextcloud/errors.ts';
import { BotSendError } from '../replies/bot-sender.ts';
import type { EventProcessor } from './event-processor.ts';
import type { HandedRow, Inbox, InboxEvent } from '../intake/inbox.ts';

export interface WorkerOptions {
  concurrency: number;
  pollMs: number;
  maxAttempts: number;
}

function transient(err: unknown): boolean {
  return (
    err instanceof NextcloudServerError ||
    err instanceof NextcloudTimeoutError ||
    err instanceof NextcloudNetworkError ||
    err instanceof NextcloudRateLimitError ||
    (err instanceof BotSendError && (err.status === 0 || err.status >= 500 || err.status === 429))
  );
}

/**
 * Takes inbox events in order within a room and concurrently across rooms,
 * at most `concurrency` at once. On start it releases events a crash left
 * in progress, so they resume.
 */
export class InboxWorker {
  readonly #inbox: Inbox;
  readonly #processor: EventProcessor;
  readonly #logger: Logger;
  readonly #options: WorkerOptions;
  readonly #running = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | null = null;
  #stopped = true;
  #pumping = false;
  #again = false;
  /** Whether rows may have been inserted since the inbox last read new rows (a pump after a finished job has none to read). */
  #unread = true;

  constructor(deps: { inbox: Inbox; processor: EventProcessor; logger: Logger; options?: Partial<WorkerOptions> }) {
    this.#inbox = deps.inbox;
    this.#processor = deps.processor;
    this.#logger = deps.logger;
    this.#options = { concurrency: 8, pollMs: 1000, maxAttempts: 5, ...deps.options };
  }

  async start(): Promise<void> {
    this.#stopped = false;
    const resumed = await this.#inbox.releaseInterrupted();
    if (resumed > 0) this.#logger.info({ resumed }, 'resuming interrupted Talk events');
    this.#timer = setInterval(() => {
      this.notify();
      void this.#inbox.maintain().catch((err: unknown) => this.#logger.warn({ err }, 'inbox maintenance failed'));
    }, this.#options.pollMs);
    this.#timer.unref();
    this.notify();
  }

  /**
   * Called after an insert (and by the poll timer); cheap when nothing is to do. With the inserted row
   * (the intake's hand-off), the next claim reads nothing when the inbox takes the row as it is.
   */
  notify(row?: HandedRow): void {
    if (row === undefined || !this.#inbox.offer(row)) this.#unread = true;
    this.#kick();
  }

  /** Claims what can run now: after an insert, or when a job finished and its room or slot is free. */
  #kick(): void {
    if (this.#stopped) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    void this.#pump().finally(() => {
      this.#pumping = false;
      if (this.#again) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  async #pump(): Promise<void> {
    try {
      const free = this.#options.concurrency - this.#running.size;
      // Without a free slot the claim reads nothing, so the flag stays for the next pump.
      const readNew = free > 0 && this.#unread;
      if (free > 0) this.#unread = false;
      // The running jobs' rooms, as they are: a copy per pump cost O(rooms) with many streams running.
      const events = await this.#inbox.claim(free, this.#running, { readNew });
      for (const event of events) {
        const job = this.#handle(event).finally(() => {
          this.#running.delete(event.roomToken);
          this.#kick();
        });
        this.#running.set(event.roomToken, job);
      }
    } catch (err) {
      this.#logger.error({ err }, 'inbox poll failed');
    }
  }

  async #handle(event: InboxEvent): Promise<void> {
    try {
      const outcome = await this.#processor.process(event);
      this.#logger.info({ roomToken: event.roomToken, messageId: event.messageId, outcome }, 'Talk event handled');
      await this.#inbox.complete(event.id);
    } catch (err) {
      if (transient(err) && event.attempts < this.#options.maxAttempts) {
        const delay = Math.min(60_000, 1000 * 2 ** event.attempts);
        this.#logger.warn({ err, roomToken: event.roomToken, attempt: event.attempts, delay }, 'Talk event failed, will retry');
        await this.#inbox.retryLater(event.id, delay).catch(() => undefined);
        return;
      }
      this.#logger.error({ err, roomToken: event.roomToken, messageId: event.messageId }, 'Talk event failed');
      await this.#inbox.complete(event.id).catch(() => undefined);
    }
  }

  /** Waits until nothing runs and nothing is pending (tests, shutdown). */
  async idle(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      await Promise.allSettled([...this.#running.values()]);
      // Claimed rows stay in the inbox until completed, so an empty inbox and no running job means idle.
      if (this.#running.size === 0 && (await this.#inbox.pendingCount()) === 0) return;
      if (Date.now() > until) throw new Error('inbox worker did not become idle');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await Promise.allSettled([...this.#running.values()]);
  }
}
