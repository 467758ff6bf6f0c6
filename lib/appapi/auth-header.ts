import { timingSafeEqual, createHash } from 'node:crypto';
import { issueFromVerifiedHeader, type ActingUser } from '../nextcloud/identity.ts';

export type AuthFailure = 'missing-headers' | 'wrong-app-id' | 'empty-version' | 'malformed' | 'wrong-secret';

export type AuthResult = { ok: true; uid: string; user: ActingUser | null } | { ok: false; reason: AuthFailure };

type HeaderBag = Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

let expectedDigest: { secret: string; digest: Buffer } | null = null;

/** Compares digests so neither content nor length leaks through timing. The app's own digest is computed once. */
function sameSecret(given: string, expected: string): boolean {
  if (expectedDigest?.secret !== expected) expectedDigest = { secret: expected, digest: createHash('sha256').update(expected, 'utf8').digest() };
  const a = createHash('sha256').update(given, 'utf8').digest();
  return timingSafeEqual(a, expectedDigest.digest) && given.length === expected.length;
}

/**
 * Verifies AppAPI's headers (contract §2.1): EX-APP-ID equals ours, a
 * non-empty EX-APP-VERSION, and AUTHORIZATION-APP-API = base64("uid:secret")
 * with the secret compared in constant time. The uid is only meaningful
 * after the secret matched; an empty uid means "no user".
 */
export function verifyAppApiHeaders(headers: HeaderBag, appId: string, appSecret: string): AuthResult {
  const id = header(headers, 'ex-app-id');
  const version = header(headers, 'ex-app-version');
  const auth = header(headers, 'authorization-app-api');
  if (id === undefined || version === undefined || auth === undefined || auth === '') return { ok: false, reason: 'missing-headers' };
  if (id !== appId) return { ok: false, reason: 'wrong-app-id' };
  if (version.trim() === '') return { ok: false, reason: 'empty-version' };
  if (auth.length > 4096 || !/^[A-Za-z0-9+/]+={0,2}$/.test(auth)) return { ok: false, reason: 'malformed' };
  const decoded = Buffer.from(auth, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return { ok: false, reason: 'malformed' };
  const uid = decoded.slice(0, colon);
  const secret = decoded.slice(colon + 1);
  if (!sameSecret(secret, appSecret)) return { ok: false, reason: 'wrong-secret' };
  if (uid.length > 64 || /[\u0000-\u001f/\\]/.test(uid)) return { ok: false, reason: 'malformed' };
  return { ok: true, uid, user: uid === '' ? null : issueFromVerifiedHeader(uid) };
}
