import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import type { AdminTraceFilters, TraceFilters, TraceStore } from '../../traces/trace-store.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin, requireUser } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { requireActingUser } from '../request-auth.ts';
import { collectFieldErrors } from '../../validation/field-errors.ts';

export interface TracesApiDeps {
  traces: TraceStore;
  adminCheck: AdminCheck;
  logger: Logger;
}

const RUN_ID = /^[A-Za-z0-9-]{1,64}$/;
const MAX_OFFSET = 1_000_000;

function whole(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,10}$/, 'Must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min, `At least ${min}`).max(max, `At most ${max}`));
}

const flag = z.enum(['true', 'false', '1', '0'], { error: 'Use true or false' }).transform((v) => v === 'true' || v === '1');

/** Milliseconds since 1970, or an ISO date ("2025-03-01" or with a time). */
const instant = z.string().transform((v, ctx) => {
  if (/^\d{1,15}$/.test(v)) return Number(v);
  const at = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) ? Date.parse(v) : Number.NaN;
  if (Number.isNaN(at)) {
    ctx.addIssue({ code: 'custom', message: 'Use milliseconds since 1970 or an ISO date' });
    return z.NEVER;
  }
  return at;
});

const text = (max: number) =>
  z
    .string()
    .max(max, `At most ${max} characters`)
    .refine((v) => !/[\u0000-\u001f]/.test(v), 'No control characters');

const common = {
  status: z.enum(['running', 'success', 'partial', 'error'], { error: 'Use running, success, partial or error' }),
  botId: text(64),
  botMention: text(100),
  from: instant,
  to: instant,
  onlyErrors: flag,
  onlyWithTools: flag,
  limit: whole(1, 100),
  offset: whole(0, MAX_OFFSET),
};

function ordered<T extends { from?: number; to?: number }>(schema: z.ZodType<T>) {
  return schema.superRefine((f, ctx) => {
    if (f.from !== undefined && f.to !== undefined && f.to < f.from) ctx.addIssue({ code: 'custom', path: ['to'], message: 'Must not be before from' });
  });
}

// botMentionName is upstream's name of the mention filter.
const userQueryObject = z
  .object({ ...common, q: text(200), botMentionName: text(100) })
  .partial()
  .strict();
const adminQueryObject = z
  .object({ ...common, q: text(200), botMentionName: text(100), uid: text(64) })
  .partial()
  .strict();
const userQuery = ordered(userQueryObject);
const adminQuery = ordered(adminQueryObject);
const auditQuery = z
  .object({ runId: text(64), ownerUid: text(64), limit: whole(1, 100), offset: whole(0, MAX_OFFSET) })
  .partial()
  .strict();

const traceRun = z.record(z.string(), z.unknown()).describe('A turn: bot, room, status, timings, token usage (redacted)');
const traceEvent = z.record(z.string(), z.unknown()).describe('LLM request or response, tool call or result, error (redacted)');
const traceList = z.object({ traces: z.array(traceRun), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });
const traceAnswer = z.object({ trace: traceRun, events: z.array(traceEvent) });
const runParams = z.object({ id: z.string().regex(RUN_ID) });
const auditAnswer = z.object({ entries: z.array(z.record(z.string(), z.unknown())), limit: z.number().int(), offset: z.number().int() });

export const TRACES_API_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/api/v1/traces',
    operationId: 'listMyTraces',
    summary: 'My turns ("Activity"), newest first',
    tag: 'traces',
    access: 'user',
    query: userQueryObject,
    response: { status: 200, name: 'TraceList', schema: traceList },
    errors: [400],
  },
  {
    method: 'delete',
    path: '/api/v1/traces',
    operationId: 'clearMyTraces',
    summary: 'Delete all my traces',
    tag: 'traces',
    access: 'user',
    response: { status: 200, name: 'TracesCleared', schema: z.object({ deleted: z.number().int() }) },
  },
  {
    method: 'get',
    path: '/api/v1/traces/{id}',
    operationId: 'getMyTrace',
    summary: 'One of my turns with its events',
    tag: 'traces',
    access: 'user',
    params: runParams,
    response: { status: 200, name: 'Trace', schema: traceAnswer },
    errors: [404],
  },
  {
    method: 'delete',
    path: '/api/v1/traces/{id}',
    operationId: 'deleteMyTrace',
    summary: 'Delete one of my traces',
    tag: 'traces',
    access: 'user',
    params: runParams,
    response: { status: 200, name: 'TraceDeleted', schema: z.object({ deleted: z.literal(true) }) },
    errors: [404],
  },
  {
    method: 'get',
    path: '/api/v1/admin/traces',
    operationId: 'adminListTraces',
    summary: 'Metadata of every turn',
    tag: 'admin',
    access: 'admin',
    query: adminQueryObject,
    response: { status: 200, name: 'AdminTraceList', schema: traceList },
    errors: [400, 503],
  },
  {
    method: 'get',
    path: '/api/v1/admin/traces/audit',
    operationId: 'adminTraceAudit',
    summary: 'Who read which trace content, when',
    tag: 'admin',
    access: 'admin',
    query: auditQuery,
    response: { status: 200, name: 'TraceAudit', schema: auditAnswer },
    errors: [400, 503],
  },
  {
    method: 'get',
    path: '/api/v1/admin/traces/{id}/content',
    operationId: 'adminReadTrace',
    summary: "A turn's content (writes an audit entry first)",
    tag: 'admin',
    access: 'admin',
    params: runParams,
    response: { status: 200, name: 'AdminTrace', schema: traceAnswer },
    errors: [404, 503],
  },
];

function parseQuery<T>(req: Request, schema: z.ZodType<T>): T {
  const fields: Record<string, string> = {};
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(req.query)) {
    if (Array.isArray(value)) fields[key] = 'Give this parameter once';
    else raw[key] = value;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) collectFieldErrors(parsed.error.issues, fields, { root: 'query', unknownKey: 'Unknown parameter' });
  if (!parsed.success || Object.keys(fields).length > 0) {
    throw new HttpError(400, 'invalid_query', `Invalid query: ${Object.keys(fields).join(', ')}`, fields);
  }
  return parsed.data;
}

function runIdOf(req: Request): string {
  const id = req.params['id'];
  if (typeof id !== 'string' || !RUN_ID.test(id)) throw new HttpError(404, 'not_found', 'No such trace');
  return id;
}

function page(f: { limit?: number; offset?: number }): { limit: number; offset: number } {
  return { limit: f.limit ?? 25, offset: f.offset ?? 0 };
}

/**
 * Traces ("Activity"): every user sees and deletes only their own runs. Admins
 * list metadata of all runs; reading a run's content writes an audit entry first (S20).
 */
export function tracesApiRoutes(deps: TracesApiDeps): Router {
  const router = Router();
  const user = [apiHeaders(), csrfGuard(), requireUser()];
  const admin = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];

  router.get('/api/v1/traces', ...user, async (req, res) => {
    const { botMentionName, ...q } = parseQuery(req, userQuery);
    const filters: TraceFilters = { ...q, ...page(q) };
    if (filters.botMention === undefined && botMentionName !== undefined) filters.botMention = botMentionName;
    const { traces, total } = await deps.traces.listForUser(requireActingUser(req).uid, filters);
    res.json({ traces, total, ...page(q) });
  });

  router.get('/api/v1/traces/:id', ...user, async (req, res) => {
    const found = await deps.traces.getForUser(requireActingUser(req).uid, runIdOf(req));
    // Someone else's run looks exactly like a missing one.
    if (!found) throw new HttpError(404, 'not_found', 'No such trace');
    res.json({ trace: found.run, events: found.events });
  });

  router.delete('/api/v1/traces/:id', ...user, async (req, res) => {
    const deleted = await deps.traces.deleteForUser(requireActingUser(req).uid, runIdOf(req));
    if (!deleted) throw new HttpError(404, 'not_found', 'No such trace');
    res.json({ deleted: true });
  });

  router.delete('/api/v1/traces', ...user, async (req, res) => {
    const deleted = await deps.traces.clearForUser(requireActingUser(req).uid);
    res.json({ deleted });
  });

  router.get('/api/v1/admin/traces', ...admin, async (req, res) => {
    const { botMentionName, ...q } = parseQuery(req, adminQuery);
    const filters: AdminTraceFilters = { ...q, ...page(q) };
    if (filters.botMention === undefined && botMentionName !== undefined) filters.botMention = botMentionName;
    const { traces, total } = await deps.traces.listAll(filters);
    res.json({ traces, total, ...page(q) });
  });

  router.get('/api/v1/admin/traces/audit', ...admin, async (req, res) => {
    const q = parseQuery(req, auditQuery);
    const entries = await deps.traces.auditLog({ ...q, limit: q.limit ?? 100, offset: q.offset ?? 0 });
    res.json({ entries, limit: q.limit ?? 100, offset: q.offset ?? 0 });
  });

  router.get('/api/v1/admin/traces/:id/content', ...admin, async (req, res) => {
    const adminUid = requireActingUser(req).uid;
    const runId = runIdOf(req);
    const found = await deps.traces.readContentAsAdmin(adminUid, runId);
    if (!found) throw new HttpError(404, 'not_found', 'No such trace');
    deps.logger.info({ admin: adminUid, run: runId, owner: found.run.uid }, 'admin read trace content');
    res.json({ trace: found.run, events: found.events });
  });

  return router;
}
