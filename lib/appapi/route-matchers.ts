/**
 * How the three proxies match info.xml route regexes (S23), emulated so that
 * tests can prove every route works, and that none reaches a system path,
 * under each of them.
 */
export type RouteMatcher = (url: string, path: string) => boolean;

/** AppAPI 3.2.3: preg_match('/' . url . '/i', path without its leading slash). */
export const appApi323: RouteMatcher = (url, path) => {
  // An unescaped "/" would end PHP's pattern early; such a route never compiles there.
  if (/(^|[^\\])\//.test(url)) return false;
  return new RegExp(url, 'i').test(path.replace(/^\/+/, ''));
};

/** AppAPI 32+: ~^(?:url)~i against the path with its slash, then the bare path. */
export const appApiCurrent: RouteMatcher = (url, path) => {
  const re = new RegExp(`^(?:${url})`, 'i');
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  return re.test(withSlash) || re.test(withSlash.slice(1));
};

/** HaRP: Python re.match (anchored at the start, case-sensitive) on the path with its slash. */
export const harp: RouteMatcher = (url, path) => {
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  const m = new RegExp(url).exec(withSlash);
  return m !== null && m.index === 0;
};

export const ROUTE_MATCHERS: Record<string, RouteMatcher> = { 'AppAPI 3.2.3': appApi323, 'AppAPI 32+': appApiCurrent, HaRP: harp };
