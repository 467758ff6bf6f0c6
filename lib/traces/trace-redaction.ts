// What a trace may keep of a text: credentials are redacted by name, by registered secret and by shape (S20).
import { REDACTED, redactValue } from '../log/redact.ts';

// Credentials recognised by their shape, on top of the key-name and registered-secret redaction.
const VALUE_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  // Nextcloud app passwords: five groups of five.
  /\b[A-Za-z0-9]{5}(?:-[A-Za-z0-9]{5}){4}\b/g,
];
const HEADER_LINE = /\b(proxy-authorization|authorization|x-api-key|api[-_]?key|set-cookie|cookie)(["']?\s*[:=]\s*)(["']?)([^"'\r\n,}]+)\3/gi;

function redactPatterns(text: string): string {
  let out = text.replace(HEADER_LINE, (_m, name: string, sep: string, quote: string) => `${name}${sep}${quote}${REDACTED}${quote}`);
  for (const p of VALUE_PATTERNS) out = out.replace(p, REDACTED);
  return out;
}

function mapStrings(value: unknown, fn: (s: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return fn(value);
  if (value === null || typeof value !== 'object' || depth > 14) return value;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = mapStrings(v, fn, depth + 1);
  return out;
}

/** Key-name, registered-secret, Bearer/Basic and credential-shape redaction (S20). */
export function sanitizeForTrace(value: unknown): unknown {
  return mapStrings(redactValue(value), redactPatterns);
}

export function sanitizeText(text: string): string {
  return sanitizeForTrace(text) as string;
}

/** Cuts to n UTF-16 units without leaving half a surrogate pair. */
export function clip(text: string, n: number): string {
  if (text.length <= n) return text;
  const cut = text.slice(0, n);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
