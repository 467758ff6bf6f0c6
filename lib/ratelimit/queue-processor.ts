// Replays queued turns when the rate limits have room again: in the background and on an admin's request.
import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import { redactString } from '../log/redact.ts';
import type { Database } from '../storage/schema.ts';
import type { RateLevel } from './rate-limiter.ts';
import { queueNotices, type QueuedRequest, type RequestQueue } from './request-queue.ts';

export type ReplayOutcome =
  /** The answer went out (or the failure was told to the user after something was posted). */
  | { kind: 'answered' }
  /** The limiter still refuses: back to the queue, without counting an attempt. */
  | { kind: 'deferred'; retryAfterMs: number; level: RateLevel }
  /** Failed before anything reached the user: counts as an attempt. */
  | { kind: 'retry'; reason: string }
  /** The bot was removed or may no longer be used by this user. */
  | { kind: 'gone' };

export interface QueuedTurnHandler {
  replay(request: QueuedRequest): Promise<ReplayOutcome>;
  /** Posts a notice about the request in its room (expired, failed, bot gone), written in its user's language. */
  tell(request: QueuedRequest, text: () => string): Promise<void>;
}

export interface QueueRunResult {
  /** Requests answered in this run. */
  processed: number;
  /** Still pending or in progress afterwards. */
  remaining: number;
  /** Short reasons of failed attempts (no provider details). */
  errors: string[];
  deferred: number;
  expired: number;
  failed: number;
}

export interface QueueProcessorOptions {
  queue: RequestQueue;
  handler: QueuedTurnHandler;
  /** The database of the queue, to hand back a claim that found no capacity. */
  db: Kysely<Database>;
  logger: Logger;
  /** Requests per run (default 10). */
  perRun?: number;
  /** How often a running replay renews its claim (default 60 s). */
  touchEveryMs?: number;
}

function reasonOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return redactString(text.split('\n')[0] ?? '').slice(0, 300);
}

/**
 * Each run: expires requests older than the queue's limit (1 h) and recovers
 * claims of crashed processes, telling those users; then replays up to
 * `perRun` requests (one per room at a time). A request that finds no
 * capacity goes back untouched; one that fails is retried until the queue's
 * attempt limit, then its user is told.
 */
export class QueueProcessor {
  readonly #queue: RequestQueue;
  readonly #handler: QueuedTurnHandler;
  readonly #db: Kysely<Database>;
  readonly #logger: Logger;
  readonly #perRun: number;
  readonly #touchEveryMs: number;
  #timer: NodeJS.Timeout | null = null;
  #current: Promise<QueueRunResult> | null = null;

  constructor(options: QueueProcessorOptions) {
    this.#queue = options.queue;
    this.#handler = options.handler;
    this.#db = options.db;
    this.#logger = options.logger;
    this.#perRun = options.perRun ?? 10;
    this.#touchEveryMs = options.touchEveryMs ?? 60_000;
  }

  /** Runs in the background every `intervalMs` (0: never). */
  start(intervalMs: number): void {
    if (this.#timer !== null || intervalMs <= 0) return;
    this.#timer = setInterval(() => {
      if (this.#current !== null) return;
      void this.processNow().catch((err: unknown) => this.#logger.warn({ err }, 'queue processing failed'));
    }, intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#current?.catch(() => undefined);
  }

  /** One run now; waits for a run in progress first, so the caller sees fresh work done. */
  async processNow(): Promise<QueueRunResult> {
    while (this.#current !== null) await this.#current.catch(() => undefined);
    const run = this.#runOnce();
    this.#current = run;
    try {
      return await run;
    } finally {
      this.#current = null;
    }
  }

  async #runOnce(): Promise<QueueRunResult> {
    const result: QueueRunResult = { processed: 0, remaining: 0, errors: [], deferred: 0, expired: 0, failed: 0 };
    for (const request of await this.#queue.expire()) {
      result.expired++;
      await this.#tell(request, () => queueNotices().expired);
    }
    const stale = await this.#queue.recoverStale();
    for (const request of stale.failed) {
      result.failed++;
      await this.#tell(request, () => queueNotices().failed);
    }

    let handled = 0;
    const seen = new Set<number>();
    while (handled < this.#perRun) {
      const batch: QueuedRequest[] = [];
      for (const r of await this.#queue.claimReady(this.#perRun - handled)) {
        // Handed back earlier in this run: it waits for the next one.
        if (seen.has(r.id)) await this.#release(r.id);
        else batch.push(r);
      }
      if (batch.length === 0) break;
      for (const r of batch) seen.add(r.id);
      handled += batch.length;
      const outcomes = await Promise.all(batch.map((r) => this.#one(r, result)));
      // The whole instance is out of capacity: nobody else will get through now.
      if (outcomes.some((o) => o.kind === 'deferred' && o.level === 'instance')) break;
    }
    const stats = await this.#queue.stats();
    result.remaining = stats.pending + stats.processing;
    if (result.processed + result.expired + result.failed + result.errors.length > 0) {
      this.#logger.info(
        { processed: result.processed, deferred: result.deferred, expired: result.expired, failed: result.failed, remaining: result.remaining },
        'request queue processed',
      );
    }
    return result;
  }

  async #one(request: QueuedRequest, result: QueueRunResult): Promise<ReplayOutcome> {
    const touch = setInterval(() => void this.#queue.touch(request.id).catch(() => undefined), this.#touchEveryMs);
    touch.unref();
    let outcome: ReplayOutcome;
    try {
      outcome = await this.#handler.replay(request);
    } catch (error) {
      this.#logger.warn({ err: error, request: request.id }, 'queued request failed');
      outcome = { kind: 'retry', reason: reasonOf(error) };
    } finally {
      clearInterval(touch);
    }
    switch (outcome.kind) {
      case 'answered':
        await this.#queue.complete(request.id);
        result.processed++;
        break;
      case 'deferred':
        await this.#release(request.id);
        result.deferred++;
        break;
      case 'gone':
        await this.#queue.complete(request.id);
        await this.#tell(request, () => queueNotices().botGone);
        break;
      case 'retry': {
        result.errors.push(outcome.reason);
        const failed = await this.#queue.fail(request.id, outcome.reason);
        if (failed?.final) {
          result.failed++;
          await this.#tell(request, () => queueNotices().failed);
        }
        break;
      }
    }
    return outcome;
  }

  async #tell(request: QueuedRequest, text: () => string): Promise<void> {
    try {
      await this.#handler.tell(request, text);
    } catch (err) {
      this.#logger.warn({ err, request: request.id }, 'could not tell the user about a queued request');
    }
  }

  // RequestQueue has no way to return a claim without counting an attempt; no capacity is not a failure.
  async #release(id: number): Promise<void> {
    await this.#db.updateTable('request_queue').set({ status: 'pending', claimed_at: null }).where('id', '=', id).where('status', '=', 'processing').execute();
  }
}
