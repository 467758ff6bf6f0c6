/** Options and answers of `NextcloudSession`'s OCS and web calls, shared with `cookie-session.ts` (kept apart so that file need not import `client.ts`, which creates it). */
import type { CookieJar } from './cookie-jar.ts';
import type { PathParams } from './url-template.ts';

export type Query = Record<string, string | number | boolean | undefined>;

export interface OcsOptions {
  params?: PathParams;
  query?: Query;
  body?: unknown;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Only from a CookieSession (Collectives 2.x): the call's own cookie jar. */
  jar?: CookieJar;
}

/** A JSON call to an app's web route below `/index.php/` (not OCS). */
export interface WebOptions {
  params?: PathParams;
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  jar?: CookieJar;
  /** Statuses ≥ 400 that the caller handles itself instead of getting an error. */
  allowStatuses?: number[];
}

export interface WebResponse {
  status: number;
  /** The parsed JSON body, or null when the body is not JSON. */
  json: unknown;
}
