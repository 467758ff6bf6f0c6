// Deliveries to the bots' own Talk identities (`/talk_bot_<bot id>`), with the same intake as `/talk_bot`.
import { Router, type RequestHandler } from 'express';
import { DEDICATED_ROUTE_PATTERN } from '../bots/dedicated-talk-bots.ts';
import type { Logger } from '../log/logger.ts';
import { systemOnly } from '../server/middleware/access.ts';
import type { RoutingIndex } from '../talk/routing-index.ts';
import { talkWebhookRoutes, type WebhookDeps } from './webhook-route.ts';

/**
 * One intake router per registered identity, built from the shared intake
 * (system-only, no proxy markers, bounded body, cheap routing, durable inbox)
 * but with the index as that identity sees it: only its own bot's mention and
 * rooms (S14, S19). A route no registered bot owns answers 404 after the
 * system-only check, so it tells nobody anything.
 */
export function dedicatedWebhookRoutes(deps: WebhookDeps & { logger: Logger; index: RoutingIndex }): Router {
  const router = Router();
  const routers = new Map<string, Router>();
  const refuse = systemOnly(deps.logger);
  const path = new RegExp(`^/${DEDICATED_ROUTE_PATTERN.source.slice(1)}`);
  const handler: RequestHandler = (req, res, next) => {
    const route = req.path.slice(1);
    if (deps.index.identity(route) === null) {
      refuse(req, res, () => {
        res.status(404).json({ error: { code: 'not_found', message: 'No such Talk bot' } });
      });
      return;
    }
    let intake = routers.get(route);
    if (!intake) {
      intake = talkWebhookRoutes([route], { ...deps, index: deps.index.forIdentity(route) });
      routers.set(route, intake);
      // Identities come and go; keep only routers of current ones.
      for (const known of routers.keys()) if (deps.index.identity(known) === null) routers.delete(known);
    }
    intake(req, res, next);
  };
  router.post(path, handler);
  return router;
}
