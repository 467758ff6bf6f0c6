import { postLog } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';

const LEVELS = { warn: 2, error: 3, fatal: 4 } as const;

/**
 * Forwards warnings and errors to nextcloud.log through AppAPI's api/v1/log,
 * at most `perMinute` lines a minute (nextcloud.log is readable by every
 * admin, so messages arrive already redacted).
 */
export class NextcloudLogForwarder {
  readonly #nextcloud: () => NextcloudClient | null;
  readonly #perMinute: number;
  readonly #now: () => number;
  #windowStart = 0;
  #sent = 0;
  #dropped = 0;

  constructor(nextcloud: () => NextcloudClient | null, options: { perMinute?: number; now?: () => number } = {}) {
    this.#nextcloud = nextcloud;
    this.#perMinute = options.perMinute ?? 20;
    this.#now = options.now ?? Date.now;
  }

  forward(level: keyof typeof LEVELS, message: string): void {
    const client = this.#nextcloud();
    if (!client) return;
    const now = this.#now();
    if (now - this.#windowStart >= 60_000) {
      const dropped = this.#dropped;
      this.#windowStart = now;
      this.#sent = 0;
      this.#dropped = 0;
      if (dropped > 0) this.#post(client, 2, `${dropped} further log lines were not forwarded (rate limit)`);
    }
    if (this.#sent >= this.#perMinute) {
      this.#dropped++;
      return;
    }
    this.#sent++;
    this.#post(client, LEVELS[level], message.slice(0, 1000));
  }

  #post(client: NextcloudClient, level: number, message: string): void {
    // Failures are swallowed: logging about a failed log forward would loop.
    postLog(client, level, message, 5000).catch(() => undefined);
  }
}
