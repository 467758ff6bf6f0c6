import express, { type ErrorRequestHandler, type Express, type Router } from 'express';
import type { Logger } from '../log/logger.ts';
import { runWithRequestId } from '../nextcloud/request-context.ts';
import { errorAnswer } from './error-answer.ts';
import { appApiAuth } from './middleware/appapi-auth.ts';

export interface AppOptions {
  appId: string;
  appSecret: string;
  logger: Logger;
  /** Mounted in order after authentication. */
  routers: Router[];
  /** Paths reachable without AppAPI headers (only /heartbeat). */
  openPaths?: string[];
}

/** JSON answers must not be sniffed or cached by AppAPI's proxy (S22), the error answers included. */
function noSniffNoStore(res: express.Response): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'no-store');
}

/** How long a client whose body we refused unread may go on sending it, so that it can read our answer. */
const LINGER_MS = 1_000;

/**
 * An answer written before the request's body was read: closing at once would reset the connection under
 * a client still sending, and it would never see the answer; keeping it open would let a declared
 * 99999999999 bytes hold it. Node reads and drops the rest; whatever is not in after LINGER_MS is cut off.
 */
function lingerThenClose(req: express.Request, res: express.Response): void {
  res.once('finish', () => {
    if (req.complete) return;
    const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
    timer.unref();
    req.once('end', () => clearTimeout(timer));
    req.once('close', () => clearTimeout(timer));
  });
}

/**
 * The HTTP server AppAPI deploys and proxies: request id, AppAPI auth on every
 * path but /heartbeat, then the routers, then one JSON error handler.
 */
export function createApp(options: AppOptions): Express {
  const { logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use((req, res, next) => {
    // Every /api answer, also the 401 and 404 that no router writes.
    if (req.path.startsWith('/api/')) noSniffNoStore(res);
    const id = req.headers['aa-request-id'];
    runWithRequestId(typeof id === 'string' ? id : undefined, next);
  });
  app.use(appApiAuth({ appId: options.appId, appSecret: options.appSecret, logger, openPaths: options.openPaths ?? ['/heartbeat'] }));
  for (const router of options.routers) app.use(router);
  app.use((_req, res) => {
    noSniffNoStore(res);
    res.status(404).json({ error: { code: 'not_found', message: 'Not found' } });
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    const out = errorAnswer(err, req);
    if (out.kind === 'aborted') {
      logger.debug({ method: req.method, path: req.path }, 'client closed the request before it was read');
      if (!res.headersSent) res.destroy();
      return;
    }
    const where = { method: req.method, path: req.path };
    if (out.log === 'error') logger.error({ err, ...where }, 'request failed');
    else if (out.log === 'warn' && out.status === 413)
      logger.warn({ ...where, length: req.headers['content-length'] ?? null }, 'request body too large; refused');
    else if (out.log === 'warn') logger.warn({ err, ...where, status: out.status }, 'upstream failed; answered with an error');
    if (res.headersSent) return;
    noSniffNoStore(res);
    if (!req.complete) lingerThenClose(req, res);
    else if (out.close) res.setHeader('Connection', 'close');
    res.status(out.status).json({ error: { code: out.code, message: out.message, ...(out.details ? { details: out.details } : {}) } });
  };
  app.use(onError);
  return app;
}
