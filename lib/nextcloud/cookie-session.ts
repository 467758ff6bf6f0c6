// A Nextcloud web session of one user for one tool call (test/fixtures/nextcloud29/91-collectives.json): AppAPI auth plus the
// session cookies Nextcloud sets, and the session's request token from `/index.php/csrftoken`.
// Created only by `NextcloudSession.withCookieSession()`, which discards the jar afterwards.
import type { OcsOptions, Query, WebOptions, WebResponse } from './call-options.ts';
import type { CookieJar } from './cookie-jar.ts';
import { NextcloudAuthError, NextcloudError } from './errors.ts';
import type { PathParams } from './url-template.ts';

/** What a cookie session uses of the `NextcloudSession` that creates it. */
export interface SessionCalls {
  readonly user: string;
  ocs<T>(method: string, path: string, options?: OcsOptions): Promise<T>;
  web(method: string, path: string, options?: WebOptions): Promise<WebResponse>;
}

const TOKEN = /^[A-Za-z0-9+/=:_-]{8,400}$/;

export interface CookieCallOptions {
  params?: PathParams;
  query?: Query;
  body?: unknown;
  timeoutMs?: number;
  allowStatuses?: number[];
}

export class CookieSession {
  readonly #session: SessionCalls;
  readonly #jar: CookieJar;
  #token: string | null = null;

  constructor(session: SessionCalls, jar: CookieJar) {
    this.#session = session;
    this.#jar = jar;
  }

  get user(): string {
    return this.#session.user;
  }

  /** The request token of this session (fetched once per session). */
  async requestToken(): Promise<string> {
    if (this.#token !== null) return this.#token;
    const res = await this.#session.web('GET', '/index.php/csrftoken', { jar: this.#jar, timeoutMs: 10_000 });
    const token = (res.json as { token?: unknown } | null)?.token;
    if (typeof token !== 'string' || !TOKEN.test(token)) throw new NextcloudError('GET /index.php/csrftoken', res.status, 'no request token in the answer');
    this.#token = token;
    return token;
  }

  /**
   * Asks Nextcloud who this session acts as (`cloud/user`, same jar). Anything but the
   * session's own uid means the cookies belong to someone else: stop before writing.
   */
  async confirmUser(): Promise<void> {
    const operation = 'GET /ocs/v2.php/cloud/user';
    // The session must exist first, so that the check runs with its cookies.
    await this.requestToken();
    const data = await this.#session.ocs<{ id?: unknown }>('GET', '/ocs/v2.php/cloud/user', { jar: this.#jar, timeoutMs: 10_000 });
    if (data?.id !== this.#session.user) throw new NextcloudAuthError(operation, 401, 'the web session does not act as the invoking user');
  }

  /** A JSON call to a CSRF-protected web route with this session's cookies and request token. */
  async json(method: string, path: string, options: CookieCallOptions = {}): Promise<WebResponse> {
    const token = await this.requestToken();
    return this.#session.web(method, path, {
      ...options,
      jar: this.#jar,
      // The header set of test/fixtures/nextcloud29/91-collectives.json (`OCS-APIRequest` alone does not pass the CSRF check there).
      headers: { requesttoken: token, 'OCS-APIRequest': 'true' },
    });
  }
}
