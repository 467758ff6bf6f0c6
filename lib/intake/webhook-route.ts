import { Router, type Request, type Response } from 'express';
import type { Logger } from '../log/logger.ts';
import { findBotMentions } from '../talk/mention-detector.ts';
import { parseResetCommand } from '../router/reset-command.ts';
import { systemOnly } from '../server/middleware/access.ts';
import type { Inbox, DeliveredEvent, HandedRow } from './inbox.ts';
import { parseWebhookMessage } from '../talk/message-parser.ts';
import type { RoutingIndex } from '../talk/routing-index.ts';
import { MAX_WEBHOOK_BODY_BYTES, parseTalkWebhook } from '../talk/webhook-schema.ts';
import { jsonBody } from '../server/json-body.ts';

export interface WebhookDeps {
  inbox: Inbox;
  index: RoutingIndex;
  logger: Logger;
  /** Extra relevance checks (e.g. a reply to a pending confirmation). */
  alsoRelevant?: (roomToken: string, actorId: string, rawText: string) => boolean;
  /** A reaction (`Like`) on a message: only a hint to read a pending confirmation's reactions soon (issue 23). */
  onReaction?: (roomToken: string, messageId: string) => void;
  /** Wakes the worker after an insert, handing it the row where the inbox knows it. */
  notify: (row?: HandedRow) => void;
  maxBodyBytes?: number;
  /** Told how long each delivery took here, from the route to the last byte of the answer (runtime status). */
  observe?: (ms: number) => void;
}

// The three answers Talk gets for a well-authenticated delivery, written as they are: every ack
// otherwise paid for express's res.json (stringify, ETag) on a constant body.
const ANSWERS = {
  accepted: Buffer.from('{"status":"accepted"}'),
  duplicate: Buffer.from('{"status":"duplicate"}'),
  ignored: Buffer.from('{"status":"ignored"}'),
} as const;

function answer(res: Response, status: keyof typeof ANSWERS): void {
  const body = ANSWERS[status];
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length }).end(body);
}

/** System events that change what we keep, even without a bot being addressed. */
const KEPT_SYSTEM_EVENTS = new Set(['message_deleted']);

/**
 * Talk deliveries through AppAPI: authenticate (system-only, no proxy
 * markers), bound the body, validate, route cheaply, write to the durable
 * inbox, and only then answer 200. Talk must never see an error for a
 * well-authenticated delivery, so ignored events also get 200.
 */
export function talkWebhookRoutes(paths: string[], deps: WebhookDeps): Router {
  const router = Router();
  const json = jsonBody({ limit: deps.maxBodyBytes ?? MAX_WEBHOOK_BODY_BYTES, type: () => true });
  const observe = deps.observe;
  const timed = (_req: Request, res: Response, next: () => void): void => {
    if (observe) {
      const t0 = performance.now();
      res.once('finish', () => observe(performance.now() - t0));
    }
    next();
  };
  for (const path of paths) {
    router.post(`/${path}`, timed, systemOnly(deps.logger), json, (req: Request, res: Response, next) => {
      accept(path, req, res, deps).catch(next);
    });
  }
  return router;
}

async function accept(route: string, req: Request, res: Response, deps: WebhookDeps): Promise<void> {
  const parsed = parseTalkWebhook(req.body);
  if (!parsed.ok) {
    if (parsed.reason === 'unknown-type') {
      deps.logger.info({ route, detail: parsed.detail }, 'Talk event of unknown type ignored');
      answer(res, 'ignored');
      return;
    }
    deps.logger.warn({ route, detail: parsed.detail }, 'malformed Talk delivery refused');
    res.status(400).json({ error: { code: 'invalid_event', message: parsed.detail } });
    return;
  }
  // Its actor is the reacted message's author, not who reacted (test/fixtures/nextcloud33/talk-21-reactions.json):
  // nothing is stored; the processing side reads the reactions as the requester.
  if (parsed.event.type === 'Like') {
    deps.onReaction?.(parsed.event.target.id, parsed.event.object.id);
    answer(res, 'ignored');
    return;
  }
  const message = parseWebhookMessage(parsed.event);
  if (!message) {
    answer(res, 'ignored');
    return;
  }
  const relevant =
    message.kind === 'system'
      ? message.systemName !== null && KEPT_SYSTEM_EVENTS.has(message.systemName) && deps.index.roomHasState(message.roomToken)
      : message.actor.kind !== 'bot' &&
        (findBotMentions(message.rawText, deps.index.mentions).length > 0 ||
          parseResetCommand(message.rawText) !== null ||
          deps.index.roomIsActive(message.roomToken) ||
          (deps.alsoRelevant?.(message.roomToken, message.actor.rawId, message.rawText) ?? false));
  if (!relevant) {
    answer(res, 'ignored');
    return;
  }
  if (!deps.inbox.isBeyondNewest(message.roomToken, message.messageId) && (await deps.inbox.isHandled(message.roomToken, message.messageId))) {
    answer(res, 'duplicate');
    return;
  }
  const payload: DeliveredEvent = {
    type: parsed.event.type,
    systemName: message.systemName,
    actorId: message.actor.rawId,
    roomToken: message.roomToken,
    messageId: message.messageId,
  };
  const added = await deps.inbox.accept({
    roomToken: message.roomToken,
    messageId: message.messageId,
    actorId: message.actor.rawId,
    route,
    kind: message.kind,
    payload,
  });
  if (added === false) {
    answer(res, 'duplicate');
    return;
  }
  answer(res, 'accepted');
  deps.notify(added ?? undefined);
}
