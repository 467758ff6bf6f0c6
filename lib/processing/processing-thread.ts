import { Worker } from 'node:worker_threads';
import type { AppConfig } from '../config/env.ts';
import type { Logger } from '../log/logger.ts';
import { ThreadRpc } from '../server/thread-rpc.ts';
import type { HandedRow } from '../intake/inbox.ts';

export interface ProcessingThreadOptions {
  pgSchema?: string;
  /** Called when the processing side changed who may be addressed (onboarding, modes). */
  refreshIndex: () => Promise<void>;
  logger: Logger;
}

/**
 * The Talk worker, model calls and tools run in a worker thread with their
 * own event loop, so that the webhook intake on the main thread answers
 * AppAPI within milliseconds whatever the processing load (AppAPI waits 3 s).
 */
export class ProcessingThread {
  readonly #worker: Worker;
  readonly #rpc: ThreadRpc;
  readonly #logger: Logger;
  #stopping = false;
  #stopped: Promise<void> | null = null;

  private constructor(worker: Worker, rpc: ThreadRpc, logger: Logger) {
    this.#worker = worker;
    this.#rpc = rpc;
    this.#logger = logger;
  }

  static async start(config: AppConfig, options: ProcessingThreadOptions): Promise<ProcessingThread> {
    const worker = new Worker(new URL('./processing-entry.ts', import.meta.url), {
      workerData: { config, pgSchema: options.pgSchema },
      // The secret travels in workerData, not in an environment the thread could pass on.
      env: {},
    });
    const rpc = new ThreadRpc(worker, { refreshIndex: () => options.refreshIndex() });
    const thread = new ProcessingThread(worker, rpc, options.logger);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      worker.once('error', onError);
      worker.on('message', function ready(m: unknown) {
        if ((m as { type?: string })?.type === 'ready') {
          worker.off('message', ready);
          worker.off('error', onError);
          resolve();
        }
      });
    });
    worker.on('error', (err) => options.logger.error({ err }, 'processing thread failed'));
    worker.on('exit', (code) => {
      rpc.fail('processing thread exited');
      if (!thread.#stopping) {
        options.logger.fatal({ code }, 'processing thread exited; stopping so the container restarts');
        process.exit(1);
      }
    });
    return thread;
  }

  notify(row?: HandedRow): void {
    this.#worker.postMessage({ type: 'notify', row });
  }

  /** A wiki file event: like notify, fire and forget (the scan it starts needs no answer). */
  wikiFileEvent(): void {
    this.#worker.postMessage({ type: 'wiki-file-event' });
  }

  /** A reaction webhook's hint: like notify, fire and forget (the read it brings forward needs no answer). */
  reactionSeen(roomToken: string, messageId: string): void {
    this.#worker.postMessage({ type: 'reaction', roomToken, messageId });
  }

  idle(timeoutMs?: number): Promise<void> {
    return this.#rpc.call('idle', timeoutMs);
  }

  processQueueNow(): Promise<unknown> {
    return this.#rpc.call('processQueueNow');
  }

  runtime(seconds: number): Promise<unknown> {
    return this.#rpc.call('runtime', seconds);
  }

  /** Tell the processing side that settings changed (model catalogue, MCP servers, limits). */
  settingsChanged(): Promise<void> {
    return this.#rpc.call('settingsChanged');
  }

  /** Once: a second call waits for the first (the thread is gone after it, and would never answer). */
  stop(): Promise<void> {
    return (this.#stopped ??= this.#stop());
  }

  async #stop(): Promise<void> {
    this.#stopping = true;
    try {
      await this.#rpc.call('shutdown');
    } catch (err) {
      this.#logger.warn({ err }, 'processing thread did not shut down cleanly');
    }
    this.#rpc.close();
    await this.#worker.terminate();
  }
}
