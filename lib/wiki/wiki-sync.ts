// Keeping index.md current after manual edits (Files, Text, WebDAV, Collectives). NC 29 has no
// file-event webhooks for ExApps (NC 30+ delivers webhook_listeners events: wiki-file-events.ts, which
// only call `fileEvent()`), so a periodic scan compares each registered root's etag
// (Nextcloud propagates changes up to the root) with the one recorded at the last sync and
// schedules a sync when it moved. Syncs are debounced per root: a burst of changes or events
// leads to one sync. Event sources never wait for a sync, and an event only schedules
// registered roots: it carries no user or path we would act on (S16).
import type { Logger } from '../log/logger.ts';
import type { WikiRootStore } from './wiki-roots.ts';

export const DEFAULT_DEBOUNCE_MS = 5_000;
/** After a file event someone is waiting to see the page listed: a shorter window (Text autosaves at most every 10 s). */
export const DEFAULT_EVENT_DEBOUNCE_MS = 1_000;

export interface WikiSyncSchedulerOptions {
  /** Syncs one root (by bot id); the module resolves the user, path and guard. */
  sync(botId: string): Promise<void>;
  debounceMs?: number;
  /** The window for syncs a file event found; default the shorter of 1 s and `debounceMs`. */
  eventDebounceMs?: number;
  logger?: Logger;
}

export class WikiSyncScheduler {
  readonly #sync: (botId: string) => Promise<void>;
  readonly #debounceMs: number;
  readonly #eventDebounceMs: number;
  readonly #logger: Logger | undefined;
  readonly #pending = new Map<string, NodeJS.Timeout>();
  readonly #running = new Map<string, Promise<void>>();
  /** Roots that changed again while their sync ran. */
  readonly #again = new Set<string>();
  #closed = false;
  #syncs = 0;

  constructor(options: WikiSyncSchedulerOptions) {
    this.#sync = options.sync;
    this.#debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.#eventDebounceMs = options.eventDebounceMs ?? Math.min(DEFAULT_EVENT_DEBOUNCE_MS, this.#debounceMs);
    this.#logger = options.logger;
  }

  /** How many syncs ran (for status and tests). */
  get syncCount(): number {
    return this.#syncs;
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Schedules one sync of the root within the debounce window (the shorter one after a file event); further calls in that window add nothing. */
  schedule(botId: string, options: { afterEvent?: boolean } = {}): void {
    if (this.#closed) return;
    if (this.#running.has(botId)) {
      this.#again.add(botId);
      return;
    }
    if (this.#pending.has(botId)) return;
    const timer = setTimeout(
      () => {
        this.#pending.delete(botId);
        void this.#run(botId);
      },
      options.afterEvent ? this.#eventDebounceMs : this.#debounceMs,
    );
    timer.unref();
    this.#pending.set(botId, timer);
  }

  /** Runs every pending sync now and waits for all running ones (tests, shutdown). */
  async flush(): Promise<void> {
    for (const [botId, timer] of [...this.#pending]) {
      clearTimeout(timer);
      this.#pending.delete(botId);
      void this.#run(botId);
    }
    while (this.#running.size > 0) await Promise.all([...this.#running.values()]);
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#pending.values()) clearTimeout(timer);
    this.#pending.clear();
  }

  async #run(botId: string): Promise<void> {
    const running = (async () => {
      this.#syncs++;
      try {
        await this.#sync(botId);
      } catch (err) {
        this.#logger?.warn({ err, bot: botId }, 'wiki index sync failed');
      }
    })();
    this.#running.set(botId, running);
    try {
      await running;
    } finally {
      this.#running.delete(botId);
      if (this.#again.delete(botId)) this.schedule(botId);
    }
  }
}

export interface WikiScannerOptions {
  roots: WikiRootStore;
  scheduler: WikiSyncScheduler;
  /** The root's current etag as its registered user sees it; null when it is gone. */
  etagOf(botId: string): Promise<string | null>;
  logger?: Logger;
}

/** Compares each registered root's etag with the last synced one. */
export class WikiScanner {
  readonly #o: WikiScannerOptions;
  #timer: NodeJS.Timeout | null = null;
  #scanning: Promise<number> | null = null;
  /** An event came while a pass ran, maybe after it read that root: one more pass follows. */
  #again = false;
  #stopped = false;

  constructor(options: WikiScannerOptions) {
    this.#o = options;
  }

  /** One pass; returns how many roots were scheduled. Overlapping calls share the pass. */
  scanOnce(options: { afterEvent?: boolean } = {}): Promise<number> {
    this.#scanning ??= this.#scan(options.afterEvent === true).finally(() => {
      this.#scanning = null;
      if (this.#again) {
        this.#again = false;
        this.fileEvent();
      }
    });
    return this.#scanning;
  }

  async #scan(afterEvent: boolean): Promise<number> {
    let scheduled = 0;
    for (const root of await this.#o.roots.list()) {
      try {
        const etag = await this.#o.etagOf(root.botId);
        if (etag !== null && etag !== root.rootEtag) {
          this.#o.scheduler.schedule(root.botId, { afterEvent });
          scheduled++;
        }
      } catch (err) {
        this.#o.logger?.warn({ err, bot: root.botId }, 'wiki root scan failed');
      }
    }
    return scheduled;
  }

  /** A file event (any source): schedule a scan; nothing from the event is used (S16). A burst of events costs at most two passes. */
  fileEvent(): void {
    if (this.#stopped) return;
    if (this.#scanning) {
      this.#again = true;
      return;
    }
    void this.scanOnce({ afterEvent: true }).catch((err: unknown) => this.#o.logger?.warn({ err }, 'wiki scan after a file event failed'));
  }

  start(intervalMs: number): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.scanOnce().catch((err: unknown) => this.#o.logger?.warn({ err }, 'wiki scan failed')), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
