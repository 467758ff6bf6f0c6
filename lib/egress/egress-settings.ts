// The admin allow-list of the egress module (S18): host names or CIDR ranges
// that may be private (an internal Docling, a local model server).
import { HttpError } from '../errors/http-error.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import { allowListEntryProblem } from './address-policy.ts';

export interface EgressSettings {
  allowList: string[];
}

export const EGRESS_SETTINGS_KEY = 'egress.settings';
const MAX_ENTRIES = 100;

export class EgressSettingsService {
  readonly #store: SettingsStore;
  #cache: { value: EgressSettings; at: number } | null = null;
  readonly #now: () => number;

  constructor(store: SettingsStore, now: () => number = Date.now) {
    this.#store = store;
    this.#now = now;
  }

  async get(): Promise<EgressSettings> {
    const raw = await this.#store.get<{ allowList?: unknown }>(EGRESS_SETTINGS_KEY);
    const list = Array.isArray(raw?.allowList) ? raw.allowList.filter((e): e is string => typeof e === 'string' && allowListEntryProblem(e) === null) : [];
    return { allowList: list };
  }

  /** For createEgressFetch({ allowList }): read at most every 5 s, since it runs on every request. */
  allowList = async (): Promise<string[]> => {
    const now = this.#now();
    if (!this.#cache || now - this.#cache.at > 5_000) this.#cache = { value: await this.get(), at: now };
    return this.#cache.value.allowList;
  };

  /** Another thread changed the settings: read them again on the next request. */
  invalidate(): void {
    this.#cache = null;
  }

  async update(patch: unknown): Promise<EgressSettings> {
    const list = (patch as { allowList?: unknown } | null)?.allowList;
    if (!Array.isArray(list) || list.length > MAX_ENTRIES || list.some((e) => typeof e !== 'string')) {
      throw new HttpError(400, 'invalid_settings', 'Invalid settings: allowList', {
        allowList: `must be a list of at most ${MAX_ENTRIES} host names or CIDR ranges`,
      });
    }
    const entries = [...new Set(list.map((e: string) => e.trim().toLowerCase()).filter((e) => e !== ''))];
    const problems = entries.map((e) => ({ e, p: allowListEntryProblem(e) })).filter((x) => x.p !== null);
    if (problems.length > 0) {
      throw new HttpError(400, 'invalid_settings', 'Invalid settings: allowList', {
        allowList: problems.map((x) => `"${x.e.slice(0, 80)}" ${x.p}`).join('; '),
      });
    }
    await this.#store.set(EGRESS_SETTINGS_KEY, { allowList: entries });
    this.#cache = null;
    return { allowList: entries };
  }
}
