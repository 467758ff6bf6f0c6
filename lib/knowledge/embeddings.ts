// OpenAI-compatible embeddings: many inputs per request, a few requests in
// flight, its own rate-limit scope ('embeddings'), and retries with backoff on
// 429, 5xx and network failures. Errors carry a status, never a body.
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';

export interface EmbeddingConfig {
  endpoint: string;
  key: string | null;
  model: string;
  batchSize: number;
  concurrency: number;
  timeoutMs: number;
}

export interface EmbedOptions {
  signal?: AbortSignal;
  /** Who the call is for: a local user, or null for background work. */
  uid?: string | null;
  guestRoom?: string | null;
  /** Retries of this call (default: the client's); the admin test makes none. */
  maxRetries?: number;
}

export interface EmbeddingResult {
  model: string;
  dimensions: number;
  /** Unit length, in input order. */
  vectors: Float32Array[];
}

export class EmbeddingError extends Error {
  override name = 'EmbeddingError';
  readonly status: number;
  readonly retryable: boolean;

  constructor(message: string, status = 0, retryable = false) {
    super(message);
    this.status = status;
    this.retryable = retryable;
  }
}

export interface EmbeddingsClientOptions {
  config: () => Promise<EmbeddingConfig | null>;
  fetch: (input: string, init: RequestInit) => Promise<Response>;
  limiter?: RateLimiter | null;
  maxRetries?: number;
  /** Characters per request, whatever the batch size (providers cap tokens per request). */
  maxCharsPerRequest?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });

export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  if (norm === 0 || !Number.isFinite(norm)) return v;
  for (let i = 0; i < v.length; i++) v[i] = v[i]! / norm;
  return v;
}

function retryAfterMs(headers: Headers): number | null {
  const v = headers.get('retry-after');
  if (v === null) return null;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((v, k) => (out[k] = v));
  return out;
}

/** Splits inputs into requests by count and by characters, keeping order. */
export function planBatches(texts: readonly string[], batchSize: number, maxChars: number): Array<{ start: number; end: number }> {
  const batches: Array<{ start: number; end: number }> = [];
  let start = 0;
  let chars = 0;
  for (let i = 0; i < texts.length; i++) {
    const len = texts[i]!.length;
    if (i > start && (i - start >= batchSize || chars + len > maxChars)) {
      batches.push({ start, end: i });
      start = i;
      chars = 0;
    }
    chars += len;
  }
  if (start < texts.length) batches.push({ start, end: texts.length });
  return batches;
}

export class EmbeddingsClient {
  readonly #config: () => Promise<EmbeddingConfig | null>;
  readonly #fetch: (input: string, init: RequestInit) => Promise<Response>;
  readonly #limiter: RateLimiter | null;
  readonly #maxRetries: number;
  readonly #maxChars: number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  /** Endpoints that refused `encoding_format: "base64"`; they get plain float lists. */
  readonly #floatOnly = new Set<string>();

  constructor(options: EmbeddingsClientOptions) {
    this.#config = options.config;
    this.#fetch = options.fetch;
    this.#limiter = options.limiter ?? null;
    this.#maxRetries = options.maxRetries ?? 4;
    this.#maxChars = options.maxCharsPerRequest ?? 200_000;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
  }

  /** The active model, or null when embeddings are not configured. */
  async activeModel(): Promise<string | null> {
    return (await this.#config())?.model ?? null;
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<EmbeddingResult> {
    const config = await this.#config();
    if (!config) throw new EmbeddingError('embeddings are not configured: set an embedding model in the admin settings');
    if (texts.length === 0) return { model: config.model, dimensions: 0, vectors: [] };
    const batches = planBatches(texts, config.batchSize, this.#maxChars);
    const vectors: Float32Array[] = new Array(texts.length);
    let next = 0;
    let dimensions = 0;
    const runner = async () => {
      while (next < batches.length) {
        const b = batches[next++]!;
        const got = await this.#request(config, texts.slice(b.start, b.end), options);
        for (let i = 0; i < got.length; i++) {
          const v = got[i]!;
          if (dimensions === 0) dimensions = v.length;
          else if (v.length !== dimensions)
            throw new EmbeddingError(`the embedding endpoint returned vectors of different sizes (${dimensions} and ${v.length})`);
          vectors[b.start + i] = v;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.concurrency, batches.length) }, runner));
    return { model: config.model, dimensions, vectors };
  }

  async #acquire(options: EmbedOptions): Promise<void> {
    if (!this.#limiter) return;
    for (;;) {
      const r = await this.#limiter.tryAcquire({ scope: 'embeddings', uid: options.uid ?? null, guestRoom: options.guestRoom ?? null });
      if (r.ok) return;
      // Background work waits for capacity; a window longer than a minute is a real limit.
      if (r.retryAfterMs > 60_000) throw new EmbeddingError(`the embedding rate limit (${r.window}) is used up; try again later`, 429, true);
      await this.#sleep(Math.max(50, r.retryAfterMs), options.signal);
    }
  }

  async #request(config: EmbeddingConfig, input: string[], options: EmbedOptions): Promise<Float32Array[]> {
    const url = `${config.endpoint.replace(/\/+$/, '')}/embeddings`;
    let attempt = 0;
    for (;;) {
      await this.#acquire(options);
      const timeout = AbortSignal.timeout(config.timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let res: Response;
      let failure: EmbeddingError;
      let wait: number | null = null;
      try {
        res = await this.#fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', ...(config.key ? { authorization: `Bearer ${config.key}` } : {}) },
          // base64 float32 is a quarter of the JSON floats' size and parses far faster (the OpenAI SDK's default).
          body: JSON.stringify(this.#floatOnly.has(url) ? { model: config.model, input } : { model: config.model, input, encoding_format: 'base64' }),
          signal,
        });
        if (this.#limiter) await this.#limiter.observeProviderHeaders('embeddings', headerRecord(res.headers)).catch(() => undefined);
        if (res.ok) return await this.#parse(res, input.length);
        await res.body?.cancel().catch(() => undefined);
        if ((res.status === 400 || res.status === 422) && !this.#floatOnly.has(url)) {
          this.#floatOnly.add(url);
          continue;
        }
        const retryable = res.status === 429 || res.status === 408 || res.status >= 500;
        failure = new EmbeddingError(`the embedding endpoint answered HTTP ${res.status}`, res.status, retryable);
        wait = retryAfterMs(res.headers);
      } catch (err) {
        if (options.signal?.aborted) throw err;
        if (err instanceof EmbeddingError) throw err;
        failure = new EmbeddingError(
          timeout.aborted ? 'the embedding endpoint did not answer in time' : 'the embedding endpoint could not be reached',
          0,
          true,
        );
      }
      if (!failure.retryable || attempt >= (options.maxRetries ?? this.#maxRetries)) throw failure;
      const backoff = Math.min(30_000, 500 * 2 ** attempt) * (0.5 + this.#random() / 2);
      await this.#sleep(wait !== null ? Math.min(60_000, Math.max(wait, 100)) : backoff, options.signal);
      attempt++;
    }
  }

  async #parse(res: Response, expected: number): Promise<Float32Array[]> {
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      throw new EmbeddingError('the embedding endpoint answered something that is not JSON', res.status);
    }
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data) || data.length !== expected)
      throw new EmbeddingError(`the embedding endpoint returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${expected} inputs`, res.status);
    const out: Float32Array[] = new Array(expected);
    data.forEach((item: unknown, position: number) => {
      const entry = item as { index?: unknown; embedding?: unknown };
      const index = typeof entry.index === 'number' ? entry.index : position;
      const emb = entry.embedding;
      if (index < 0 || index >= expected) throw new EmbeddingError('the embedding endpoint returned a malformed vector', res.status);
      let v: Float32Array;
      if (typeof emb === 'string') {
        const bytes = Buffer.from(emb, 'base64');
        if (bytes.length === 0 || bytes.length % 4 !== 0) throw new EmbeddingError('the embedding endpoint returned a malformed vector', res.status);
        v = new Float32Array(bytes.length / 4);
        new Uint8Array(v.buffer).set(bytes);
        for (let i = 0; i < v.length; i++)
          if (!Number.isFinite(v[i]!)) throw new EmbeddingError('the embedding endpoint returned a malformed vector', res.status);
      } else if (Array.isArray(emb) && emb.length > 0) {
        v = new Float32Array(emb.length);
        for (let i = 0; i < emb.length; i++) {
          const x = emb[i];
          if (typeof x !== 'number' || !Number.isFinite(x)) throw new EmbeddingError('the embedding endpoint returned a malformed vector', res.status);
          v[i] = x;
        }
      } else {
        throw new EmbeddingError('the embedding endpoint returned a malformed vector', res.status);
      }
      out[index] = normalize(v);
    });
    for (let i = 0; i < expected; i++) if (out[i] === undefined) throw new EmbeddingError('the embedding endpoint returned duplicate indexes', res.status);
    return out;
  }
}
