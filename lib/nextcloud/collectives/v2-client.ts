// Collectives 2.x (the Nextcloud 29 line, 2.16.3 in test/fixtures/nextcloud29/91-collectives.json): no OCS API. Its `_api`
// controllers are web routes behind Nextcloud's CSRF check, so every call goes through the
// tool call's own CookieSession (session cookie + request token) and the answers are
// `{"data": …}`. Routes: nextcloud/collectives appinfo/routes.php of the 2.x line
// (collective#index `GET /_api`, page#index/get/create/touch/moveOrCopy/trash under
// `/_api/{collectiveId}/_pages…`). Those controllers act as the *session's* user
// (PageController::getUserId() reads IUserSession), hence confirmActingUser() before writes.
import type { CookieSession } from '../cookie-session.ts';
import { errorForStatus } from '../errors.ts';
import { moveBody, parseCollective, parseList, parsePage, type CollectiveInfo, type CollectivesApi, type MoveTarget, type PageInfo } from './model.ts';

const API = '/index.php/apps/collectives/_api';
const ERROR_STATUSES = Array.from({ length: 200 }, (_, i) => 400 + i);

/**
 * The short reason of an error answer. The 2.x ErrorHelper answers a bare JSON string
 * (`"Not allowed to edit collective"`); Nextcloud's middleware (CSRF, login) answers `{message}`.
 */
export function webErrorMessage(json: unknown, status: number): string {
  const raw = typeof json === 'string' ? json : (json as { message?: unknown } | null)?.message;
  const text = typeof raw === 'string' ? raw.replace(/\p{Cc}+/gu, ' ').trim() : '';
  return text === '' ? `HTTP ${status}` : text.slice(0, 200);
}

export class WebCollectivesApi implements CollectivesApi {
  readonly generation = 2 as const;
  readonly #web: CookieSession;

  constructor(web: CookieSession) {
    this.#web = web;
  }

  async #data(method: string, path: string, params: Record<string, number>, body?: unknown): Promise<unknown> {
    const res = await this.#web.json(method, `${API}${path}`, { params, allowStatuses: ERROR_STATUSES, ...(body !== undefined ? { body } : {}) });
    if (res.status >= 400) throw errorForStatus(`${method} ${API}${path}`, res.status, webErrorMessage(res.json, res.status));
    return (res.json as { data?: unknown } | null)?.data;
  }

  async listCollectives(): Promise<CollectiveInfo[]> {
    const op = 'GET collectives';
    return parseList(await this.#data('GET', '', {}), op, (x) => parseCollective(x, op));
  }

  async listPages(collectiveId: number): Promise<PageInfo[]> {
    const op = 'GET collective pages';
    return parseList(await this.#data('GET', '/{collectiveId}/_pages', { collectiveId }), op, (x) => parsePage(x, collectiveId, op));
  }

  async getPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return parsePage(await this.#data('GET', '/{collectiveId}/_pages/{pageId}', { collectiveId, pageId }), collectiveId, 'GET collective page');
  }

  async createPage(collectiveId: number, parentId: number, title: string): Promise<PageInfo> {
    return parsePage(
      await this.#data('POST', '/{collectiveId}/_pages/{parentId}', { collectiveId, parentId }, { title }),
      collectiveId,
      'POST collective page',
    );
  }

  async touchPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return parsePage(await this.#data('GET', '/{collectiveId}/_pages/{pageId}/touch', { collectiveId, pageId }), collectiveId, 'touch collective page');
  }

  async movePage(collectiveId: number, pageId: number, to: MoveTarget): Promise<PageInfo> {
    return parsePage(await this.#data('PUT', '/{collectiveId}/_pages/{pageId}', { collectiveId, pageId }, moveBody(to)), collectiveId, 'PUT collective page');
  }

  async trashPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return parsePage(await this.#data('DELETE', '/{collectiveId}/_pages/{pageId}', { collectiveId, pageId }), collectiveId, 'DELETE collective page');
  }

  confirmActingUser(): Promise<void> {
    return this.#web.confirmUser();
  }
}
