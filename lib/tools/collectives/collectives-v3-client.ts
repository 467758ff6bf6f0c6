// Collectives 3.x (Nextcloud 30+): the OCS API, with AppAPI auth alone (no cookies, no token).
// Routes from nextcloud/collectives appinfo/routes.php ('ocs', apiVersion 1.0):
// collective#index `GET /api/v1.0/collectives`; page#index/get/create/touch/moveOrCopy/trash under
// `/api/v1.0/collectives/{collectiveId}/pages…`. Answers from lib/Controller/PageController.php:
// `{collectives: […]}`, `{pages: […]}`, `{page: …}`.
import type { NextcloudSession } from '../../nextcloud/client.ts';
import { parseCollective, parseList, parsePage, type CollectiveInfo, type CollectivesApi, type MoveTarget, type PageInfo } from './collectives-api.ts';

const API = '/ocs/v2.php/apps/collectives/api/v1.0/collectives';

export class OcsCollectivesApi implements CollectivesApi {
  readonly generation = 3 as const;
  readonly #session: NextcloudSession;

  constructor(session: NextcloudSession) {
    this.#session = session;
  }

  async #page(method: string, path: string, params: Record<string, number>, collectiveId: number, body?: unknown): Promise<PageInfo> {
    const data = await this.#session.ocs<{ page?: unknown }>(method, `${API}${path}`, { params, ...(body !== undefined ? { body } : {}) });
    return parsePage(data?.page, collectiveId, `${method} collective page`);
  }

  async listCollectives(): Promise<CollectiveInfo[]> {
    const data = await this.#session.ocs<{ collectives?: unknown }>('GET', API);
    return parseList(data?.collectives, 'GET collectives', (x) => parseCollective(x, 'GET collectives'));
  }

  async listPages(collectiveId: number): Promise<PageInfo[]> {
    const data = await this.#session.ocs<{ pages?: unknown }>('GET', `${API}/{collectiveId}/pages`, { params: { collectiveId } });
    return parseList(data?.pages, 'GET collective pages', (x) => parsePage(x, collectiveId, 'GET collective pages'));
  }

  getPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return this.#page('GET', '/{collectiveId}/pages/{pageId}', { collectiveId, pageId }, collectiveId);
  }

  createPage(collectiveId: number, parentId: number, title: string): Promise<PageInfo> {
    return this.#page('POST', '/{collectiveId}/pages/{parentId}', { collectiveId, parentId }, collectiveId, { title });
  }

  touchPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return this.#page('GET', '/{collectiveId}/pages/{pageId}/touch', { collectiveId, pageId }, collectiveId);
  }

  movePage(collectiveId: number, pageId: number, to: MoveTarget): Promise<PageInfo> {
    return this.#page('PUT', '/{collectiveId}/pages/{pageId}', { collectiveId, pageId }, collectiveId, { parentId: to.parentId, title: to.title, index: 0, copy: false });
  }

  trashPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return this.#page('DELETE', '/{collectiveId}/pages/{pageId}', { collectiveId, pageId }, collectiveId);
  }

  /** OCS with AppAPI auth carries no session: the AppAPI header is the acting user. */
  async confirmActingUser(): Promise<void> {}
}
