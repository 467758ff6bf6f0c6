import express, { type ErrorRequestHandler, type Express, type Router } from 'express';
import type { Logger } from '../log/logger.ts';
import { runWithRequestId } from '../nextcloud/request-context.ts';
import { HttpError } from './http-error.ts';
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

/**
 * The HTTP server AppAPI deploys and proxies: request id, AppAPI auth on every
 * path but /heartbeat, then the routers, then one JSON error handler.
 */
export function createApp(options: AppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use((req, _res, next) => {
    const id = req.headers['aa-request-id'];
    runWithRequestId(typeof id === 'string' ? id : undefined, next);
  });
  app.use(appApiAuth({ appId: options.appId, appSecret: options.appSecret, logger: options.logger, openPaths: options.openPaths ?? ['/heartbeat'] }));
  for (const router of options.routers) app.use(router);
  app.use((_req, res) => {
    res.status(404).json({ error: { code: 'not_found', message: 'Not found' } });
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    if (err instanceof HttpError) {
      res.status(err.status).json({ error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } });
      return;
    }
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') {
      // Behind AppAPI's proxy the caller may never see this answer (Talk gets 200): the log is the only trace.
      options.logger.warn({ method: req.method, path: req.path, length: req.headers['content-length'] ?? null }, 'request body too large; refused');
      res.status(413).json({ error: { code: 'too_large', message: 'Request body is too large' } });
      return;
    }
    if (type === 'entity.parse.failed' || type === 'encoding.unsupported' || type === 'charset.unsupported') {
      res.status(400).json({ error: { code: 'bad_json', message: 'Request body is not valid JSON' } });
      return;
    }
    options.logger.error({ err, method: req.method, path: req.path }, 'request failed');
    if (res.headersSent) return;
    res.status(500).json({ error: { code: 'internal', message: 'Internal error' } });
  };
  app.use(onError);
  return app;
}
