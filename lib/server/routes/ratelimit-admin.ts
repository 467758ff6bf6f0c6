import { Router } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import { redactString } from '../../log/redact.ts';
import { WINDOWS, type RateLimiter, type ScopeLimits } from '../../ratelimit/rate-limiter.ts';
import { DEFAULT_QUEUE_TEMPLATE, renderQueueMessage, type RequestQueue } from '../../ratelimit/request-queue.ts';
import type { SettingsStore } from '../../storage/settings-store.ts';
import { isPlainObject } from '../../tools/json-schema.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { jsonBody } from '../json-body.ts';
import {
  loadRateLimitSettings,
  mergeSettingsPatch,
  parseRateLimitSettings,
  RATELIMIT_SETTINGS_KEY,
  scopeSchema,
  type StoredRateLimitSettings,
} from '../../ratelimit/rate-limit-settings.ts';

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

const MAX_ERRORS = 20;
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
    method: 'get',
    path: '/api/v1/admin/ratelimit',
    operationId: 'getRateLimits',
    summary: 'Rate-limit settings, live status and queue counts',
    tag: 'admin',
    access: 'admin',
    query: z.object({ uid: z.string().max(64).optional().describe("Also report this user's windows") }),
    response: {
      status: 200,
      name: 'RateLimits',
      schema: z.object({
        settings: publicSettings,
        defaultQueueMessage: z.string(),
        queueMessagePreview: z.string(),
        status: z.object({ enabled: z.boolean(), at: z.number(), chat: scopeStatus, embeddings: scopeStatus }),
        queue: queueStats,
      }),
    },
    errors: [400, 503],
  },
  {
    method: 'put',
    path: '/api/v1/admin/ratelimit',
    operationId: 'updateRateLimits',
    summary: 'Change rate-limit settings (objects merge key by key)',
    tag: 'admin',
    access: 'admin',
    body: {
      name: 'RateLimitsUpdate',
      schema: z.record(z.string(), z.unknown()).describe('Any subset of the settings; windows are whole numbers or null for no limit'),
    },
    response: { status: 200, name: 'RateLimitsSaved', schema: z.object({ settings: publicSettings }) },
    errors: [400, 503],
  },
  {
    method: 'post',
    path: '/api/v1/admin/ratelimit/process',
    operationId: 'processRateLimitQueue',
    summary: 'Process the request queue now',
    tag: 'admin',
    access: 'admin',
    response: {
      status: 200,
      name: 'QueueProcessed',
      schema: z.object({ processed: z.number().int(), remaining: z.number().int(), errors: z.array(z.string()), queue: queueStats }),
    },
    errors: [409, 500, 503],
  },
];

function changedFields(patch: unknown, prefix = ''): string[] {
  if (!isPlainObject(patch)) return prefix === '' ? [] : [prefix];
  return Object.entries(patch).flatMap(([k, v]) => changedFields(v, prefix === '' ? k : `${prefix}.${k}`));
}

function sanitizeErrors(errors: unknown): string[] {
  if (!Array.isArray(errors)) return [];
  return errors.slice(0, MAX_ERRORS).map((e) => redactString(typeof e === 'string' ? e : String(e)).slice(0, 300));
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
    return { enabled: s.enabled, chat: scopeLimits(s.chat), embeddings: scopeLimits(s.embeddings), queueMessage: s.queueMessage };
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
    const parsed = parseRateLimitSettings(mergeSettingsPatch(current, patch));
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
