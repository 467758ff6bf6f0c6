import { Router } from 'express';
import type { EnabledHandler } from '../../appapi/enabled-handler.ts';
import type { InitRunner } from '../../appapi/init-runner.ts';
import type { Logger } from '../../log/logger.ts';
import { systemOnly } from '../middleware/access.ts';

/** AppAPI's lifecycle calls (contract §1.4). /heartbeat is open; the others are system-only. */
export function lifecycleRoutes(deps: { init: InitRunner; enabled: EnabledHandler; logger: Logger }): Router {
  const router = Router();
  router.get('/heartbeat', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.post('/init', systemOnly(deps.logger), (_req, res) => {
    void deps.init.start();
    res.json({});
  });
  router.put('/enabled', systemOnly(deps.logger), async (req, res) => {
    const raw = String(req.query.enabled ?? '');
    if (raw !== '0' && raw !== '1') {
      res.status(400).json({ error: 'enabled must be 0 or 1' });
      return;
    }
    const error = await deps.enabled.setEnabled(raw === '1');
    res.json({ error });
  });
  return router;
}
