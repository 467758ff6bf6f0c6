// WebDAV 207 multistatus answers (Nextcloud/Sabre and radicale), parsed namespace-blind:
// prefixes differ between servers (d:, D:, x1:), local names do not.
import { XMLParser } from 'fast-xml-parser';

export interface DavEntry {
  /** As the server wrote it (percent-encoded path). */
  href: string;
  /** HTTP status of the response element itself, or of its first 2xx propstat. */
  status: number;
  /** Properties from 2xx propstats, by local name. */
  props: Record<string, unknown>;
}

const ARRAY_TAGS = new Set(['response', 'propstat', 'href', 'share-type', 'comp', 'privilege', 'supported-report']);
const MAX_XML_CHARS = 20 * 1024 * 1024;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  htmlEntities: true,
  isArray: (name) => ARRAY_TAGS.has(name),
});

export class DavParseError extends Error {
  override name = 'DavParseError';
}

/** Parses any DAV XML body; DOCTYPEs (entity tricks) are refused. */
export function parseDavXml(xml: string): Record<string, unknown> {
  if (xml.length > MAX_XML_CHARS) throw new DavParseError('the server answer is too large');
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new DavParseError('the server answer carries a DOCTYPE');
  try {
    return parser.parse(xml) as Record<string, unknown>;
  } catch {
    throw new DavParseError('the server answer is not valid XML');
  }
}

function statusCode(line: unknown): number {
  const m = /^\S+\s+(\d{3})/.exec(typeof line === 'string' ? line.trim() : '');
  return m ? Number(m[1]) : 0;
}

function asObject(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function asArray(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

export function parseMultistatus(xml: string): DavEntry[] {
  const root = asObject(parseDavXml(xml)['multistatus']);
  const out: DavEntry[] = [];
  for (const raw of asArray(root['response'])) {
    const response = asObject(raw);
    const href = textOf(asArray(response['href'])[0]);
    if (href === '') continue;
    const props: Record<string, unknown> = {};
    let okStatus = 0;
    for (const ps of asArray(response['propstat'])) {
      const propstat = asObject(ps);
      const code = statusCode(propstat['status']);
      if (code >= 200 && code < 300) {
        okStatus ||= code;
        Object.assign(props, asObject(propstat['prop']));
      }
    }
    const own = statusCode(response['status']);
    out.push({ href, status: own || okStatus || 404, props });
  }
  return out;
}

/** Text content of a parsed element ('' for empty or structured ones). */
export function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const o = asObject(v);
  const t = o['#text'];
  return typeof t === 'string' ? t : typeof t === 'number' ? String(t) : '';
}

export function propText(entry: DavEntry, name: string): string {
  return textOf(entry.props[name]).trim();
}

/** `<d:href>` values inside a property such as calendar-home-set. */
export function propHrefs(entry: DavEntry, name: string): string[] {
  return asArray(asObject(entry.props[name])['href'])
    .map((h) => textOf(h).trim())
    .filter((h) => h !== '');
}

/** Child element names of a property such as resourcetype. */
export function propChildren(entry: DavEntry, name: string): string[] {
  return Object.keys(asObject(entry.props[name])).filter((k) => !k.startsWith('@_') && k !== '#text');
}

export function isCollection(entry: DavEntry): boolean {
  return propChildren(entry, 'resourcetype').includes('collection');
}

/** Values of a repeated child such as share-types/share-type. */
export function propList(entry: DavEntry, name: string, child: string): string[] {
  return asArray(asObject(entry.props[name])[child]).map((v) => textOf(v).trim());
}

/** `<c:comp name="VEVENT"/>` names of supported-calendar-component-set. */
export function componentNames(entry: DavEntry): string[] {
  return asArray(asObject(entry.props['supported-calendar-component-set'])['comp'])
    .map((c) => asObject(c)['@_name'])
    .filter((n): n is string => typeof n === 'string');
}

/** Decoded path segments of an href, or null when it is not a clean path. */
export function hrefSegments(href: string): string[] | null {
  let pathname: string;
  try {
    pathname = new URL(href, 'http://placeholder.invalid').pathname;
  } catch {
    return null;
  }
  const out: string[] = [];
  for (const s of pathname.split('/')) {
    if (s === '') continue;
    try {
      out.push(decodeURIComponent(s));
    } catch {
      return null;
    }
  }
  return out;
}

/** Sabre's `<s:message>` of an error body, for our own error texts (never shown raw to users). */
export function sabreMessage(xml: string): string {
  try {
    const err = asObject(parseDavXml(xml)['error']);
    return textOf(err['message']).trim().slice(0, 200);
  } catch {
    return '';
  }
}
