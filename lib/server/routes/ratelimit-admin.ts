import { Router } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import { redactString } from '../../log/redact.ts';
import { WINDOWS, type RateLimiter, type RateLimitSettings, type RateWindow, type ScopeLimits, type WindowLimits } from '../../ratelimit/rate-limiter.ts';
import { DEFAULT_QUEUE_TEMPLATE, renderQueueMessage, type RequestQueue } from '../../ratelimit/request-queue.ts';
import type { SettingsStore } from '../../storage/settings-store.ts';
import { isPlainObject, setOwn } from '../../tools/json-schema.ts';
import { HttpError } from '../http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { collectFieldErrors } from '../../validation/field-errors.ts';
import { jsonBody } from '../json-body.ts';

export const RATELIMIT_SETTINGS_KEY = 'ratelimit.settings';

export interface StoredRateLimitSettings extends RateLimitSettings {
  /** The queue reply; `{position}` and `{wait}` are filled in. null = the built-in text. */
  queueMessage: string | null;
}

export interface ProcessQueueResult {
  processed: number;
  remaining: number;
  errors: string[];
}

export interface RateLimitAdminDeps {
  settings: SettingsStore;
  limiter: RateLimiter;
  queue: RequestQueue;
  /** Runs the queue once now (the same work as the scheduled processing). */
  processQueueNow: () => Promise<ProcessQueueResult>;
  adminCheck: AdminCheck;
  logger: Logger;
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
const MAX_ERRORS = 20;
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

const scopeSchema = z.object({ instance: windowsSchema, user: windowsSchema, guestRoom: windowsSchema.nullable() }, { error: 'Must be an object' }).strict();

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
  .object({
    enabled: z.boolean({ error: 'Must be true or false' }),
    chat: scopeSchema,
    embeddings: scopeSchema,
    queueMessage: queueMessageSchema,
  })
  .strict();

const windowStatus = z.object({ window: z.enum(WINDOWS), limit: z.number().nullable(), used: z.number(), resetsAt: z.number() });
const scopeStatus = z.object({
  instance: z.array(windowStatus),
  user: z.array(windowStatus).optional(),
  guestRoom: z.array(windowStatus).optional(),
  provider: z.object({ remaining: z.number().nullable(), blockedUntil: z.number().nullable(), blocked: z.boolean(), observedAt: z.number() }).nullable(),
});
const queueStats = z.object({ pending: z.number().int(), processing: z.number().int(), failed: z.number().int(), expired: z.number().int() });
const publicSettings = z.object({ enabled: z.boolean(), chat: scopeSchema, embeddings: scopeSchema, queueMessage: z.string().nullable() });

export const RATELIMIT_ADMIN_SPECS: RouteSpec[] = [
  {
    method: 'get', path: '/api/v1/admin/ratelimit', operationId: 'getRateLimits', summary: 'Rate-limit settings, live status and queue counts', tag: 'admin', access: 'admin',
    query: z.object({ uid: z.string().max(64).optional().describe("Also report this user's windows") }),
    response: { status: 200, name: 'RateLimits', schema: z.object({ settings: publicSettings, defaultQueueMessage: z.string(), queueMessagePreview: z.string(), status: z.object({ enabled: z.boolean(), at: z.number(), chat: scopeStatus, embeddings: scopeStatus }), queue: queueStats }) },
    errors: [400, 503],
  },
  {
    method: 'put', path: '/api/v1/admin/ratelimit', operationId: 'updateRateLimits', summary: 'Change rate-limit settings (objects merge key by key)', tag: 'admin', access: 'admin',
    body: { name: 'RateLimitsUpdate', schema: z.record(z.string(), z.unknown()).describe('Any subset of the settings; windows are whole numbers or null for no limit') },
    response: { status: 200, name: 'RateLimitsSaved', schema: z.object({ settings: publicSettings }) },
    errors: [400, 503],
  },
  {
    method: 'post', path: '/api/v1/admin/ratelimit/process', operationId: 'processRateLimitQueue', summary: 'Process the request queue now', tag: 'admin', access: 'admin',
    response: { status: 200, name: 'QueueProcessed', schema: z.object({ processed: z.number().int(), remaining: z.number().int(), errors: z.array(z.string()), queue: queueStats }) },
    errors: [409, 500, 503],
  },
];

/** Patch semantics: objects merge key by key, anything else (null included) replaces. */
function merge(base: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch) || !isPlainObject(base)) return patch;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(base)) setOwn(out, k, v);
  for (const [k, v] of Object.entries(patch)) setOwn(out, k, merge(Object.hasOwn(base, k) ? base[k] : undefined, v));
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
  const parsed = parseRateLimitSettings(merge(DEFAULT_RATE_LIMIT_SETTINGS, stored));
  if (parsed.ok) return parsed.settings;
  logger?.warn({ fields: Object.keys(parsed.errors) }, 'stored rate-limit settings are invalid; using the defaults');
  return structuredClone(DEFAULT_RATE_LIMIT_SETTINGS);
}

function changedFields(patch: unknown, prefix = ''): string[] {
  if (!isPlainObject(patch)) return prefix === '' ? [] : [prefix];
  return Object.entries(patch).flatMap(([k, v]) => changedFields(v, prefix === '' ? k : `${prefix}.${k}`));
}

function sanitizeErrors(errors: unknown): string[] {
  if (!Array.isArray(errors)) return [];
  return errors
    .slice(0, MAX_ERRORS)
    .map((e) => redactString(typeof e === 'string' ? e : String(e)).slice(0, 300));
}

function count(n: unknown): number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? Math.floor(n) : 0;
}

function scopeLimits(s: ScopeLimits): ScopeLimits {
  return { instance: s.instance, user: s.user, guestRoom: s.guestRoom ?? null };
}

/**
 * Admin API of the rate limits: settings (per-window limits for the instance
 * and per user, embeddings apart, the queue reply), live status with queue
 * counts, and "process the queue now".
 */
export function rateLimitAdminRoutes(deps: RateLimitAdminDeps): Router {
  const router = Router();
  const admin = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];
  let processing = false;

  function publicSettings(s: StoredRateLimitSettings) {
    return {
      enabled: s.enabled,
      chat: scopeLimits(s.chat),
      embeddings: scopeLimits(s.embeddings),
      queueMessage: s.queueMessage,
    };
  }

  router.get('/api/v1/admin/ratelimit', ...admin, async (req, res) => {
    const uid = req.query['uid'];
    if (uid !== undefined && (typeof uid !== 'string' || !/^[^\u0000-\u001f/\\]{1,64}$/.test(uid))) {
      throw new HttpError(400, 'invalid_query', 'Invalid query: uid', { uid: 'Not a user id' });
    }
    const settings = await loadRateLimitSettings(deps.settings, deps.logger);
    const [status, queue] = await Promise.all([deps.limiter.status(uid === undefined ? {} : { uid }), deps.queue.stats()]);
    res.json({
      settings: publicSettings(settings),
      defaultQueueMessage: DEFAULT_QUEUE_TEMPLATE,
      queueMessagePreview: renderQueueMessage(3, 90_000, settings.queueMessage),
      status,
      queue,
    });
  });

  router.put('/api/v1/admin/ratelimit', ...admin, jsonBody({ limit: '16kb' }), async (req, res) => {
    const patch: unknown = req.body;
    if (!isPlainObject(patch)) throw new HttpError(400, 'invalid_settings', 'The settings must be a JSON object', { input: 'Must be a JSON object' });
    const current = await loadRateLimitSettings(deps.settings, deps.logger);
    const parsed = parseRateLimitSettings(merge(current, patch));
    if (!parsed.ok) throw new HttpError(400, 'invalid_settings', `Invalid settings: ${Object.keys(parsed.errors).join(', ')}`, parsed.errors);
    await deps.settings.set(RATELIMIT_SETTINGS_KEY, parsed.settings);
    deps.logger.info({ fields: changedFields(patch) }, 'rate-limit settings updated');
    res.json({ settings: publicSettings(parsed.settings) });
  });

  router.post('/api/v1/admin/ratelimit/process', ...admin, async (_req, res) => {
    if (processing) throw new HttpError(409, 'queue_busy', 'The queue is already being processed');
    processing = true;
    let result: ProcessQueueResult;
    try {
      result = await deps.processQueueNow();
    } catch (err) {
      deps.logger.error({ err }, 'processing the queue on request failed');
      throw new HttpError(500, 'queue_failed', 'Processing the queue failed');
    } finally {
      processing = false;
    }
    const answer = { processed: count(result.processed), remaining: count(result.remaining), errors: sanitizeErrors(result.errors) };
    deps.logger.info({ processed: answer.processed, remaining: answer.remaining, errors: answer.errors.length }, 'queue processed on request');
    res.json({ ...answer, queue: await deps.queue.stats() });
  });

  return router;
}
