import type { Request, RequestHandler } from 'express';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import { getRequestAuth } from '../request-auth.ts';

/** Markers that only a browser request through AppAPI's proxy carries [87]; AppAPI's own calls [12, 13, 40] have none. */
export function hasProxyMarkers(req: Request): boolean {
  return req.headers['x-origin-ip'] !== undefined || req.headers.authorization !== undefined || req.headers.cookie !== undefined;
}

/**
 * Lifecycle and Talk delivery routes: AppAPI calls them with the empty user.
 * A user, or a request that came through the browser proxy (an anonymous
 * visitor of a PUBLIC route gets the same empty-user header), is refused.
 */
export function systemOnly(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const auth = getRequestAuth(req);
    if (auth.uid !== '' || hasProxyMarkers(req)) {
      logger.warn({ path: req.path, withUser: auth.uid !== '', proxied: hasProxyMarkers(req) }, 'system route refused');
      res.status(403).json({ error: { code: 'forbidden', message: 'This endpoint is reserved for AppAPI' } });
      return;
    }
    next();
  };
}

/**
 * Deliveries AppAPI makes itself on behalf of another app (webhook_listeners' background job): they carry
 * the uid of whoever caused the event (test/fixtures/nextcloud33/webhook-listeners.json), so any verified
 * uid passes, but a request through the browser proxy is refused (S3). Such a route takes no user from it.
 */
export function appApiDirect(logger: Logger): RequestHandler {
  return (req, res, next) => {
    if (hasProxyMarkers(req)) {
      logger.warn({ path: req.path }, 'AppAPI delivery route refused a proxied request');
      res.status(403).json({ error: { code: 'forbidden', message: 'This endpoint is reserved for AppAPI' } });
      return;
    }
    next();
  };
}

export function requireUser(): RequestHandler {
  return (req, res, next) => {
    if (!getRequestAuth(req).user) {
      res.status(401).json({ error: { code: 'user_required', message: 'This endpoint needs a logged-in Nextcloud user' } });
      return;
    }
    next();
  };
}

export function requireAdmin(adminCheck: AdminCheck, logger: Logger): RequestHandler {
  return async (req, res, next) => {
    const user = getRequestAuth(req).user;
    if (!user) {
      res.status(401).json({ error: { code: 'user_required', message: 'This endpoint needs a logged-in Nextcloud user' } });
      return;
    }
    let admin: boolean;
    try {
      admin = await adminCheck.isAdmin(user);
    } catch (err) {
      logger.warn({ err }, 'admin check failed');
      res.status(503).json({ error: { code: 'admin_check_failed', message: 'Could not confirm administrator rights with Nextcloud' } });
      return;
    }
    if (!admin) {
      res.status(403).json({ error: { code: 'admin_required', message: 'Only Nextcloud administrators may use this endpoint' } });
      return;
    }
    next();
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * AppAPI's proxy does no CSRF check, so browser requests that change state
 * must carry a header a cross-site form cannot set: Nextcloud's `requesttoken`
 * (sent by @nextcloud/axios) or `OCS-APIRequest: true`.
 */
export function csrfGuard(): RequestHandler {
  return (req, res, next) => {
    if (SAFE_METHODS.has(req.method)) return next();
    const token = req.headers.requesttoken;
    const ocs = req.headers['ocs-apirequest'];
    if ((typeof token === 'string' && token.trim() !== '') || (typeof ocs === 'string' && ocs.toLowerCase() === 'true')) return next();
    res.status(403).json({ error: { code: 'csrf', message: 'This request needs the requesttoken or OCS-APIRequest header' } });
  };
}

/** JSON answers must not be sniffed or cached by AppAPI's proxy (it caches for an hour otherwise, S22). */
export function apiHeaders(): RequestHandler {
  return (_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    next();
  };
}
