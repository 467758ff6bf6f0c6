// The rate-limit settings: their schema, defaults and patch merge; read by the limiter, the
// queue reply, the admin API and the AppAPI admin form.
import { z } from 'zod';
import type { Logger } from '../log/logger.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import { isPlainObject, setOwn } from '../tools/json-schema.ts';
import { collectFieldErrors } from '../validation/field-errors.ts';
import { WINDOWS, type RateLimitSettings, type RateWindow, type WindowLimits } from './rate-limiter.ts';

export const RATELIMIT_SETTINGS_KEY = 'ratelimit.settings';

export interface StoredRateLimitSettings extends RateLimitSettings {
  /** The queue reply; `{position}` and `{wait}` are filled in. null = the built-in text. */
  queueMessage: string | null;
}

const none: WindowLimits = { second: null, minute: null, hour: null, day: null };

/** Upstream's defaults: off; chat 30/min, 200/h, 1000/day for the instance; embeddings 100/min, 2000/h, 4000/day. */
export const DEFAULT_RATE_LIMIT_SETTINGS: StoredRateLimitSettings = {
  enabled: false,
  chat: { instance: { second: null, minute: 30, hour: 200, day: 1000 }, user: { ...none }, guestRoom: null },
  embeddings: { instance: { second: null, minute: 100, hour: 2000, day: 4000 }, user: { ...none }, guestRoom: null },
  queueMessage: null,
};

const MAX_LIMIT = 1_000_000_000;
const PLACEHOLDER = /\{([^{}]*)\}/g;

const limit = z
  .number({ error: 'Must be a whole number, or empty for no limit' })
  .int('Must be a whole number')
  .min(0, 'Must be 0 or more')
  .max(MAX_LIMIT, `At most ${MAX_LIMIT}`)
  .nullable()
  .default(null);

/** A shorter window allowing more than a longer one is a typo, not a policy. */
const windowsSchema = z
  .object({ second: limit, minute: limit, hour: limit, day: limit }, { error: 'Must be an object of window limits' })
  .strict()
  .superRefine((w, ctx) => {
    for (let i = 0; i < WINDOWS.length; i++) {
      const short = WINDOWS[i] as RateWindow;
      const value = w[short];
      if (value === null) continue;
      for (const long of WINDOWS.slice(i + 1)) {
        const cap = w[long];
        if (cap !== null && value > cap) {
          ctx.addIssue({ code: 'custom', path: [short], message: `Must not exceed the ${long} limit (${cap})` });
          break;
        }
      }
    }
  });

export const scopeSchema = z
  .object({ instance: windowsSchema, user: windowsSchema, guestRoom: windowsSchema.nullable() }, { error: 'Must be an object' })
  .strict();

const queueMessageSchema = z
  .string({ error: 'Must be a text, or empty for the built-in text' })
  .max(1000, 'At most 1000 characters')
  .nullable()
  .transform((v) => (v === null || v.trim() === '' ? null : v))
  .superRefine((v, ctx) => {
    if (v === null) return;
    if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(v)) ctx.addIssue({ code: 'custom', message: 'No control characters' });
    for (const m of v.matchAll(PLACEHOLDER)) {
      if (m[1] !== 'position' && m[1] !== 'wait') {
        ctx.addIssue({ code: 'custom', message: `Unknown placeholder {${(m[1] ?? '').slice(0, 40)}}: use {position} and {wait}` });
        break;
      }
    }
  });

const settingsSchema = z
  .object({ enabled: z.boolean({ error: 'Must be true or false' }), chat: scopeSchema, embeddings: scopeSchema, queueMessage: queueMessageSchema })
  .strict();

/** Patch semantics: objects merge key by key, anything else (null included) replaces. */
export function mergeSettingsPatch(base: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch) || !isPlainObject(base)) return patch;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(base)) setOwn(out, k, v);
  for (const [k, v] of Object.entries(patch)) setOwn(out, k, mergeSettingsPatch(Object.hasOwn(base, k) ? base[k] : undefined, v));
  return out;
}

/** Checks complete settings; `errors` maps each bad field (dotted path) to its problem. */
export function parseRateLimitSettings(value: unknown): { ok: true; settings: StoredRateLimitSettings } | { ok: false; errors: Record<string, string> } {
  const parsed = settingsSchema.safeParse(value);
  if (parsed.success) return { ok: true, settings: parsed.data };
  const errors: Record<string, string> = {};
  collectFieldErrors(parsed.error.issues, errors);
  return { ok: false, errors };
}

/** The stored settings over the defaults; what the RateLimiter and the queue reply read. */
export async function loadRateLimitSettings(settings: SettingsStore, logger?: Logger): Promise<StoredRateLimitSettings> {
  const stored = await settings.get<unknown>(RATELIMIT_SETTINGS_KEY);
  if (stored === undefined) return structuredClone(DEFAULT_RATE_LIMIT_SETTINGS);
  const parsed = parseRateLimitSettings(mergeSettingsPatch(DEFAULT_RATE_LIMIT_SETTINGS, stored));
  if (parsed.ok) return parsed.settings;
  logger?.warn({ fields: Object.keys(parsed.errors) }, 'stored rate-limit settings are invalid; using the defaults');
  return structuredClone(DEFAULT_RATE_LIMIT_SETTINGS);
}
