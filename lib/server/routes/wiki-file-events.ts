import { Router } from 'express';
import { z } from 'zod';
import type { Logger } from '../../log/logger.ts';
import { WIKI_FILE_EVENTS_PATH } from '../../wiki/wiki-file-events.ts';
import { jsonBody } from '../json-body.ts';
import { appApiDirect } from '../middleware/access.ts';

/** Captured deliveries are about 200 bytes (test/fixtures/nextcloud33/webhook-listeners.json). */
const MAX_BODY_BYTES = 16 * 1024;

// Only the shape is checked: nothing from the event is used (S16), it only wakes the wiki's scan.
const FileEvent = z.object({ event: z.object({ class: z.string().startsWith('OCP\\Files\\Events\\Node\\') }) });

/**
 * webhook_listeners' file events (NC 30+), delivered by AppAPI with the uid of whoever changed the file
 * and no Content-Type. The AppAPI headers were verified by the app's middleware (a forged or missing
 * header gets 401 before this route); the uid is ignored.
 */
export function wikiFileEventRoutes(deps: { onFileEvent: () => void; logger: Logger }): Router {
  const router = Router();
  const json = jsonBody({ limit: MAX_BODY_BYTES, type: () => true });
  router.post(WIKI_FILE_EVENTS_PATH, appApiDirect(deps.logger), json, (req, res) => {
    const parsed = FileEvent.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ error: { code: 'invalid_event', message: 'Expected a webhook_listeners file event' } });
      return;
    }
    deps.onFileEvent();
    res.json({ status: 'accepted' });
  });
  return router;
}
