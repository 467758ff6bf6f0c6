import { Router } from 'express';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import { apiHeaders, requireUser } from '../middleware/access.ts';
import { getRequestAuth, requireActingUser } from '../request-auth.ts';

/** GET /api/v1/me: who the app page is talking to, so it can show or hide administration. */
export function sessionInfoRoutes(deps: { adminCheck: AdminCheck; version: string }): Router {
  const router = Router();
  router.get('/api/v1/me', apiHeaders(), requireUser(), async (req, res) => {
    const user = requireActingUser(req);
    const admin = await deps.adminCheck.isAdmin(user).catch(() => false);
    res.json({ uid: user.uid, admin, version: deps.version, language: getRequestAuth(req).language });
  });
  return router;
}
