// What the Nextcloud server offers, so that tools whose server side is missing or disabled
// are not advertised: sharing, public links, group shares, trash bin and versions come from
// OCS capabilities (capture 20); CalDAV has no capability and is probed per user.
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient, NextcloudSession } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { createDavFetch } from './calendar/dav-fetch.ts';
import { parseMultistatus, propHrefs, type DavEntry } from './files/multistatus.ts';

export type CapabilityName = 'files' | 'trashbin' | 'versions' | 'sharing' | 'sharing-group' | 'sharing-link' | 'sharing-link-password-enforced' | 'caldav';

export type Capabilities = ReadonlySet<CapabilityName>;

interface OcsCapabilities {
  capabilities?: {
    files?: { undelete?: boolean; versioning?: boolean };
    files_sharing?: {
      api_enabled?: boolean;
      group_sharing?: boolean;
      group?: { enabled?: boolean };
      public?: { enabled?: boolean; password?: { enforced?: boolean } };
    };
  };
}

/** Reads capability flags from the `cloud/capabilities` data. */
export function capabilitiesFromOcs(data: unknown): Set<CapabilityName> {
  const caps = (data as OcsCapabilities | null)?.capabilities ?? {};
  const out = new Set<CapabilityName>(['files']);
  if (caps.files?.undelete === true) out.add('trashbin');
  if (caps.files?.versioning === true) out.add('versions');
  const sharing = caps.files_sharing;
  if (sharing?.api_enabled === true) {
    out.add('sharing');
    if (sharing.group_sharing !== false && sharing.group?.enabled !== false) out.add('sharing-group');
    if (sharing.public?.enabled === true) out.add('sharing-link');
    if (sharing.public?.password?.enforced === true) out.add('sharing-link-password-enforced');
  }
  return out;
}

/**
 * Discovery as the user: the DAV root names the current principal, whose calendar-home-set
 * means CalDAV is there. Only hrefs the server gave are followed (through the same templates).
 */
export async function probeCalDav(session: NextcloudSession): Promise<boolean> {
  const fetch = createDavFetch(session);
  const propfind = async (url: string, prop: string): Promise<DavEntry | null> => {
    const res = await fetch(url, {
      method: 'PROPFIND',
      headers: { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' },
      body: `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop>${prop}</d:prop></d:propfind>`,
    });
    if (res.status !== 207) return null;
    return parseMultistatus(await res.text())[0] ?? null;
  };
  const root = session.davUrl('/');
  const rootEntry = await propfind(root, '<d:current-user-principal/>');
  const principal = rootEntry ? propHrefs(rootEntry, 'current-user-principal')[0] : undefined;
  if (!principal) return false;
  const entry = await propfind(new URL(principal, root).href, '<c:calendar-home-set/>');
  return entry !== null && propHrefs(entry, 'calendar-home-set').length > 0;
}

export interface CapabilityProbeOptions {
  ttlMs?: number;
  failureTtlMs?: number;
  now?: () => number;
  logger?: Logger;
}

interface Cached {
  value: Set<CapabilityName>;
  until: number;
}

export class CapabilityProbe {
  readonly #nextcloud: NextcloudClient;
  readonly #ttlMs: number;
  readonly #failureTtlMs: number;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  #instance: Cached | null = null;
  readonly #caldav = new Map<string, { value: boolean; until: number }>();

  constructor(nextcloud: NextcloudClient, options: CapabilityProbeOptions = {}) {
    this.#nextcloud = nextcloud;
    this.#ttlMs = options.ttlMs ?? 5 * 60_000;
    this.#failureTtlMs = options.failureTtlMs ?? 30_000;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
  }

  /** Instance capabilities (capabilities are public; read as the user when there is one). */
  async instance(user: ActingUser | null): Promise<Set<CapabilityName>> {
    const now = this.#now();
    if (this.#instance && this.#instance.until > now) return new Set(this.#instance.value);
    try {
      const session = user ? this.#nextcloud.as(user) : this.#nextcloud.system();
      const data = await session.ocs<unknown>('GET', '/ocs/v2.php/cloud/capabilities', { timeoutMs: 10_000 });
      this.#instance = { value: capabilitiesFromOcs(data), until: now + this.#ttlMs };
    } catch (err) {
      this.#logger?.warn({ err }, 'could not read Nextcloud capabilities; file, sharing and calendar tools are hidden for now');
      this.#instance = { value: new Set(), until: now + this.#failureTtlMs };
    }
    return new Set(this.#instance.value);
  }

  /** Everything this user's tools may rely on now. */
  async forUser(user: ActingUser): Promise<Set<CapabilityName>> {
    const caps = await this.instance(user);
    if (caps.size === 0) return caps;
    if (await this.#hasCalDav(user)) caps.add('caldav');
    return caps;
  }

  /** For listings without a user (admin screens): CalDAV cannot be probed, so it is assumed. */
  async forListing(): Promise<Set<CapabilityName>> {
    const caps = await this.instance(null);
    if (caps.size > 0) caps.add('caldav');
    return caps;
  }

  async #hasCalDav(user: ActingUser): Promise<boolean> {
    const now = this.#now();
    const hit = this.#caldav.get(user.uid);
    if (hit && hit.until > now) return hit.value;
    let value = false;
    let ttl = this.#ttlMs;
    try {
      value = await probeCalDav(this.#nextcloud.as(user));
    } catch (err) {
      this.#logger?.warn({ err }, 'CalDAV probe failed; calendar tools are hidden for now');
      ttl = this.#failureTtlMs;
    }
    if (this.#caldav.size > 5000) this.#caldav.clear();
    this.#caldav.set(user.uid, { value, until: now + ttl });
    return value;
  }
}
