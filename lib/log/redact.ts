/**
 * Redaction for logs and traces (S20): by key name on every object path,
 * case-insensitively, and by value for every registered secret, including
 * secrets hidden inside base64 (AppAPI's auth header is base64("uid:secret")).
 */
const SENSITIVE_KEY =
  /(authorization|cookie|secret|password|passwd|api[-_]?key|apikey|access[-_]?token|refresh[-_]?token|^token$|signature|harp-shared-key|set-cookie|credential|private[-_]?key)/i;
const NON_SENSITIVE_KEY = /^(max_tokens|prompt_tokens|completion_tokens|total_tokens|max_completion_tokens|token_count|tokens)$/i;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}/g;
const KEY_VALUE = /\b(api[-_]?key|token|secret|password|passwd|access_token)=([^\s&"']{4,})/gi;
const BASE64_RUN = /[A-Za-z0-9+/]{16,}={0,2}/g;
export const REDACTED = '[redacted]';

const secrets = new Set<string>();

/** Registers a value that must never appear in any log line or trace. */
export function registerSecret(value: string | null | undefined): void {
  if (value && value.length >= 6) secrets.add(value);
}

export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEY.test(key) && !NON_SENSITIVE_KEY.test(key);
}

function containsSecret(text: string): boolean {
  for (const s of secrets) if (text.includes(s)) return true;
  return false;
}

export function redactString(text: string): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  out = out.replace(BEARER, (_m, kind: string) => `${kind} ${REDACTED}`);
  out = out.replace(KEY_VALUE, (_m, key: string) => `${key}=${REDACTED}`);
  if (secrets.size > 0) {
    out = out.replace(BASE64_RUN, (run) => {
      try {
        const decoded = Buffer.from(run, 'base64').toString('utf8');
        return containsSecret(decoded) ? REDACTED : run;
      } catch {
        return run;
      }
    });
  }
  return out;
}

export function redactValue(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactString(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 12) return '[depth]';
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  if (value instanceof Error) {
    return { type: value.name, message: redactString(value.message) };
  }
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1, seen));
  if (value instanceof Headers) return redactValue(Object.fromEntries(value.entries()), depth + 1, seen);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = isSensitiveKey(k) && v !== null && v !== undefined && v !== '' ? REDACTED : redactValue(v, depth + 1, seen);
  }
  return out;
}
