import type { Logger } from '../log/logger.ts';
import type { StatusReporter } from './status-reporter.ts';

export interface InitStep {
  /** Shown in logs and in the error text AppAPI displays. */
  name: string;
  /** Reports sub-progress between 0 and 1 through `report`. */
  run(report: (fraction: number) => Promise<void>): Promise<void>;
}

/**
 * POST /init answers at once; the steps run in the background and report real
 * progress to AppAPI, ending with 100 or an error text.
 */
export class InitRunner {
  readonly #steps: InitStep[];
  readonly #reporter: StatusReporter;
  readonly #logger: Logger;
  #running: Promise<void> | null = null;

  constructor(steps: InitStep[], reporter: StatusReporter, logger: Logger) {
    this.#steps = steps;
    this.#reporter = reporter;
    this.#logger = logger;
  }

  /** Starts the background run; a second call while one runs joins it. */
  start(): Promise<void> {
    if (!this.#running) {
      this.#running = this.#run().finally(() => {
        this.#running = null;
      });
    }
    return this.#running;
  }

  /**
   * AppAPI enables the app inside the request that reports 100, and a proxy in front of Nextcloud may
   * time that request out while it goes on. An error report then would mark a working install as
   * failed (AppAPI accepts progress 0 after 100), so AppAPI's own state decides: enabled means done;
   * otherwise the report is sent once more (AppAPI ignores a second 100 while the first one runs).
   */
  async #reportDone(): Promise<void> {
    try {
      await this.#reporter.progress(100);
      return;
    } catch (err) {
      this.#logger.warn({ err }, 'the final init report failed; asking AppAPI whether the app is enabled');
    }
    if (await this.#reporter.enabled().catch(() => false)) {
      this.#logger.info('AppAPI enabled the app; init is complete');
      return;
    }
    await this.#reporter.progress(100);
  }

  async #run(): Promise<void> {
    const total = this.#steps.length;
    let last = 0;
    const report = async (value: number) => {
      // 100 is reserved for the end; AppAPI enables the app when it sees it.
      const bounded = Math.min(99, Math.max(last, Math.floor(value)));
      if (bounded > last) {
        last = bounded;
        await this.#reporter.progress(bounded);
      }
    };
    try {
      await report(1);
      for (const [i, step] of this.#steps.entries()) {
        const base = 5 + (90 * i) / total;
        const span = 90 / total;
        this.#logger.info({ step: step.name }, 'init step started');
        try {
          await step.run((fraction) => report(base + span * Math.min(1, Math.max(0, fraction))));
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          throw new Error(`${step.name}: ${reason}`, { cause: err });
        }
        await report(base + span);
      }
      this.#logger.info('init finished, reporting 100');
      await this.#reportDone();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.#logger.error({ err }, 'init failed');
      try {
        await this.#reporter.error(message);
      } catch (reportErr) {
        this.#logger.error({ err: reportErr }, 'could not report the init failure to AppAPI');
      }
    }
  }
}
