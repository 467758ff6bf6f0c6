import { Agent, request, type Dispatcher } from 'undici';
import { toHeaders } from '../../http/response-headers.ts';
import type { CookieJar } from '../cookie-jar.ts';
import { errorForStatus, NextcloudNetworkError, NextcloudTimeoutError, UnsafeRequestError } from '../errors.ts';
import { currentRequestId } from '../request-context.ts';

export interface TransportOptions {
  baseUrl: string;
  appId: string;
  appVersion: string;
  appSecret: string;
  defaultTimeoutMs: number;
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
const UNSAFE_VALUE = /[\r\n\0]/;

// undici's request() rather than fetch(): a turn makes two or three Nextcloud calls, and fetch's
// WHATWG layer (Request, Headers, web streams) cost the processing thread about twice as much CPU per call.
let sharedDispatcher: Dispatcher | null = null;
function dispatcher(): Dispatcher {
  return (sharedDispatcher ??= new Agent({ keepAliveTimeout: 10_000, connect: { timeout: 10_000 } }));
}

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

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl;
    this.origin = new URL(options.baseUrl).origin;
    this.#appId = options.appId;
    this.#appVersion = options.appVersion;
    this.#secret = options.appSecret;
    this.#timeoutMs = options.defaultTimeoutMs;
  }

  authHeader(user: string): string {
    return Buffer.from(`${user}:${this.#secret}`, 'utf8').toString('base64');
  }

  async send(req: RawRequest): Promise<RawResponse> {
    if (req.url.origin !== this.origin) {
      throw new UnsafeRequestError(req.operation, 0, 'refusing to send outside the Nextcloud origin');
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers ?? {})) {
      const name = k.toLowerCase();
      if (FORBIDDEN_HEADERS.has(name)) throw new UnsafeRequestError(req.operation, 0, `header ${k} is not allowed`);
      if (UNSAFE_VALUE.test(v)) throw new UnsafeRequestError(req.operation, 0, `header ${k} has a line break`);
      headers[name] = v;
    }
    headers['user-agent'] = `ExApp/${this.#appId}/${this.#appVersion}`;
    const requestId = currentRequestId();
    if (requestId) headers['aa-request-id'] = requestId;
    if (req.user !== null) {
      headers['ex-app-id'] = this.#appId;
      headers['ex-app-version'] = this.#appVersion;
      headers['authorization-app-api'] = this.authHeader(req.user);
    }
    if (req.jar) {
      if (req.user === null || req.user === '' || req.jar.origin !== this.origin)
        throw new UnsafeRequestError(req.operation, 0, "a cookie session needs a user and Nextcloud's origin");
      const cookie = req.jar.headerFor(req.url);
      if (cookie !== undefined) headers.cookie = cookie;
    }
    const timeoutMs = req.timeoutMs ?? this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    let res: Dispatcher.ResponseData;
    try {
      // No redirect is followed: request() has no redirect handling unless asked for.
      res = await request(req.url, { method: req.method as Dispatcher.HttpMethod, headers, body: req.body ?? null, signal, dispatcher: dispatcher() });
    } catch (err) {
      if (timeout.aborted) throw new NextcloudTimeoutError(req.operation, 0, `no answer within ${timeoutMs} ms`);
      if (req.signal?.aborted) throw err;
      const e = err as { code?: string; cause?: { code?: string } };
      const code = e.cause?.code ?? (e.code?.startsWith('E') ? e.code : undefined);
      throw new NextcloudNetworkError(req.operation, 0, `cannot reach Nextcloud${code ? ` (${code})` : ''}`);
    }
    // An abort between the answer and the read below must not become an uncaught 'error'.
    res.body.on('error', () => undefined);
    let body: Uint8Array;
    try {
      body = new Uint8Array(await res.body.arrayBuffer());
    } catch {
      if (timeout.aborted) throw new NextcloudTimeoutError(req.operation, res.statusCode, `no complete answer within ${timeoutMs} ms`);
      throw new NextcloudNetworkError(req.operation, res.statusCode, 'connection lost while reading the answer');
    }
    if (res.statusCode >= 300 && res.statusCode < 400) {
      // Following it could carry the secret to another host (Node keeps custom headers across redirects).
      throw errorForStatus(req.operation, res.statusCode, 'unexpected redirect');
    }
    const responseHeaders = toHeaders(res.headers);
    req.jar?.store(req.url, responseHeaders.getSetCookie());
    return { status: res.statusCode, headers: responseHeaders, body };
  }
}
