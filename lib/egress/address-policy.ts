// Which IP addresses outbound requests may reach (S18). Everything that is not
// a public unicast address is refused unless an admin allow-list entry covers it.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

// Cloud metadata services that sit on public or otherwise unremarkable addresses.
const METADATA_ADDRESSES: ReadonlyArray<[string, number]> = [
  ['169.254.169.254', 32], // AWS, GCP, Azure, OpenStack (also inside link-local)
  ['169.254.170.2', 32], // AWS ECS task metadata
  ['100.100.100.200', 32], // Alibaba Cloud (inside 100.64/10)
  ['168.63.129.16', 32], // Azure wire server (a public address)
  ['fd00:ec2::254', 128], // AWS IPv6 metadata (inside ULA)
];

// Ranges refused even for allow-listed hosts: no service can legitimately live there.
const NEVER_V4 = new Set(['unspecified', 'broadcast', 'multicast']);
const NEVER_V6 = new Set(['unspecified', 'multicast']);

const V4_NAMES: Readonly<Record<string, string>> = {
  unspecified: 'unspecified (this-network)',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (100.64/10)',
  private: 'private (RFC 1918)',
  reserved: 'reserved',
  as112: 'reserved (AS112)',
  amt: 'reserved (AMT)',
};

const V6_NAMES: Readonly<Record<string, string>> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'unique local (ULA)',
  ipv4Mapped: 'IPv4-mapped',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard-only',
};

function metadataHit(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  for (const [base, bits] of METADATA_ADDRESSES) {
    const parsed = ipaddr.parse(base);
    if (parsed.kind() === addr.kind() && addr.match(parsed, bits)) return true;
  }
  return false;
}

/** Strips the brackets of an IPv6 URL host and a zone id; returns null if it is not an IP literal. */
export function ipLiteral(host: string): string | null {
  let h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = h.indexOf('%');
  if (zone >= 0) h = h.slice(0, zone);
  return isIP(h) === 0 ? null : h;
}

/**
 * The verdict for one address without any allow-list. Only public unicast
 * passes; IPv4-mapped, IPv4-compatible, NAT64, 6to4 and Teredo IPv6 forms are
 * refused outright, because they can smuggle an internal IPv4 address.
 */
export function classifyAddress(address: string): AddressVerdict {
  const literal = ipLiteral(address);
  if (literal === null) return { allowed: false, reason: 'not an IP address' };
  const addr = ipaddr.parse(literal);
  if (metadataHit(addr)) return { allowed: false, reason: 'a cloud metadata address' };
  if (addr.kind() === 'ipv4') {
    const range = addr.range();
    if (range !== 'unicast') return { allowed: false, reason: `a ${V4_NAMES[range] ?? range} address` };
    return { allowed: true };
  }
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  if (range !== 'unicast') return { allowed: false, reason: `a ${V6_NAMES[range] ?? range} address` };
  // ::a.b.c.d (deprecated IPv4-compatible form); ipaddr.js calls it unicast.
  const parts = v6.parts;
  if (parts.slice(0, 6).every((p) => p === 0)) return { allowed: false, reason: 'an IPv4-compatible address' };
  return { allowed: true };
}

/** True for ranges that are refused even when an allow-list entry would cover them. */
export function isNeverAllowed(address: string): boolean {
  const literal = ipLiteral(address);
  if (literal === null) return true;
  const addr = ipaddr.parse(literal);
  const range = addr.range();
  return addr.kind() === 'ipv4' ? NEVER_V4.has(range) : NEVER_V6.has(range);
}

export interface AllowList {
  hosts: ReadonlySet<string>;
  cidrs: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
}

/** Why an allow-list entry is refused, or null. Entries are host names or CIDR ranges (a bare IP is a /32 or /128). */
export function allowListEntryProblem(entry: string): string | null {
  const e = entry.trim();
  if (e === '') return 'must not be empty';
  if (e.length > 255) return 'must be at most 255 characters';
  if (e.includes('/')) return ipaddr.isValidCIDR(e) ? null : 'is not a valid CIDR range';
  if (ipaddr.isValid(e) && isIP(e) !== 0) return null;
  if (!/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(e)) return 'is neither a host name nor an IP range';
  return null;
}

export function parseAllowList(entries: readonly string[]): AllowList {
  const hosts = new Set<string>();
  const cidrs: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];
  for (const raw of entries) {
    const e = raw.trim().toLowerCase();
    if (allowListEntryProblem(e) !== null) continue;
    if (e.includes('/')) cidrs.push(ipaddr.parseCIDR(e));
    else if (isIP(e) !== 0) {
      const addr = ipaddr.parse(e);
      cidrs.push([addr, addr.kind() === 'ipv4' ? 32 : 128]);
    } else hosts.add(e);
  }
  return { hosts, cidrs };
}

export const EMPTY_ALLOW_LIST: AllowList = { hosts: new Set(), cidrs: [] };

/**
 * Whether `address` may be contacted for a request to `host`: public unicast
 * always; anything else only if the admin listed the host name or a range that
 * contains the address, and never the unspecified, broadcast or multicast ranges.
 */
export function checkAddress(host: string, address: string, allow: AllowList): AddressVerdict {
  const verdict = classifyAddress(address);
  if (verdict.allowed) return verdict;
  if (isNeverAllowed(address)) return verdict;
  if (allow.hosts.has(host.toLowerCase())) return { allowed: true };
  const literal = ipLiteral(address);
  if (literal === null) return verdict;
  const addr = ipaddr.parse(literal);
  for (const [base, bits] of allow.cidrs) {
    if (base.kind() === addr.kind() && addr.match(base, bits)) return { allowed: true };
  }
  return verdict;
}
