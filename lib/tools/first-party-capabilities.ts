// What the Nextcloud server offers, so that tools whose server side is missing or disabled
// are not advertised: sharing, public links, group shares, trash bin and versions come from
// OCS capabilities (test/fixtures/nextcloud29/20-ocs-capabilities-as-alice.json); CalDAV has no capability and is probed per user; Deck is
// read from the capabilities as each user (it can be enabled for some groups only); Collectives
// has no capability and its API generation is probed as each user (nextcloud/collectives/detect.ts).
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient, NextcloudSession } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { getCapabilities } from '../nextcloud/capabilities.ts';
import { createDavFetch } from './calendar/dav-fetch.ts';
import { collectivesFromCapabilities, detectCollectivesApi, type CollectivesApiKind } from '../nextcloud/collectives/detect.ts';
import { deckInCapabilities } from '../nextcloud/deck-capability.ts';
import { parseMultistatus, propHrefs, type DavEntry } from '../nextcloud/multistatus.ts';

export type CapabilityName =
  | 'files'
  | 'trashbin'
  | 'versions'
  | 'sharing'
  | 'sharing-group'
  | 'sharing-link'
  | 'sharing-link-password-enforced'
  | 'caldav'
  | 'deck'
  | 'collectives'
  | 'collectives-ocs';

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
  // Collectives: 'collectives' = its tools work; 'collectives-ocs' = through the 3.x OCS API (else 2.x web routes).
  const collectives = collectivesFromCapabilities(caps as Record<string, unknown>);
  if (collectives) for (const c of collectives === 'ocs' ? (['collectives', 'collectives-ocs'] as const) : (['collectives'] as const)) out.add(c);
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
  readonly #collectives = new Map<string, { value: CollectivesApiKind | null; until: number }>();
  /** Apps that may be enabled per group (Deck), read as each user ('' = the listing without a user). */
  readonly #userApps = new Map<string, Cached>();

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
      const data = await getCapabilities(session, { timeoutMs: 10_000 });
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
    const collectives = caps.has('collectives') ? null : await this.#collectivesApi(user);
    if (collectives) caps.add('collectives');
    if (collectives === 'ocs') caps.add('collectives-ocs');
    for (const app of await this.#appsFor(user)) caps.add(app);
    return caps;
  }

  /** For listings without a user (admin screens): CalDAV cannot be probed, so it is assumed. */
  async forListing(): Promise<Set<CapabilityName>> {
    const caps = await this.instance(null);
    if (caps.size > 0) caps.add('caldav');
    // Like CalDAV, Collectives can only be probed as a user; listings assume it, use checks it.
    if (caps.size > 0) caps.add('collectives');
    if (caps.size > 0) for (const app of await this.#appsFor(null)) caps.add(app);
    return caps;
  }

  /** `cloud/capabilities` as this user: which per-user apps (Deck) serve them. */
  async #appsFor(user: ActingUser | null): Promise<Set<CapabilityName>> {
    const now = this.#now();
    const key = user?.uid ?? '';
    const hit = this.#userApps.get(key);
    if (hit && hit.until > now) return new Set(hit.value);
    const value = new Set<CapabilityName>();
    let ttl = this.#ttlMs;
    try {
      const session = user ? this.#nextcloud.as(user) : this.#nextcloud.system();
      const data = await getCapabilities(session, { timeoutMs: 10_000 });
      if (deckInCapabilities(data?.capabilities)) value.add('deck');
    } catch (err) {
      this.#logger?.warn({ err }, 'could not read capabilities as the user; Deck tools are hidden for now');
      ttl = this.#failureTtlMs;
    }
    if (this.#userApps.size > 5000) this.#userApps.clear();
    this.#userApps.set(key, { value, until: now + ttl });
    return new Set(value);
  }

  /** Which Collectives API this user has (probed as the user, cached like CalDAV). */
  async #collectivesApi(user: ActingUser): Promise<CollectivesApiKind | null> {
    const now = this.#now();
    const hit = this.#collectives.get(user.uid);
    if (hit && hit.until > now) return hit.value;
    let value: CollectivesApiKind | null = null;
    let ttl = this.#ttlMs;
    try {
      value = await detectCollectivesApi(this.#nextcloud.as(user));
    } catch (err) {
      this.#logger?.warn({ err }, 'Collectives probe failed; Collectives tools are hidden for now');
      ttl = this.#failureTtlMs;
    }
    if (this.#collectives.size > 5000) this.#collectives.clear();
    this.#collectives.set(user.uid, { value, until: now + ttl });
    return value;
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
