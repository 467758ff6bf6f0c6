// Collectives 3.x (Nextcloud 30+): the OCS API, with AppAPI auth alone (no cookies, no token).
// Routes from nextcloud/collectives appinfo/routes.php ('ocs', apiVersion 1.0):
// collective#index `GET /api/v1.0/collectives`; page#index/get/create/touch/moveOrCopy/trash under
// `/api/v1.0/collectives/{collectiveId}/pages…`. Answers from lib/Controller/PageController.php:
// `{collectives: […]}`, `{pages: […]}`, `{page: …}`.
import type { NextcloudSession } from '../client.ts';
import { NextcloudError } from '../errors.ts';
import { moveBody, parseCollective, parseList, parsePage, type CollectiveInfo, type CollectivesApi, type MoveTarget, type PageInfo } from './model.ts';

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
    let data: { pages?: unknown } | null;
    try {
      data = await this.#session.ocs<{ pages?: unknown }>('GET', `${API}/{collectiveId}/pages`, { params: { collectiveId } });
    } catch (err) {
      throw await this.#unsupportedIfListed(err, collectiveId);
    }
    return parseList(data?.pages, 'GET collective pages', (x) => parsePage(x, collectiveId, 'GET collective pages'));
  }

  /**
   * A 404 for the pages of a collective the user demonstrably has means our page routes are not
   * this server's (an early 3.0.x layout): say so instead of "not found".
   */
  async #unsupportedIfListed(err: unknown, collectiveId: number): Promise<unknown> {
    if (!(err instanceof NextcloudError) || err.status !== 404) return err;
    const listed = await this.listCollectives().then(
      (all) => all.some((c) => c.id === collectiveId),
      () => false,
    );
    if (!listed) return err;
    return new NextcloudError(
      'GET collective pages',
      501,
      'this version of the Collectives app is not supported: it does not serve the page list at the address these tools use (Collectives 3.x OCS API v1.0)',
    );
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
    return this.#page('PUT', '/{collectiveId}/pages/{pageId}', { collectiveId, pageId }, collectiveId, moveBody(to));
  }

  trashPage(collectiveId: number, pageId: number): Promise<PageInfo> {
    return this.#page('DELETE', '/{collectiveId}/pages/{pageId}', { collectiveId, pageId }, collectiveId);
  }

  /** OCS with AppAPI auth carries no session: the AppAPI header is the acting user. */
  async confirmActingUser(): Promise<void> {}
}
