import type { Request } from 'express';
import type { ActingUser } from '../nextcloud/identity.ts';

/** What the AppAPI middleware learned about a request; kept off `req` properties a handler could overwrite. */
export interface RequestAuth {
  uid: string;
  user: ActingUser | null;
  /** The request came through AppAPI's browser proxy (it adds X-Origin-IP). */
  viaProxy: boolean;
  language: string | null;
}

const auths = new WeakMap<Request, RequestAuth>();

export function setRequestAuth(req: Request, auth: RequestAuth): void {
  auths.set(req, auth);
}

export function getRequestAuth(req: Request): RequestAuth {
  const auth = auths.get(req);
  if (!auth) throw new Error('request was not authenticated');
  return auth;
}

/** The verified user of a USER/ADMIN route (the middleware already refused empty users). */
export function requireActingUser(req: Request): ActingUser {
  const user = getRequestAuth(req).user;
  if (!user) throw new Error('route needs a user');
  return user;
}
