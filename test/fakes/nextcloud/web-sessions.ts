// Nextcloud's PHP sessions as capture 91 shows them: an AppAPI-authenticated request to
// `/index.php/csrftoken` opens a session (Set-Cookie) and returns its request token; CSRF-protected
// web routes then need that cookie plus the `requesttoken` header. A controller acts as the
// *session's* user, so the fake refuses a session cookie sent with another user's AppAPI header
// (a stale jar) instead of silently running as the earlier user.
import { randomBytes } from 'node:crypto';
import type { FakeReply } from './ocs.ts';

export const SESSION_COOKIE = 'ocfake7instance';

export interface FakeWebSession {
  id: string;
  uid: string;
  token: string;
}

export type SessionCheck = { kind: 'none' } | { kind: 'unknown' } | { kind: 'own'; session: FakeWebSession } | { kind: 'foreign'; session: FakeWebSession };

/** Paths where our client may send its per-call session cookies (csrftoken, Collectives 2.x, the user check). */
const COOKIE_PATHS = [/^\/index\.php\/csrftoken$/, /^\/index\.php\/apps\/collectives\/_api(\/|$)/, /^\/ocs\/v2\.php\/cloud\/user$/];

function parseCookies(header: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

export class FakeWebSessions {
  readonly #sessions = new Map<string, FakeWebSession>();
  /** Sessions opened, in order (uid per session). */
  readonly opened: FakeWebSession[] = [];
  /** Every refused stale or foreign cookie. */
  readonly refused: Array<{ session: string; owner: string; sentAs: string | null; path: string }> = [];
  /**
   * NC 30+ (server#46760): `Request::passesCSRFCheck()` returns true for any request with a
   * non-empty `OCS-APIRequest` header. Off by default: capture 91 (NC 29) answers 412 to it.
   */
  ocsApiRequestPassesCsrf = false;

  /** Whether the request passes the CSRF check without a session token (NC 30+ with the header only). */
  passesCsrfByHeader(headers: Record<string, string>): boolean {
    return this.ocsApiRequestPassesCsrf && (headers['ocs-apirequest'] ?? '') !== '';
  }

  /** The session a Cookie header names, and whether it belongs to `user`. */
  check(cookieHeader: string | undefined, user: string | null): SessionCheck {
    if (cookieHeader === undefined) return { kind: 'none' };
    const id = parseCookies(cookieHeader).get(SESSION_COOKIE);
    const session = id === undefined ? undefined : this.#sessions.get(id);
    if (!session) return { kind: 'unknown' };
    return session.uid === user ? { kind: 'own', session } : { kind: 'foreign', session };
  }

  /** Whether a cookie on this path is part of the per-call session contract (any session we issued). */
  allowsCookie(path: string, cookieHeader: string): boolean {
    const id = parseCookies(cookieHeader).get(SESSION_COOKIE);
    return id !== undefined && this.#sessions.has(id) && COOKIE_PATHS.some((re) => re.test(path));
  }

  /** Ends a session (logout, expiry): its cookie becomes unknown. */
  expire(id: string): void {
    this.#sessions.delete(id);
  }

  setCookies(session: FakeWebSession): string[] {
    return [
      `${SESSION_COOKIE}=${session.id}; path=/; secure; HttpOnly; SameSite=Lax`,
      `oc_sessionPassphrase=${session.token.slice(0, 20).replace(/[^A-Za-z0-9]/g, 'x')}; path=/; secure; HttpOnly; SameSite=Lax`,
      'nc_sameSiteCookielax=true; path=/; secure; httponly; expires=Fri, 31-Dec-2100 23:59:59 GMT; SameSite=lax',
      'nc_sameSiteCookiestrict=true; path=/; secure; httponly; expires=Fri, 31-Dec-2100 23:59:59 GMT; SameSite=strict',
    ];
  }

  /** `GET /index.php/csrftoken` (capture 91 getCsrfToken): the caller's own session, or a new one. */
  handleCsrfToken(method: string, user: string | null, cookieHeader: string | undefined): FakeReply {
    const json = 'application/json; charset=utf-8';
    if (method !== 'GET') return { status: 405, headers: { 'content-type': json }, body: '{"message":"Method not allowed"}' };
    if (user === null || user === '') return { status: 401, headers: { 'content-type': json }, body: '{"message":"Current user is not logged in"}' };
    const current = this.check(cookieHeader, user);
    const session = current.kind === 'own' ? current.session : this.#open(user);
    return { status: 200, headers: { 'content-type': json }, body: JSON.stringify({ token: session.token }), setCookies: this.setCookies(session) };
  }

  #open(uid: string): FakeWebSession {
    const session: FakeWebSession = {
      id: randomBytes(13).toString('hex'),
      uid,
      token: `${randomBytes(32).toString('base64')}:${randomBytes(32).toString('base64')}`,
    };
    this.#sessions.set(session.id, session);
    this.opened.push(session);
    return session;
  }
}
