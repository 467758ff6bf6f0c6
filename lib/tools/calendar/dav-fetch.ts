// The fetch that tsdav gets: every request goes through NextcloudSession.dav, so the AppAPI
// headers come from our client and the secret never leaves it (S1). A URL outside this
// Nextcloud's DAV root is answered with a local 404 and never sent.
import type { NextcloudSession } from '../../nextcloud/client.ts';
import { assertSafeSegment } from '../../nextcloud/url-template.ts';

const ALL_ERRORS = Array.from({ length: 200 }, (_, i) => 400 + i);
const NULL_BODY = new Set([101, 204, 205, 304]);

export type DavFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

function headerRecord(h: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  new Headers(h).forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

function bodyOf(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError('unsupported request body for a DAV call');
}

function localResponse(status: number): Response {
  return new Response(null, { status });
}

/** Segments of a DAV URL below the root, decoded and checked; null when it is not below it. */
export function davSegments(root: URL, target: URL): { segments: string[]; trailingSlash: boolean } | null {
  if (target.origin !== root.origin || target.search !== '' || target.hash !== '') return null;
  const base = root.pathname.endsWith('/') ? root.pathname : `${root.pathname}/`;
  const path = target.pathname === base.slice(0, -1) ? base : target.pathname;
  if (!path.startsWith(base)) return null;
  const rest = path.slice(base.length);
  if (rest === '') return { segments: [], trailingSlash: true };
  const raw = (rest.endsWith('/') ? rest.slice(0, -1) : rest).split('/');
  const segments: string[] = [];
  for (const s of raw) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(s);
      assertSafeSegment(decoded, 'dav url');
    } catch {
      return null;
    }
    segments.push(decoded);
  }
  return { segments, trailingSlash: rest.endsWith('/') };
}

export function createDavFetch(session: NextcloudSession): DavFetch {
  const root = new URL(session.davUrl('/'));
  return async (input, init) => {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    let target: URL;
    try {
      target = new URL(href);
    } catch {
      return localResponse(400);
    }
    const where = davSegments(root, target);
    // Discovery probes such as /.well-known/caldav are answered here: we only call our own templates.
    if (where === null) return localResponse(404);
    const method = (init?.method ?? 'GET').toUpperCase();
    if (!/^[A-Z]{3,16}$/.test(method)) return localResponse(405);
    const template = where.segments.length === 0 ? '/' : where.trailingSlash ? '/{*p}/' : '/{*p}';
    const res = await session.dav(method, template, {
      params: { p: where.segments.join('/') },
      headers: headerRecord(init?.headers),
      body: bodyOf(init?.body),
      allowStatuses: ALL_ERRORS,
      ...(init?.signal ? { signal: init.signal } : {}),
    });
    // The body is already decoded: encoding and length headers would lie about it.
    const headers = new Headers(res.headers);
    for (const h of ['content-encoding', 'content-length', 'transfer-encoding']) headers.delete(h);
    return new Response(NULL_BODY.has(res.status) ? null : new Uint8Array(res.body), { status: res.status, headers });
  };
}
