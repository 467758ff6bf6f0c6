// Collectives 2.x (2.16.3, the Nextcloud 29 line) as capture 91 recorded it: no OCS API; its
// `/index.php/apps/collectives/_api` controllers are CSRF-protected web routes. AppAPI auth alone
// gets 412 "CSRF check failed"; with the session cookie from `/index.php/csrftoken` and the
// `requesttoken` header they answer `{"data": …}`. Routes and parameters follow the 2.x
// appinfo/routes.php and PageController of nextcloud/collectives (page#index/get/create/touch/
// moveOrCopy/trash under `_api/{collectiveId}/_pages…`); the controller acts as the session's user.
// Controller errors come from the 2.x ErrorHelper: `new DataResponse($e->getMessage(), status)`, a
// bare JSON string such as "Not allowed to edit collective"; the CSRF and login middleware answer
// `{message}`. With `sessions.ocsApiRequestPassesCsrf` (NC 30+, server#46760) the OCS-APIRequest
// header alone passes the CSRF check and the controller acts as the AppAPI user.
import { CollectivesFailure, type FakeCollectivesStore } from './collectives-store.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeWebSessions } from './web-sessions.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const NOT_FOUND_PAGE = '<!DOCTYPE html><html><head><title>Nextcloud</title></head><body><h2>Page not found</h2></body></html>';
const API = /^\/index\.php\/apps\/collectives\/_api(?:\/(.*))?$/;

function jsonReply(status: number, value: unknown): FakeReply {
  return { status, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(value) };
}

function htmlReply(status: number, body: string): FakeReply {
  return { status, headers: { 'content-type': 'text/html; charset=UTF-8' }, body };
}

function intParam(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return null;
}

export function handlesCollectivesWeb(path: string): boolean {
  return API.test(path);
}

export function handleCollectivesV2(
  store: FakeCollectivesStore,
  sessions: FakeWebSessions,
  method: string,
  path: string,
  headers: Record<string, string>,
  rawBody: string,
  user: string | null,
): FakeReply {
  if (store.generation === null) return htmlReply(404, NOT_FOUND_PAGE);
  // 3.x dropped `_api`; its Vue catch-all route (`/{path}`, GET) renders the app page instead.
  if (store.generation === 3)
    return method === 'GET' ? htmlReply(200, '<!DOCTYPE html><html><body id="body-user">collectives</body></html>') : htmlReply(404, NOT_FOUND_PAGE);
  if (user === null || user === '') return jsonReply(401, { message: 'Current user is not logged in' });
  const session = sessions.check(headers['cookie'], user);
  const token = headers['requesttoken'];
  const own = session.kind === 'own' && token !== undefined && token === session.session.token ? session.session : null;
  if (own === null && !sessions.passesCsrfByHeader(headers)) return jsonReply(412, { message: 'CSRF check failed' });
  const withCookies = (reply: FakeReply): FakeReply => (own ? { ...reply, setCookies: sessions.setCookies(own) } : reply);

  const rest = API.exec(path)?.[1] ?? '';
  let body: Record<string, unknown> = {};
  if (rawBody !== '' && (headers['content-type'] ?? '').includes('application/json')) {
    try {
      const parsed: unknown = JSON.parse(rawBody);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // Nextcloud ignores a body it cannot decode.
    }
  }
  const uid = own?.uid ?? user;
  const route = (name: string): void => store.record(2, uid, method, name);
  try {
    let m: RegExpExecArray | null;
    if (rest === '' && method === 'GET') {
      route('collective#index');
      return withCookies(jsonReply(200, { data: store.collectivesOf(uid).map((c) => store.collectiveInfo(c, uid)) }));
    }
    if (rest === '' && method === 'POST') {
      route('collective#create');
      const name = typeof body['name'] === 'string' ? body['name'] : '';
      return withCookies(jsonReply(200, { data: store.collectiveInfo(store.createAs(uid, name), uid), message: '' }));
    }
    if ((m = /^(\d+)\/_pages$/.exec(rest)) && method === 'GET') {
      route('page#index');
      return withCookies(jsonReply(200, { data: store.pages(uid, Number(m[1])) }));
    }
    if ((m = /^(\d+)\/_pages\/(\d+)\/touch$/.exec(rest)) && method === 'GET') {
      route('page#touch');
      return withCookies(jsonReply(200, { data: store.touch(uid, Number(m[1]), Number(m[2])) }));
    }
    if ((m = /^(\d+)\/_pages\/(\d+)$/.exec(rest))) {
      const cid = Number(m[1]);
      const id = Number(m[2]);
      if (method === 'GET') {
        route('page#get');
        return withCookies(jsonReply(200, { data: store.page(uid, cid, id) }));
      }
      if (method === 'POST') {
        route('page#create');
        const title = typeof body['title'] === 'string' ? body['title'] : '';
        return withCookies(jsonReply(200, { data: store.createPage(uid, cid, id, title) }));
      }
      if (method === 'PUT') {
        route('page#moveOrCopy');
        if (body['copy'] === true) return withCookies(jsonReply(422, 'copy is not supported by this fake'));
        const title = typeof body['title'] === 'string' ? body['title'] : null;
        return withCookies(jsonReply(200, { data: store.move(uid, cid, id, intParam(body['parentId']), title, intParam(body['index']) ?? 0) }));
      }
      if (method === 'DELETE') {
        route('page#trash');
        return withCookies(jsonReply(200, { data: store.trash(uid, cid, id) }));
      }
    }
    return htmlReply(404, NOT_FOUND_PAGE);
  } catch (err) {
    if (err instanceof CollectivesFailure) return withCookies(jsonReply(err.status, err.message));
    throw err;
  }
}
