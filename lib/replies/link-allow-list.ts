// The admin's list of hosts that replies may link to besides Nextcloud (S8). Talk fetches every
// link in a message on the server, so links to other hosts lose their scheme unless listed here.
import { HttpError } from '../errors/http-error.ts';
import type { SettingsStore } from '../storage/settings-store.ts';

export const LINK_ALLOW_LIST_KEY = 'talk.link-allow-list';
const MAX_ENTRIES = 100;
const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

/** Why an entry is refused, or null. An entry is a host name with a dot; it covers its subdomains. */
export function linkHostProblem(entry: string): string | null {
  if (entry === '') return 'must not be empty';
  if (/[/:@?#\s]/.test(entry)) return 'must be a host name only (no scheme, port, path or user)';
  if (!HOST.test(entry)) return 'is not a host name such as example.org';
  return null;
}

/**
 * Read synchronously on every reply flush, so the list lives in memory: loaded
 * at start and again after every configuration change (both threads).
 */
export class LinkAllowList {
  readonly #store: SettingsStore;
  #hosts: string[] = [];

  constructor(store: SettingsStore) {
    this.#store = store;
  }

  current(): string[] {
    return [...this.#hosts];
  }

  async load(): Promise<string[]> {
    const raw = await this.#store.get<{ hosts?: unknown }>(LINK_ALLOW_LIST_KEY);
    const hosts = Array.isArray(raw?.hosts) ? raw.hosts.filter((h): h is string => typeof h === 'string' && linkHostProblem(h) === null) : [];
    this.#hosts = hosts;
    return this.current();
  }

  /** Replaces the list; a bad entry refuses the whole change (field `hosts`). */
  async update(patch: unknown): Promise<string[]> {
    const list = (patch as { hosts?: unknown } | null)?.hosts;
    if (!Array.isArray(list) || list.length > MAX_ENTRIES || list.some((e) => typeof e !== 'string')) {
      throw new HttpError(400, 'invalid_settings', 'Invalid settings: hosts', { hosts: `Must be a list of at most ${MAX_ENTRIES} host names` });
    }
    const hosts = [...new Set(list.map((e: string) => e.trim().toLowerCase().replace(/\.$/, '')).filter((e) => e !== ''))];
    const problems = hosts.map((h) => ({ h, p: linkHostProblem(h) })).filter((x) => x.p !== null);
    if (problems.length > 0) {
      throw new HttpError(400, 'invalid_settings', 'Invalid settings: hosts', { hosts: problems.map((x) => `"${x.h.slice(0, 80)}" ${x.p}`).join('; ') });
    }
    await this.#store.set(LINK_ALLOW_LIST_KEY, { hosts });
    this.#hosts = hosts;
    return this.current();
  }
}
