// OCS envelopes exactly as Nextcloud 29 renders them (captures 10, 20, 50, 79, 86, 88, 92).

export type OcsVersion = 1 | 2;
export type OcsFormat = 'json' | 'xml';

export interface FakeReply {
  status: number;
  headers: Record<string, string>;
  /** File contents (WebDAV GET) stay bytes, so binaries are not mangled by a UTF-8 round trip. */
  body: string | Buffer;
  /** Set-Cookie lines (a web session, capture 91), sent as separate headers. */
  setCookies?: string[];
}

const JSON_TYPE = 'application/json; charset=utf-8';
const XML_TYPE = 'application/xml; charset=utf-8';

/** PHP json_encode with default flags: escapes "/" and every non-ASCII code unit as \uXXXX. */
export function phpJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  // Both characters can only occur inside JSON strings, so a global replace is safe.
  return text.replace(/\//g, '\\/').replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

export function ocsVersionOf(path: string): OcsVersion | null {
  if (path.startsWith('/ocs/v1.php/')) return 1;
  if (path.startsWith('/ocs/v2.php/')) return 2;
  return null;
}

/** Like OCSMiddleware/OC_API: `format` parameter first, then the Accept header. */
export function ocsFormatOf(query: URLSearchParams, accept: string | undefined): OcsFormat {
  const format = query.get('format');
  if (format === 'json') return 'json';
  if (format === 'xml') return 'xml';
  return accept !== undefined && accept.includes('application/json') ? 'json' : 'xml';
}

interface Meta {
  status: 'ok' | 'failure';
  statuscode: number;
  message: string;
  totalitems?: string;
  itemsperpage?: string;
}

function render(format: OcsFormat, meta: Meta, data: unknown): { body: string; type: string } {
  if (format === 'json') return { body: phpJson({ ocs: { meta, data } }), type: JSON_TYPE };
  return { body: renderXml({ meta, data }), type: XML_TYPE };
}

function reply(status: number, format: OcsFormat, meta: Meta, data: unknown, headers: Record<string, string> = {}): FakeReply {
  const out = render(format, meta, data ?? []);
  return { status, headers: { 'content-type': out.type, ...headers }, body: out.body };
}

/**
 * A controller's DataResponse (V1Response/V2Response). v1: HTTP 200 (401 for 997)
 * with statuscode 100 for success; v2: the real HTTP status as statuscode.
 */
export function ocsData(version: OcsVersion, format: OcsFormat, data: unknown, status = 200, headers: Record<string, string> = {}): FakeReply {
  return ocsResult(version, format, status, '', data, headers);
}

/** An OCS failure from a controller or middleware (OCSException, DataResponse with error status). */
export function ocsFailure(
  version: OcsVersion,
  format: OcsFormat,
  status: number,
  message = '',
  data: unknown = [],
  headers: Record<string, string> = {},
): FakeReply {
  return ocsResult(version, format, status, message, data, headers);
}

function ocsResult(version: OcsVersion, format: OcsFormat, status: number, message: string, data: unknown, headers: Record<string, string>): FakeReply {
  const ok = status >= 200 && status < 300;
  if (version === 1) {
    const meta: Meta = {
      status: ok ? 'ok' : 'failure',
      statuscode: status === 200 ? 100 : status,
      message: ok ? 'OK' : message,
      totalitems: '',
      itemsperpage: '',
    };
    return reply(status === 997 ? 401 : 200, format, meta, data, headers);
  }
  const httpStatus = status === 997 ? 401 : status === 998 ? 404 : status === 996 ? 500 : status < 200 || status > 600 ? 400 : status;
  const meta: Meta = { status: ok ? 'ok' : 'failure', statuscode: status, message: ok ? 'OK' : message };
  return reply(httpStatus, format, meta, data, headers);
}

/**
 * Errors that escape the AppFramework and are rendered by ocs/v1.php through
 * OC_API::respond: no totalitems in v1, and v2 maps 996/997/998 to HTTP codes.
 */
export function ocsLegacy(version: OcsVersion, format: OcsFormat, code: 996 | 997 | 998, message: string): FakeReply {
  if (version === 1) {
    return reply(code === 997 ? 401 : 200, format, { status: 'failure', statuscode: code, message }, []);
  }
  const http = code === 997 ? 401 : code === 998 ? 404 : 500;
  return reply(http, format, { status: 'failure', statuscode: http, message }, []);
}

export function internalServerError(version: OcsVersion, format: OcsFormat): FakeReply {
  return ocsLegacy(version, format, 996, 'Internal Server Error\n');
}

export function notLoggedIn(version: OcsVersion, format: OcsFormat): FakeReply {
  return ocsFailure(version, format, 997, 'Current user is not logged in');
}

export function invalidQuery(version: OcsVersion, format: OcsFormat): FakeReply {
  return ocsLegacy(
    version,
    format,
    998,
    'Invalid query, please check the syntax. API specifications are here: http://www.freedesktop.org/wiki/Specifications/open-collaboration-services.\n',
  );
}

export function methodNotAllowed(format: OcsFormat): FakeReply {
  return { status: 405, headers: { 'content-type': format === 'json' ? JSON_TYPE : XML_TYPE }, body: '' };
}

/** SecurityMiddleware's answer without OCS-APIRequest: plain JSON, not an envelope. */
export function csrfFailed(): FakeReply {
  return { status: 412, headers: { 'content-type': JSON_TYPE }, body: '{"message":"CSRF check failed"}' };
}

// --- XML (OC_API::toXML through XMLWriter with a one-space indent) ---

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function scalarText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (v === true) return '1';
  if (v === false) return '';
  return String(v);
}

function xmlNode(name: string, value: unknown, depth: number, out: string[]): void {
  const pad = ' '.repeat(depth);
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v) => ['element', v] as const) : Object.entries(value);
    if (entries.length === 0) {
      out.push(`${pad}<${name}/>`);
      return;
    }
    out.push(`${pad}<${name}>`);
    for (const [k, v] of entries) xmlNode(/^\d+$/.test(k) ? 'element' : k, v, depth + 1, out);
    out.push(`${pad}</${name}>`);
    return;
  }
  const text = scalarText(value);
  out.push(text === null ? `${pad}<${name}/>` : `${pad}<${name}>${escapeXml(text)}</${name}>`);
}

function renderXml(root: { meta: Meta; data: unknown }): string {
  const out: string[] = ['<?xml version="1.0"?>'];
  xmlNode('ocs', root, 0, out);
  return out.join('\n') + '\n';
}
