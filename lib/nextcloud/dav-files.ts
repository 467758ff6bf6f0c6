// A user's files over WebDAV: DASL SEARCH (test/fixtures/nextcloud29/77-webdav-search.json), PROPFIND
// (test/fixtures/nextcloud29/70-webdav-propfind-nextcloud-props.json) and GET (test/fixtures/nextcloud29/76-webdav-binary-get.json).
// Callers build the XML bodies and parse the answers; this module owns the paths.
import type { DavResponse, NextcloudSession } from './client.ts';

type DavCaller = Pick<NextcloudSession, 'dav'>;

/** Where a user's files live in DAV hrefs (`/remote.php/dav/files/<uid>`, no trailing slash). */
export function userFilesHrefPrefix(uid: string): string {
  return `/remote.php/dav/files/${encodeURIComponent(uid)}`;
}

/** The scope of a SEARCH over a user's files, as the searchrequest's `d:href` names it (not XML-escaped). */
export function userFilesSearchScope(uid: string): string {
  return `/files/${encodeURIComponent(uid)}`;
}

/** DASL `SEARCH /remote.php/dav/` with a prepared searchrequest body. */
export function searchFiles(session: DavCaller, body: string, options: { timeoutMs?: number } = {}): Promise<DavResponse> {
  return session.dav('SEARCH', '/', { headers: { 'Content-Type': 'text/xml' }, body, timeoutMs: options.timeoutMs });
}

/** `PROPFIND` a path below the user's home ('' is the home itself) at Depth 0 or 1. */
export function propfindUserPath(
  session: DavCaller,
  uid: string,
  path: string,
  depth: 0 | 1,
  body: string,
  options: { timeoutMs?: number } = {},
): Promise<DavResponse> {
  return session.dav('PROPFIND', path === '' ? '/files/{uid}/' : '/files/{uid}/{*path}', {
    params: { uid, path },
    headers: { Depth: String(depth), 'Content-Type': 'application/xml; charset=utf-8' },
    body,
    timeoutMs: options.timeoutMs,
  });
}

/** `GET` a file below the user's home. */
export function getUserFile(session: DavCaller, uid: string, path: string, options: { timeoutMs?: number } = {}): Promise<DavResponse> {
  return session.dav('GET', '/files/{uid}/{*path}', { params: { uid, path }, timeoutMs: options.timeoutMs });
}
