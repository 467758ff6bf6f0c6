import { UnsafeRequestError } from './errors.ts';

export type PathParams = Record<string, string | number>;

const FORBIDDEN_IN_SEGMENT = /[/\\?#\u0000-\u001f\u007f]/;

/**
 * Validates one path segment from untrusted input (S2): after percent-decoding
 * it must not be empty, `.` or `..`, nor contain `/ \ ? #` or control characters.
 */
export function assertSafeSegment(raw: string, operation: string): string {
  let decoded = raw;
  for (let i = 0; i < 3; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      throw new UnsafeRequestError(operation, 0, 'path segment is not valid percent-encoding');
    }
    if (next === decoded) break;
    decoded = next;
  }
  if (decoded === '' || decoded === '.' || decoded === '..' || FORBIDDEN_IN_SEGMENT.test(decoded)) {
    throw new UnsafeRequestError(operation, 0, 'path segment is not allowed');
  }
  return raw;
}

/** Splits a relative file path into safe segments; `a/b/c.txt` → ['a','b','c.txt']. */
export function splitSafePath(path: string, operation: string): string[] {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return [];
  return trimmed.split('/').map((s) => assertSafeSegment(s, operation));
}

/**
 * Expands `/ocs/v2.php/apps/spreed/api/v1/chat/{token}` with encoded parameters.
 * A `{*name}` placeholder takes a multi-segment path (each segment checked).
 * After building, the URL's pathname must equal the expansion, so nothing in a
 * parameter can re-route the request.
 */
export function expandPath(template: string, params: PathParams, operation: string): string {
  const expanded = template.replace(/\{(\*?)([a-zA-Z0-9_]+)\}/g, (_m, star: string, name: string) => {
    const value = params[name];
    if (value === undefined) throw new UnsafeRequestError(operation, 0, `missing path parameter ${name}`);
    const text = String(value);
    if (star) return splitSafePath(text, operation).map(encodeURIComponent).join('/');
    return encodeURIComponent(assertSafeSegment(text, operation));
  });
  return expanded;
}

// The base is the one Nextcloud URL of the app: parsed once, not on every request.
const bases = new Map<string, { origin: string; prefix: string }>();

function parsedBase(base: string): { origin: string; prefix: string } {
  let parsed = bases.get(base);
  if (parsed === undefined) {
    const url = new URL(base);
    parsed = { origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') };
    if (bases.size >= 16) bases.clear();
    bases.set(base, parsed);
  }
  return parsed;
}

export function buildUrl(base: string, pathname: string, query: Record<string, string | number | boolean | undefined> | undefined, operation: string): URL {
  const baseUrl = parsedBase(base);
  const fullPath = `${baseUrl.prefix}${pathname}`;
  const url = new URL(fullPath, baseUrl.origin);
  if (url.origin !== baseUrl.origin || url.pathname !== fullPath) {
    throw new UnsafeRequestError(operation, 0, 'request path does not match its template');
  }
  if (query) {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) search.set(k, String(v));
    url.search = search.toString();
  }
  return url;
}
