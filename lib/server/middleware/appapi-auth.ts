import type { RequestHandler } from 'express';
import { verifyAppApiHeaders } from '../../appapi/auth-header.ts';
import type { Logger } from '../../log/logger.ts';
import { setRequestAuth } from '../request-auth.ts';

const MESSAGES: Record<string, string> = {
  'missing-headers': 'AppAPI authentication headers are missing',
  'wrong-app-id': 'EX-APP-ID does not match this app',
  'empty-version': 'EX-APP-VERSION is empty',
  malformed: 'AUTHORIZATION-APP-API is malformed',
  'wrong-secret': 'AppAPI authentication failed',
};

/**
 * Every route except the open ones needs AppAPI's headers. The header value is
 * never logged; the browser's Authorization and Cookie headers the proxy
 * forwards are never read.
 */
export function appApiAuth(options: { appId: string; appSecret: string; logger: Logger; openPaths: string[] }): RequestHandler {
  const open = new Set(options.openPaths);
  return (req, res, next) => {
    if (open.has(req.path)) return next();
    const result = verifyAppApiHeaders(req.headers, options.appId, options.appSecret);
    if (!result.ok) {
      options.logger.warn({ reason: result.reason, method: req.method, path: req.path, ip: req.socket.remoteAddress }, 'AppAPI authentication refused');
      res.status(401).json({ error: { code: 'unauthorized', message: MESSAGES[result.reason] ?? 'unauthorized' } });
      return;
    }
    const language = typeof req.headers['accept-language'] === 'string' ? req.headers['accept-language'].split(',')[0]?.trim() || null : null;
    setRequestAuth(req, { uid: result.uid, user: result.user, viaProxy: req.headers['x-origin-ip'] !== undefined, language });
    next();
  };
}
