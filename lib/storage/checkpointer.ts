// SQLite WAL checkpoints in a thread of their own. A checkpoint copies the WAL into the database
// file and fsyncs it: run on the processing thread it stalled streams, run by a commit
// (wal_autocheckpoint) it stalled whatever thread committed. The connections of the app keep only
// a large auto-checkpoint as a safety net (storage/database.ts).
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log/logger.ts';

export interface CheckpointerOptions {
  intervalMs?: number;
  logger?: Logger;
}

export class Checkpointer {
  readonly #worker: Worker;
  readonly #logger: Logger | undefined;
  #failures = 0;
  #stopped = false;

  private constructor(worker: Worker, logger: Logger | undefined) {
    this.#worker = worker;
    this.#logger = logger;
  }

  /** Starts checkpointing `files` (SQLite databases in WAL mode) every `intervalMs` (default 1 s). */
  static async start(files: string[], options: CheckpointerOptions = {}): Promise<Checkpointer> {
    const worker = new Worker(new URL('./checkpoint-thread.ts', import.meta.url), {
      workerData: { files, intervalMs: options.intervalMs ?? 1000 },
      env: {},
      // Nothing of the parent's command line (a test runner, a preload) belongs in this thread.
      execArgv: [],
      // It holds two connections and a timer: a small heap keeps its share of the process's memory small.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    });
    const checkpointer = new Checkpointer(worker, options.logger);
    await new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', (m: { type?: string; file?: string; message?: string }) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'failed') checkpointer.#failed(m.file ?? '', m.message ?? '');
        else if (m.type === 'checkpointed') checkpointer.#failures = 0;
      });
    });
    worker.on('error', (err) => options.logger?.error({ err }, 'the SQLite checkpointer stopped; the databases fall back to checkpoints on commit'));
    worker.unref();
    return checkpointer;
  }

  #failed(file: string, message: string): void {
    // One failure is a busy moment; a run of them is worth an admin's look.
    if (++this.#failures === 30) this.#logger?.warn({ file, message }, 'SQLite checkpoints keep failing');
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.postMessage({ type: 'stop' });
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
    await this.#worker.terminate();
  }
}
