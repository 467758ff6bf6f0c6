import type { CookieJar } from '../cookie-jar.ts';
import { errorForStatus, NextcloudNetworkError, NextcloudTimeoutError, UnsafeRequestError } from '../errors.ts';
import { currentRequestId } from '../request-context.ts';

export interface TransportOptions {
  baseUrl: string;
  appId: string;
  appVersion: string;
  appSecret: string;
  defaultTimeoutMs: number;
  fetchImpl?: typeof fetch;
}

export interface RawRequest {
  operation: string;
  method: string;
  url: URL;
  /** '' = AppAPI without a user; null = no AppAPI headers at all (Talk bot endpoints). */
  user: string | null;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The per-call session of one user (Collectives 2.x); without it no cookie is sent or kept. */
  jar?: CookieJar;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

const FORBIDDEN_HEADERS = new Set(['authorization', 'cookie', 'authorization-app-api', 'ex-app-id', 'ex-app-version', 'host']);

/**
 * The only place that holds APP_SECRET (S1). It sends to Nextcloud's origin
 * only, follows no redirect, keeps no cookies, and never forwards a browser's
 * Authorization or Cookie header. The one exception is an explicit per-call
 * CookieJar of a real user: its cookies go only to Nextcloud's origin, and only
 * Nextcloud's answers to that call fill it.
 */
export class Transport {
  readonly origin: string;
  readonly baseUrl: string;
  readonly #appId: string;
  readonly #appVersion: string;
  readonly #secret: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl;
    this.origin = new URL(options.baseUrl).origin;
    this.#appId = options.appId;
    this.#appVersion = options.appVersion;
    this.#secret = options.appSecret;
    this.#timeoutMs = options.defaultTimeoutMs;
    this.#fetch = options.fetchImpl ?? fetch;
  }

  authHeader(user: string): string {
    return Buffer.from(`${user}:${this.#secret}`, 'utf8').toString('base64');
  }

  async send(req: RawRequest): Promise<RawResponse> {
    if (req.url.origin !== this.origin) {
      throw new UnsafeRequestError(req.operation, 0, 'refusing to send outside the Nextcloud origin');
    }
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers ?? {})) {
      if (FORBIDDEN_HEADERS.has(k.toLowerCase())) throw new UnsafeRequestError(req.operation, 0, `header ${k} is not allowed`);
      headers.set(k, v);
    }
    headers.set('User-Agent', `ExApp/${this.#appId}/${this.#appVersion}`);
    const requestId = currentRequestId();
    if (requestId) headers.set('AA-REQUEST-ID', requestId);
    if (req.user !== null) {
      headers.set('EX-APP-ID', this.#appId);
      headers.set('EX-APP-VERSION', this.#appVersion);
      headers.set('AUTHORIZATION-APP-API', this.authHeader(req.user));
    }
    if (req.jar) {
      if (req.user === null || req.user === '' || req.jar.origin !== this.origin) throw new UnsafeRequestError(req.operation, 0, 'a cookie session needs a user and Nextcloud\'s origin');
      const cookie = req.jar.headerFor(req.url);
      if (cookie !== undefined) headers.set('Cookie', cookie);
    }
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await this.#fetch(req.url, {
        method: req.method,
        headers,
        body: req.body as Uint8Array<ArrayBuffer> | string | undefined,
        redirect: 'manual',
        signal,
      });
    } catch (err) {
      if (timeout.aborted) throw new NextcloudTimeoutError(req.operation, 0, `no answer within ${timeoutMs} ms`);
      if (req.signal?.aborted) throw err;
      const code = (err as { cause?: { code?: string } }).cause?.code;
      throw new NextcloudNetworkError(req.operation, 0, `cannot reach Nextcloud${code ? ` (${code})` : ''}`);
    }
    let body: Uint8Array;
    try {
      body = new Uint8Array(await res.arrayBuffer());
    } catch {
      if (timeout.aborted) throw new NextcloudTimeoutError(req.operation, res.status, `no complete answer within ${timeoutMs} ms`);
      throw new NextcloudNetworkError(req.operation, res.status, 'connection lost while reading the answer');
    }
    if (res.status >= 300 && res.status < 400) {
      // Following it could carry the secret to another host (Node keeps custom headers across redirects).
      throw errorForStatus(req.operation, res.status, 'unexpected redirect');
    }
    req.jar?.store(req.url, res.headers.getSetCookie());
    return { status: res.status, headers: res.headers, body };
  }
}
