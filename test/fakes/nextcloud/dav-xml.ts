// Sabre-style XML for the fake's DAV endpoints (captures 21, 70–84): multistatus answers with
// found (200) and missing (404) propstats, error bodies, and a namespace-aware reading of the
// properties a PROPFIND or REPORT asks for.
import type { FakeReply } from './ocs.ts';

export const NS_PREFIX: Record<string, string> = {
  'DAV:': 'd',
  'http://sabredav.org/ns': 's',
  'urn:ietf:params:xml:ns:caldav': 'cal',
  'http://calendarserver.org/ns/': 'cs',
  'http://owncloud.org/ns': 'oc',
  'http://nextcloud.org/ns': 'nc',
};

export const DAV_HEADER_FILES =
  '1, 3, extended-mkcol, access-control, calendarserver-principal-property-search, nextcloud-checksum-update, nc-calendar-search, nc-enable-birthday-calendar';
export const DAV_HEADER_CALDAV =
  '1, 3, extended-mkcol, access-control, calendarserver-principal-property-search, calendar-access, calendar-proxy, calendar-auto-schedule, calendar-availability, nc-calendar-trashbin, nc-calendar-webcal-cache, calendarserver-subscribed, oc-resource-sharing, oc-calendar-publishing, calendarserver-sharing, nextcloud-checksum-update, nc-calendar-search, nc-enable-birthday-calendar';

const XML_TYPE = 'application/xml; charset=utf-8';

export interface PropName {
  ns: string;
  name: string;
}

export function key(p: PropName): string {
  return `${p.ns}|${p.name}`;
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** xmlns declarations of a request body: prefix ('' = default) → namespace. */
function namespaces(body: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of body.matchAll(/xmlns(?::([A-Za-z0-9_-]+))?="([^"]*)"/g)) map.set(m[1] ?? '', m[2] ?? '');
  return map;
}

/** The element names directly inside the first `<prop>` of a request ('allprop' without one). */
export function requestedProps(body: string): PropName[] | 'allprop' {
  if (body.trim() === '') return 'allprop';
  const ns = namespaces(body);
  const open = /<(?:([A-Za-z0-9_-]+):)?prop(?:\s[^>]*)?>/.exec(body);
  if (!open) return /allprop/.test(body) ? 'allprop' : [];
  const start = open.index + open[0].length;
  const closeRe = new RegExp(`</${open[1] ? `${open[1]}:` : ''}prop>`);
  const close = closeRe.exec(body.slice(start));
  const inner = close ? body.slice(start, start + close.index) : body.slice(start);
  const out: PropName[] = [];
  let depth = 0;
  for (const m of inner.matchAll(/<(\/?)(?:([A-Za-z0-9_-]+):)?([A-Za-z0-9_.-]+)([^>]*?)(\/?)>/g)) {
    const closing = m[1] === '/';
    const selfClosing = m[5] === '/';
    if (closing) {
      depth -= 1;
      continue;
    }
    if (depth === 0) out.push({ ns: ns.get(m[2] ?? '') ?? 'DAV:', name: m[3] ?? '' });
    if (!selfClosing) depth += 1;
  }
  return out;
}

export function tag(p: PropName, inner: string | null): string {
  const prefix = NS_PREFIX[p.ns];
  if (prefix) return inner === null || inner === '' ? `<${prefix}:${p.name}/>` : `<${prefix}:${p.name}>${inner}</${prefix}:${p.name}>`;
  const decl = ` xmlns:x1="${escapeXml(p.ns)}"`;
  return inner === null || inner === '' ? `<x1:${p.name}${decl}/>` : `<x1:${p.name}${decl}>${inner}</x1:${p.name}>`;
}

export interface DavResource {
  href: string;
  /** Raw XML of the properties this resource has (value already escaped). */
  props: Map<string, string>;
}

/** Renders a multistatus the way Sabre does: asked-for props in a 200 propstat, unknown ones in a 404. */
export function multistatus(resources: DavResource[], asked: PropName[] | 'allprop', allprop: PropName[]): string {
  const parts: string[] = [];
  for (const r of resources) {
    const wanted = asked === 'allprop' ? allprop.filter((p) => r.props.has(key(p))) : asked;
    const found = wanted.filter((p) => r.props.has(key(p)));
    const missing = wanted.filter((p) => !r.props.has(key(p)));
    let xml = `<d:response><d:href>${escapeXml(r.href)}</d:href>`;
    if (found.length > 0 || missing.length === 0) {
      xml += `<d:propstat><d:prop>${found.map((p) => tag(p, r.props.get(key(p)) ?? '')).join('')}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>`;
    }
    if (missing.length > 0)
      xml += `<d:propstat><d:prop>${missing.map((p) => tag(p, null)).join('')}</d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>`;
    parts.push(`${xml}</d:response>`);
  }
  return `<?xml version="1.0"?>\n<d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:cal="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">${parts.join('')}</d:multistatus>\n`;
}

export function xmlReply(status: number, body: string, headers: Record<string, string> = {}): FakeReply {
  return { status, headers: { 'content-type': XML_TYPE, ...headers }, body };
}

export function davError(status: number, exception: string, message: string, extra = ''): FakeReply {
  const msg = message === '' ? '<s:message/>' : `<s:message>${escapeXml(message)}</s:message>`;
  return xmlReply(
    status,
    `<?xml version="1.0" encoding="utf-8"?>\n<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">\n  <s:exception>Sabre\\DAV\\Exception\\${exception}</s:exception>\n  ${msg}\n${extra}</d:error>\n`,
  );
}

export function empty(status: number, headers: Record<string, string> = {}): FakeReply {
  return { status, headers: { 'content-type': 'text/html; charset=UTF-8', 'content-length': '0', ...headers }, body: '' };
}

export function notAuthenticated(): FakeReply {
  return davError(
    401,
    'NotAuthenticated',
    "No public access to this resource., AppAPIAuth has not passed, No 'Authorization: Basic' header found. Either the client didn't send one, or the server is misconfigured, No 'Authorization: Bearer' header found. Either the client didn't send one, or the server is mis-configured, No 'Authorization: Basic' header found. Either the client didn't send one, or the server is misconfigured",
  );
}

export function p(ns: 'd' | 'oc' | 'nc' | 'cal' | 'cs', name: string): PropName {
  const uri = Object.entries(NS_PREFIX).find(([, v]) => v === ns)?.[0] ?? 'DAV:';
  return { ns: uri, name };
}

export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

/** Header lookup in the fake's lower-cased header record. */
export function header(headers: Record<string, string>, name: string): string | undefined {
  return headers[name.toLowerCase()];
}

/** Segments of a Destination header below /remote.php/dav, or null when it points elsewhere. */
export function destinationSegments(dest: string | undefined, baseUrl: string): string[] | null {
  if (!dest) return null;
  let url: URL;
  try {
    url = new URL(dest, baseUrl);
  } catch {
    return null;
  }
  if (url.origin !== new URL(baseUrl).origin || !url.pathname.startsWith('/remote.php/dav/')) return null;
  try {
    return url.pathname
      .slice('/remote.php/dav/'.length)
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
  } catch {
    return null;
  }
}

export function hrefOf(segments: string[], collection: boolean): string {
  const path = segments.map((s) => encodeURIComponent(s)).join('/');
  return `/remote.php/dav/${path}${collection && path !== '' ? '/' : ''}`;
}
