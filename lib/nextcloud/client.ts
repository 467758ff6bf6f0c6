import { errorForStatus, NextcloudError, UnsafeRequestError } from './errors.ts';
import { CookieJar } from './cookie-jar.ts';
import type { OcsOptions, Query, WebOptions, WebResponse } from './call-options.ts';
import { CookieSession } from './cookie-session.ts';
import { isIssued, type ActingUser } from './identity.ts';
import { Transport, type RawResponse } from './internal/transport.ts';
import { unwrapOcs } from './ocs.ts';
import { buildUrl, expandPath, type PathParams } from './url-template.ts';

export interface NextcloudClientOptions {
  baseUrl: string;
  appId: string;
  appVersion: string;
  appSecret: string;
  timeoutMs?: number;
}

export type { PathParams };

export type { OcsOptions, Query, WebOptions, WebResponse };

export interface DavOptions {
  params?: PathParams;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Statuses ≥ 400 that the caller handles itself instead of getting an error. */
  allowStatuses?: number[];
}

export interface DavResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
  text(): string;
}

function toDavResponse(raw: RawResponse): DavResponse {
  return { ...raw, text: () => new TextDecoder().decode(raw.body) };
}

/** Calls Nextcloud as one identity: a verified user, or nobody (system). */
export class NextcloudSession {
  readonly #transport: Transport;
  readonly user: string;

  constructor(transport: Transport, user: string) {
    this.#transport = transport;
    this.user = user;
  }

  /** OCS call; `path` is a template like `/ocs/v2.php/apps/spreed/api/v4/room/{token}`. */
  async ocs<T>(method: string, path: string, options: OcsOptions = {}): Promise<T> {
    const operation = `${method} ${path}`;
    const url = buildUrl(this.#transport.baseUrl, expandPath(path, options.params ?? {}, operation), { ...options.query, format: 'json' }, operation);
    const headers: Record<string, string> = { 'OCS-APIRequest': 'true', Accept: 'application/json' };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const res = await this.#transport.send({
      operation,
      method,
      url,
      user: this.user,
      headers,
      body,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      ...(options.jar ? { jar: options.jar } : {}),
    });
    return unwrapOcs<T>(operation, res.status, new TextDecoder().decode(res.body));
  }

  /**
   * A JSON call to a web (non-OCS) route such as Collectives 2.x's `/index.php/apps/collectives/_api`.
   * Errors carry only the route's short `message`, never the body.
   */
  async web(method: string, path: string, options: WebOptions = {}): Promise<WebResponse> {
    const operation = `${method} ${path}`;
    if (!path.startsWith('/index.php/')) throw errorForStatus(operation, 400, 'web calls go below /index.php/ only');
    if (this.user === '') throw errorForStatus(operation, 401, 'web routes need a user');
    const res = await this.#jsonCall(operation, method, path, { Accept: 'application/json', ...options.headers }, options);
    if (res.status >= 400 && !options.allowStatuses?.includes(res.status)) throw res.error();
    return { status: res.status, json: res.json };
  }

  /** Sends a JSON request below `/index.php/`; an error answer yields only the route's short `message`. */
  async #jsonCall(
    operation: string,
    method: string,
    path: string,
    headers: Record<string, string>,
    options: WebOptions,
  ): Promise<{ status: number; json: unknown; isJson: boolean; error: () => Error }> {
    const url = buildUrl(this.#transport.baseUrl, expandPath(path, options.params ?? {}, operation), options.query, operation);
    let body: string | undefined;
    if (options.body !== undefined) {
      headers = { ...headers, 'Content-Type': 'application/json' };
      body = JSON.stringify(options.body);
    }
    const res = await this.#transport.send({
      operation,
      method,
      url,
      user: this.user,
      headers,
      body,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      ...(options.jar ? { jar: options.jar } : {}),
    });
    const text = new TextDecoder().decode(res.body);
    let json: unknown = null;
    let isJson = text.trim() === '';
    if (!isJson) {
      try {
        json = JSON.parse(text) as unknown;
        isJson = true;
      } catch {
        json = null;
      }
    }
    const message = (json as { message?: unknown } | null)?.message;
    const error = () => errorForStatus(operation, res.status, typeof message === 'string' && message !== '' ? message.slice(0, 200) : `HTTP ${res.status}`);
    return { status: res.status, json, isJson, error };
  }

  /**
   * Runs `fn` with a cookie session of this user that exists only for this call: a fresh jar,
   * discarded when `fn` settles, so no cookie is ever reused across calls or users.
   */
  async withCookieSession<T>(fn: (web: CookieSession) => Promise<T>): Promise<T> {
    const jar = new CookieJar(this.#transport.origin);
    try {
      return await fn(new CookieSession(this, jar));
    } finally {
      jar.discard();
    }
  }

  /**
   * JSON call to an app's REST API below `/index.php/apps/` (Deck): plain JSON, no OCS envelope.
   * Needs a real user; Nextcloud's short `message` of an error answer becomes the error.
   */
  async rest<T>(method: string, path: string, options: OcsOptions = {}): Promise<T> {
    const operation = `${method} ${path}`;
    if (!path.startsWith('/index.php/apps/')) throw new UnsafeRequestError(operation, 0, 'only app APIs below /index.php/apps/');
    if (this.user === '') throw errorForStatus(operation, 401, 'app APIs need a user');
    const { jar: _jar, ...rest } = options;
    const res = await this.#jsonCall(operation, method, path, { 'OCS-APIRequest': 'true', Accept: 'application/json' }, rest);
    if (res.status >= 400) throw res.error();
    if (!res.isJson) throw new NextcloudError(operation, res.status, 'response is not JSON');
    return res.json as T;
  }

  /** WebDAV/CalDAV call below `/remote.php/dav`; DAV needs a real user, never the system identity. */
  async dav(method: string, path: string, options: DavOptions = {}): Promise<DavResponse> {
    const operation = `${method} ${path}`;
    if (this.user === '') throw errorForStatus(operation, 401, 'WebDAV needs a user');
    const url = buildUrl(this.#transport.baseUrl, `/remote.php/dav${expandPath(path, options.params ?? {}, operation)}`, undefined, operation);
    const res = await this.#transport.send({
      operation,
      method,
      url,
      user: this.user,
      headers: options.headers,
      body: options.body,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
    });
    if (res.status >= 400 && !options.allowStatuses?.includes(res.status)) throw errorForStatus(operation, res.status, `HTTP ${res.status}`);
    return toDavResponse(res);
  }

  /** Absolute URL of a DAV path for this origin (e.g. a Destination header). */
  davUrl(path: string, params: PathParams = {}): string {
    const operation = `davUrl ${path}`;
    return buildUrl(this.#transport.baseUrl, `/remote.php/dav${expandPath(path, params, operation)}`, undefined, operation).toString();
  }
}

/**
 * Our own small OCS/WebDAV client for Nextcloud (no npm package exists).
 * `as(user)` takes only an issued ActingUser, so the uid cannot come from a
 * model's arguments; `system()` acts as nobody (AppAPI endpoints only).
 */
export class NextcloudClient {
  readonly #transport: Transport;
  readonly baseUrl: string;

  constructor(options: NextcloudClientOptions) {
    this.#transport = new Transport({
      baseUrl: options.baseUrl,
      appId: options.appId,
      appVersion: options.appVersion,
      appSecret: options.appSecret,
      defaultTimeoutMs: options.timeoutMs ?? 30_000,
    });
    this.baseUrl = options.baseUrl;
  }

  as(user: ActingUser): NextcloudSession {
    if (!isIssued(user)) throw new TypeError('Nextcloud calls need an ActingUser issued from a verified context');
    return new NextcloudSession(this.#transport, user.uid);
  }

  system(): NextcloudSession {
    return new NextcloudSession(this.#transport, '');
  }

  /**
   * Talk's bot endpoints authenticate with the bot's HMAC, not with AppAPI:
   * they get no AppAPI headers at all.
   */
  async botOcs(
    method: string,
    path: string,
    options: { params: PathParams; body: unknown; headers: Record<string, string>; timeoutMs?: number },
  ): Promise<{ status: number }> {
    const operation = `${method} ${path}`;
    const url = buildUrl(this.baseUrl, expandPath(path, options.params, operation), { format: 'json' }, operation);
    const res = await this.#transport.send({
      operation,
      method,
      url,
      user: null,
      headers: { ...options.headers, 'OCS-APIRequest': 'true', Accept: 'application/json', 'Content-Type': 'application/json' },
      body: JSON.stringify(options.body),
      timeoutMs: options.timeoutMs,
    });
    if (res.status >= 400) throw errorForStatus(operation, res.status, `HTTP ${res.status}`);
    return { status: res.status };
  }
}
