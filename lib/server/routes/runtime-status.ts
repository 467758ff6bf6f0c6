import { Router } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import { apiHeaders, requireAdmin } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';

const threadMetrics = z.object({
  loopLagP99Ms: z.number(),
  loopLagMaxMs: z.number(),
  webhookP99Ms: z
    .number()
    .nullable()
    .describe('Talk deliveries handled by this thread: p99 of the time from the route to the answer (the worst window); null without deliveries'),
  rssMb: z.number(),
  peakRssMb: z.number(),
  heapUsedMb: z.number(),
  cpuMs: z.number().describe('CPU time this thread has used since it started (user and system), in milliseconds'),
  uptimeS: z.number(),
});

export const RUNTIME_STATUS_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/api/v1/admin/runtime',
    operationId: 'getRuntimeStatus',
    summary: 'Event-loop lag and memory of the HTTP and processing threads, and the Talk inbox backlog',
    tag: 'admin',
    access: 'admin',
    query: z.object({ seconds: z.number().int().min(5).max(600).default(60).optional() }),
    response: {
      status: 200,
      name: 'RuntimeStatus',
      schema: z.object({ http: threadMetrics, processing: threadMetrics.nullable(), inboxBacklog: z.number().int() }),
    },
    errors: [400, 503],
  },
];

/** GET /api/v1/admin/runtime: event-loop lag and memory of the HTTP and processing threads, and the Talk inbox backlog. */
export function runtimeStatusRoutes(deps: {
  snapshot: (seconds: number) => Promise<unknown>;
  adminCheck: AdminCheck;
  logger: Logger;
  inboxBacklog: () => Promise<number>;
}): Router {
  const router = Router();
  const query = z.object({ seconds: z.coerce.number().int().min(5).max(600).default(60) });
  router.get('/api/v1/admin/runtime', apiHeaders(), requireAdmin(deps.adminCheck, deps.logger), async (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      res.status(400).json({ error: { code: 'invalid', message: 'seconds must be a whole number between 5 and 600' } });
      return;
    }
    res.json({ ...((await deps.snapshot(parsed.data.seconds)) as object), inboxBacklog: await deps.inboxBacklog() });
  });
  return router;
}
