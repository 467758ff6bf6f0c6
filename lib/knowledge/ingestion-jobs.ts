// Durable background jobs of the knowledge layer in our own table (both
// dialects). A job is claimed with a lease by one atomic UPDATE … RETURNING;
// on PostgreSQL the candidate row is picked FOR UPDATE SKIP LOCKED, so several
// processes can share the table. A worker that dies leaves its job "running"
// until the lease runs out; then any worker claims it again. Handlers are
// idempotent (per-file replace in the vector index), so a re-run adds nothing twice.
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import { isPostgres } from '../storage/migrations/dialect.ts';
import type { Database } from '../storage/schema.ts';
import type { JobKind, KnowledgeJobsTable } from '../storage/tables/knowledge-tables.ts';

export interface Job {
  id: number;
  kind: JobKind;
  refId: number;
  force: boolean;
  attempts: number;
}

/** A failure worth retrying later (a provider or Nextcloud that is down); anything else fails the job at once. */
export class RetryableJobError extends Error {
  override name = 'RetryableJobError';
}

export interface JobQueueOptions {
  now?: () => number;
  leaseMs?: number;
  maxAttempts?: number;
}

type Row = Omit<KnowledgeJobsTable, 'id'> & { id: number };

function toJob(r: Row): Job {
  return { id: r.id, kind: r.kind, refId: r.ref_id, force: r.force === 1, attempts: r.attempts };
}

export class KnowledgeJobQueue {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;
  readonly #pg: boolean;
  readonly leaseMs: number;
  readonly maxAttempts: number;

  constructor(db: Kysely<Database>, options: JobQueueOptions = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
    this.#pg = isPostgres(db as unknown as Kysely<unknown>);
    this.leaseMs = options.leaseMs ?? 120_000;
    this.maxAttempts = options.maxAttempts ?? 6;
  }

  /**
   * Queues work on one thing. A job already waiting for it absorbs the request
   * (keeping `force` if either asked for it); a running one gets a follow-up.
   */
  async enqueue(kind: JobKind, refId: number, options: { force?: boolean; notBefore?: number } = {}): Promise<number> {
    const now = this.#now();
    return this.#db.transaction().execute(async (trx) => {
      const waiting = await trx
        .selectFrom('knowledge_jobs')
        .select(['id', 'force'])
        .where('kind', '=', kind)
        .where('ref_id', '=', refId)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (waiting) {
        if (options.force && waiting.force !== 1) await trx.updateTable('knowledge_jobs').set({ force: 1 }).where('id', '=', waiting.id).execute();
        return waiting.id;
      }
      const row = await trx
        .insertInto('knowledge_jobs')
        .values({
          kind,
          ref_id: refId,
          force: options.force ? 1 : 0,
          status: 'queued',
          attempts: 0,
          lease_until: null,
          worker_id: null,
          not_before: options.notBefore ?? 0,
          last_error: null,
          created_at: now,
          started_at: null,
          finished_at: null,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });
  }

  /** The next due job, leased to `workerId`; a running job whose lease ran out counts as due. */
  async claim(workerId: string): Promise<Job | null> {
    const now = this.#now();
    const lease = now + this.leaseMs;
    const lock = this.#pg ? sql` for update skip locked` : sql``;
    const result = await sql<Row>`
      update knowledge_jobs
         set status = 'running', worker_id = ${workerId}, lease_until = ${lease}, attempts = attempts + 1, started_at = ${now}
       where id = (
         select id from knowledge_jobs
          where (status = 'queued' and not_before <= ${now})
             or (status = 'running' and lease_until < ${now})
          order by id
          limit 1${lock}
       )
         and ((status = 'queued' and not_before <= ${now}) or (status = 'running' and lease_until < ${now}))
      returning *`.execute(this.#db);
    const row = result.rows[0];
    return row ? toJob({ ...row, id: Number(row.id), ref_id: Number(row.ref_id), force: Number(row.force), attempts: Number(row.attempts) }) : null;
  }

  /** Extends the lease; false when the job is no longer ours (another worker took it over). */
  async heartbeat(jobId: number, workerId: string): Promise<boolean> {
    const r = await this.#db
      .updateTable('knowledge_jobs')
      .set({ lease_until: this.#now() + this.leaseMs })
      .where('id', '=', jobId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async complete(jobId: number, workerId: string): Promise<void> {
    await this.#db
      .updateTable('knowledge_jobs')
      .set({ status: 'done', finished_at: this.#now(), lease_until: null, last_error: null })
      .where('id', '=', jobId)
      .where('worker_id', '=', workerId)
      .execute();
  }

  /** Retries with backoff while attempts remain and the error is retryable; else the job fails for good. */
  async fail(job: Job, workerId: string, error: string, retryable: boolean): Promise<'retry' | 'failed'> {
    const now = this.#now();
    const retry = retryable && job.attempts < this.maxAttempts;
    await this.#db
      .updateTable('knowledge_jobs')
      .set(
        retry
          ? {
              status: 'queued',
              not_before: now + Math.min(3_600_000, 15_000 * 2 ** (job.attempts - 1)),
              lease_until: null,
              worker_id: null,
              last_error: error.slice(0, 1000),
            }
          : { status: 'failed', finished_at: now, lease_until: null, last_error: error.slice(0, 1000) },
      )
      .where('id', '=', job.id)
      .where('worker_id', '=', workerId)
      .execute();
    return retry ? 'retry' : 'failed';
  }

  /** SQLite has one process: at start, every running job is a dead worker's and is due again. */
  async releaseAllRunning(): Promise<number> {
    const r = await this.#db
      .updateTable('knowledge_jobs')
      .set({ status: 'queued', lease_until: null, worker_id: null })
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async cancel(kind: JobKind, refIds: number[]): Promise<void> {
    if (refIds.length === 0) return;
    await this.#db
      .deleteFrom('knowledge_jobs')
      .where('kind', '=', kind)
      .where('ref_id', 'in', refIds)
      .where('status', 'in', ['queued', 'failed', 'done'])
      .execute();
  }

  async pendingCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('knowledge_jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async pruneFinished(olderThanMs: number): Promise<number> {
    const r = await this.#db
      .deleteFrom('knowledge_jobs')
      .where('status', 'in', ['done', 'failed'])
      .where('finished_at', '<', this.#now() - olderThanMs)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}

export type JobHandler = (job: Job, signal: AbortSignal) => Promise<void>;

export interface JobWorkerOptions {
  queue: KnowledgeJobQueue;
  handlers: Record<JobKind, JobHandler>;
  logger: Logger;
  concurrency?: number;
  pollMs?: number;
  workerId?: string;
  /** SQLite: release jobs a previous process left running (safe with one process per file). */
  releaseOnStart?: boolean;
}

/** Runs due jobs in the background: never inside a webhook request. */
export class JobWorker {
  readonly workerId: string;
  readonly #queue: KnowledgeJobQueue;
  readonly #handlers: Record<JobKind, JobHandler>;
  readonly #logger: Logger;
  readonly #concurrency: number;
  readonly #pollMs: number;
  readonly #releaseOnStart: boolean;
  readonly #running = new Set<Promise<void>>();
  readonly #controllers = new Set<AbortController>();
  #timer: NodeJS.Timeout | null = null;
  #stopped = true;
  #pumping = false;
  #again = false;

  constructor(options: JobWorkerOptions) {
    this.#queue = options.queue;
    this.#handlers = options.handlers;
    this.#logger = options.logger;
    this.#concurrency = Math.max(1, options.concurrency ?? 1);
    this.#pollMs = options.pollMs ?? 2_000;
    this.workerId = options.workerId ?? `w-${randomUUID()}`;
    this.#releaseOnStart = options.releaseOnStart ?? false;
  }

  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    if (this.#releaseOnStart) {
      const n = await this.#queue.releaseAllRunning();
      if (n > 0) this.#logger.info({ jobs: n }, 'knowledge jobs resumed after a restart');
    }
    this.#timer = setInterval(() => this.notify(), this.#pollMs);
    this.#timer.unref();
    this.notify();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    for (const c of this.#controllers) c.abort(new Error('the worker is stopping'));
    await Promise.allSettled([...this.#running]);
  }

  /** Something was queued: look now instead of at the next poll. */
  notify(): void {
    if (this.#stopped) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    void this.#pump();
  }

  /** Runs due jobs one by one until none is left (tests and benchmarks). */
  async drain(): Promise<void> {
    for (;;) {
      const job = await this.#queue.claim(this.workerId);
      if (!job) return;
      await this.#run(job);
    }
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        while (!this.#stopped && this.#running.size < this.#concurrency) {
          const job = await this.#queue.claim(this.workerId).catch((err: unknown) => {
            this.#logger.warn({ err }, 'claiming a knowledge job failed');
            return null;
          });
          if (!job) break;
          const p = this.#run(job).finally(() => {
            this.#running.delete(p);
            this.notify();
          });
          this.#running.add(p);
        }
      } while (this.#again && !this.#stopped);
    } finally {
      this.#pumping = false;
    }
  }

  async #run(job: Job): Promise<void> {
    const controller = new AbortController();
    this.#controllers.add(controller);
    const beat = setInterval(
      () => {
        void this.#queue.heartbeat(job.id, this.workerId).then(
          (ours) => {
            if (!ours) controller.abort(new Error('the job was taken over'));
          },
          () => undefined,
        );
      },
      Math.max(1_000, Math.floor(this.#queue.leaseMs / 3)),
    );
    beat.unref();
    try {
      const handler = this.#handlers[job.kind];
      if (!handler) throw new Error(`no handler for knowledge jobs of kind ${job.kind}`);
      await handler(job, controller.signal);
      await this.#queue.complete(job.id, this.workerId);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (controller.signal.aborted && this.#stopped) return; // picked up again after the restart
      const outcome = await this.#queue.fail(job, this.workerId, message, err instanceof RetryableJobError).catch(() => 'failed');
      this.#logger.warn({ jobId: job.id, kind: job.kind, outcome, error: message.slice(0, 300) }, 'knowledge job failed');
    } finally {
      clearInterval(beat);
      this.#controllers.delete(controller);
    }
  }
}
