import { EgressError } from '../egress/egress-fetch.ts';
import type { LlmSettings, LlmSettingsService } from './llm-settings.ts';
import { ENDPOINTS, formatModelRef, LlmNotConfiguredError, modelLabel, ModelNotAllowedError, parseModelRef, type EndpointName } from './model-ref.ts';

export interface ModelOption {
  ref: string;
  endpoint: EndpointName;
  id: string;
  label: string;
}

export interface ResolvedModel {
  /** Canonical `primary:<id>` / `secondary:<id>`. */
  ref: string;
  endpoint: EndpointName;
  id: string;
}

/** How listing one endpoint went: a status or a failure kind, never the provider's body. */
export interface EndpointListing {
  endpoint: EndpointName;
  configured: boolean;
  ok: boolean;
  /** HTTP status of a failed listing. */
  status?: number;
  /** blocked: the egress module refused the address (private, and not on the admin's allow-list; S18). */
  error?: 'timeout' | 'unreachable' | 'blocked' | 'http_error' | 'invalid_response';
  models: string[];
}

export interface ModelCatalogOptions {
  settings: LlmSettingsService;
  /** Later the egress module's fetch (S18). */
  fetch?: typeof fetch;
  now?: () => number;
  /** How long a model list is reused (default 5 min). */
  ttlMs?: number;
  /** How long a failed listing is remembered, so a down endpoint does not stall every call (default 30 s). */
  failureTtlMs?: number;
}

const MAX_LIST_BYTES = 4 * 1024 * 1024;
const MAX_MODELS = 2000;

function trimSlashes(path: string): string {
  return path.replace(/\/+$/, '');
}

/**
 * The API base (the URL the SDK appends `/chat/completions` and `/models` to)
 * for what an admin entered: a base like `https://x/v1`, a full
 * `…/chat/completions` or `…/models` URL, or a bare host (→ `/v1`).
 */
export function endpointBaseUrl(endpoint: string): string {
  const url = new URL(endpoint);
  let path = trimSlashes(url.pathname);
  for (const suffix of ['/chat/completions', '/completions', '/models']) {
    if (path.toLowerCase().endsWith(suffix)) {
      path = trimSlashes(path.slice(0, -suffix.length));
      break;
    }
  }
  if (path === '') path = '/v1';
  return `${url.origin}${path}`;
}

export function modelsUrl(endpoint: string): string {
  return `${endpointBaseUrl(endpoint)}/models`;
}

/** Model ids from `{data: [{id}|{name}]}` or `{models: [string|{id}|{name}]}`; anything else is not a model list. */
export function parseModelList(body: unknown): string[] | null {
  if (typeof body !== 'object' || body === null) return null;
  const record = body as { data?: unknown; models?: unknown };
  const list = Array.isArray(record.data) ? record.data : Array.isArray(record.models) ? record.models : null;
  if (!list) return null;
  const ids: string[] = [];
  for (const item of list) {
    let id: unknown = item;
    if (typeof item === 'object' && item !== null) {
      const o = item as { id?: unknown; name?: unknown };
      id = typeof o.id === 'string' && o.id !== '' ? o.id : o.name;
    }
    if (typeof id === 'string' && id.trim() !== '' && id.length <= 256 && !ids.includes(id.trim())) ids.push(id.trim());
    if (ids.length >= MAX_MODELS) break;
  }
  return ids;
}

interface CacheEntry {
  fingerprint: string;
  until: number;
  listing: Promise<EndpointListing>;
}

function endpointOf(settings: LlmSettings, which: EndpointName): string | null {
  return which === 'primary' ? settings.primaryEndpoint : settings.secondaryEndpoint;
}

function option(endpoint: EndpointName, id: string): ModelOption {
  return { ref: formatModelRef(endpoint, id), endpoint, id, label: modelLabel(endpoint, id) };
}

/**
 * The models of the two endpoints, model reference resolution and the
 * server-side allowed-model check. Lists are cached per endpoint URL.
 */
export class ModelCatalog {
  readonly #settings: LlmSettingsService;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #failureTtlMs: number;
  readonly #cache = new Map<EndpointName, CacheEntry>();

  constructor(options: ModelCatalogOptions) {
    this.#settings = options.settings;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlMs ?? 5 * 60_000;
    this.#failureTtlMs = options.failureTtlMs ?? 30_000;
  }

  /** Forgets cached lists (after the admin changed endpoints or keys). */
  invalidate(): void {
    this.#cache.clear();
  }

  /** Every model the configured endpoints list (cached). */
  async list(): Promise<ModelOption[]> {
    const settings = await this.#settings.get();
    const listings = await Promise.all(ENDPOINTS.map((e) => this.#listing(settings, e, false)));
    return listings.flatMap((l) => l.models.map((id) => option(l.endpoint, id)));
  }

  /** Lists both endpoints now, bypassing the cache (admin view); refreshes the cache. */
  async listLive(): Promise<{ models: ModelOption[]; endpoints: EndpointListing[] }> {
    const settings = await this.#settings.get();
    const endpoints = await Promise.all(ENDPOINTS.map((e) => this.#listing(settings, e, true)));
    return { models: endpoints.flatMap((l) => l.models.map((id) => option(l.endpoint, id))), endpoints };
  }

  /**
   * A reference to its endpoint and id. A bare id goes to the primary endpoint
   * if it lists it, to the secondary if only that one lists it, and to the
   * primary when neither list answers.
   */
  async resolve(ref: string): Promise<ResolvedModel> {
    return this.#resolve(await this.#settings.get(), ref);
  }

  /**
   * Resolves the reference and enforces the admin's allowed list. The default
   * model is always allowed; the fallback model only where the server itself
   * falls back (`asFallback`), so bot owners cannot pin it. With an empty list,
   * a model must be listed by its endpoint when that list is available.
   */
  async assertAllowed(ref: string, options: { asFallback?: boolean } = {}): Promise<ResolvedModel> {
    const settings = await this.#settings.get();
    const resolved = await this.#resolve(settings, ref);
    const same = async (other: string | null) => other !== null && (await this.#resolve(settings, other)).ref === resolved.ref;
    if (await same(settings.defaultModel)) return resolved;
    if (options.asFallback && (await same(settings.fallbackModel))) return resolved;
    if (settings.allowedModels.length > 0) {
      for (const allowed of settings.allowedModels) if (await same(allowed)) return resolved;
      throw new ModelNotAllowedError(resolved.ref);
    }
    const listing = await this.#listing(settings, resolved.endpoint, false);
    if (!listing.ok || listing.models.includes(resolved.id)) return resolved;
    throw new ModelNotAllowedError(resolved.ref);
  }

  /** What a bot owner may pick: the default model, then the allowed list resolved (or every listed model). */
  async allowed(): Promise<{ models: ModelOption[]; defaultModel: string | null }> {
    const settings = await this.#settings.get();
    const out: ModelOption[] = [];
    const add = (m: ResolvedModel) => {
      if (!out.some((o) => o.ref === m.ref)) out.push(option(m.endpoint, m.id));
    };
    let defaultRef: string | null = null;
    if (settings.defaultModel !== null) {
      try {
        const d = await this.#resolve(settings, settings.defaultModel);
        defaultRef = d.ref;
        add(d);
      } catch (err) {
        if (!(err instanceof LlmNotConfiguredError)) throw err;
      }
    }
    const candidates = settings.allowedModels.length > 0 ? settings.allowedModels : (await this.list()).map((m) => m.ref);
    for (const ref of candidates) {
      try {
        add(await this.#resolve(settings, ref));
      } catch (err) {
        if (!(err instanceof LlmNotConfiguredError)) throw err;
      }
    }
    return { models: out, defaultModel: defaultRef };
  }

  async #resolve(settings: LlmSettings, ref: string): Promise<ResolvedModel> {
    const parsed = parseModelRef(ref.trim());
    let endpoint: EndpointName;
    if (parsed.endpoint !== null) {
      endpoint = parsed.endpoint;
    } else if (settings.secondaryEndpoint === null) {
      endpoint = 'primary';
    } else {
      const [primary, secondary] = await Promise.all([this.#listing(settings, 'primary', false), this.#listing(settings, 'secondary', false)]);
      endpoint = !primary.models.includes(parsed.id) && secondary.models.includes(parsed.id) ? 'secondary' : 'primary';
    }
    if (endpointOf(settings, endpoint) === null) throw new LlmNotConfiguredError(`the ${endpoint} endpoint`, ref);
    return { ref: formatModelRef(endpoint, parsed.id), endpoint, id: parsed.id };
  }

  #listing(settings: LlmSettings, which: EndpointName, fresh: boolean): Promise<EndpointListing> {
    const endpoint = endpointOf(settings, which);
    if (endpoint === null) return Promise.resolve({ endpoint: which, configured: false, ok: false, models: [] });
    const now = this.#now();
    const hit = this.#cache.get(which);
    if (!fresh && hit && hit.fingerprint === endpoint && hit.until > now) return hit.listing;
    const entry: CacheEntry = { fingerprint: endpoint, until: now + this.#ttlMs, listing: Promise.resolve(null as never) };
    entry.listing = this.#fetchListing(which, endpoint, settings.modelsTimeoutSeconds * 1000).then((listing) => {
      if (!listing.ok) entry.until = Math.min(entry.until, this.#now() + this.#failureTtlMs);
      return listing;
    });
    this.#cache.set(which, entry);
    return entry.listing;
  }

  async #fetchListing(which: EndpointName, endpoint: string, timeoutMs: number): Promise<EndpointListing> {
    const failed = (error: NonNullable<EndpointListing['error']>, status?: number): EndpointListing => ({
      endpoint: which,
      configured: true,
      ok: false,
      error,
      ...(status === undefined ? {} : { status }),
      models: [],
    });
    const key = await this.#settings.getKey(which);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const headers: Record<string, string> = { Accept: 'application/json' };
      if (key) headers.Authorization = `Bearer ${key}`;
      let res: Response;
      try {
        // No redirects: the key must not follow a provider's Location to another host.
        res = await this.#fetch(modelsUrl(endpoint), { method: 'GET', headers, redirect: 'manual', signal: controller.signal });
      } catch (err) {
        return failed(controller.signal.aborted ? 'timeout' : isEgressRefusal(err) ? 'blocked' : 'unreachable');
      }
      if (res.status < 200 || res.status >= 300) {
        await res.body?.cancel().catch(() => undefined);
        return failed('http_error', res.status);
      }
      let text: string;
      try {
        text = await readCapped(res, MAX_LIST_BYTES);
      } catch {
        return failed(controller.signal.aborted ? 'timeout' : 'invalid_response');
      }
      let ids: string[] | null = null;
      try {
        ids = parseModelList(JSON.parse(text));
      } catch {
        ids = null;
      }
      if (ids === null) return failed('invalid_response');
      return { endpoint: which, configured: true, ok: true, models: ids };
    } finally {
      clearTimeout(timer);
    }
  }
}

function isEgressRefusal(err: unknown): boolean {
  return err instanceof EgressError && (err.code === 'blocked' || err.code === 'scheme' || err.code === 'credentials');
}

async function readCapped(res: Response, maxBytes: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new Error('model list too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
