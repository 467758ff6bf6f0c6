import { readExAppState, reportInitError, reportInitProgress } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';

/**
 * Reporting progress 100 makes AppAPI enable the app inside that very request
 * (restart, heartbeat, then PUT /enabled), so that call needs a long timeout.
 */
export const FINAL_REPORT_TIMEOUT_MS = 15 * 60_000;

export class StatusReporter {
  readonly #nextcloud: NextcloudClient;

  constructor(nextcloud: NextcloudClient) {
    this.#nextcloud = nextcloud;
  }

  async progress(progress: number): Promise<void> {
    const value = Math.max(0, Math.min(100, Math.round(progress)));
    await reportInitProgress(this.#nextcloud, value, value === 100 ? FINAL_REPORT_TIMEOUT_MS : 30_000);
  }

  /**
   * Whether AppAPI has the app enabled (`ex-app/state`, answered even while the app is disabled). AppAPI
   * answers the stored flag as an integer, 1 or 0 (test/fixtures/nextcloud33/appapi-ex-app-state.json).
   */
  async enabled(): Promise<boolean> {
    const data = await readExAppState(this.#nextcloud, 30_000);
    return data === 1 || data === true;
  }

  async error(message: string): Promise<void> {
    await reportInitError(this.#nextcloud, message.slice(0, 500) || 'initialisation failed');
  }
}
