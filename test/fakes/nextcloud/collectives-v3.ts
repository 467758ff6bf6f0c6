// Collectives 3.x (Nextcloud 30+) has an OCS API. Built from nextcloud/collectives'
// appinfo/routes.php ('ocs' section, apiVersion 1.0):
//   collective#index  GET    /api/v{apiVersion}/collectives
//   page#index        GET    /api/v{apiVersion}/collectives/{collectiveId}/pages
//   page#get          GET    /api/v{apiVersion}/collectives/{collectiveId}/pages/{id}
//   page#create       POST   /api/v{apiVersion}/collectives/{collectiveId}/pages/{parentId}   (title, templateId?)
//   page#touch        GET    /api/v{apiVersion}/collectives/{collectiveId}/pages/{id}/touch
//   page#moveOrCopy   PUT    /api/v{apiVersion}/collectives/{collectiveId}/pages/{id}         (parentId?, title?, index?, copy?)
//   page#trash        DELETE /api/v{apiVersion}/collectives/{collectiveId}/pages/{id}
// and lib/Controller/PageController.php / CollectiveController.php (OCSController, #[NoAdminRequired]):
// answers are `{collectives: […]}`, `{pages: […]}`, `{page: …}`; NotFound → OCSNotFoundException
// (404), NotPermitted → OCSForbiddenException (403), AlreadyExists → OCSBadRequestException (400).
// The page info adds `tags`, `linkedPageIds` and `filePathString` (lib/ResponseDefinitions.php).
import { CollectivesFailure, type FakeCollectivesStore, type FakePageInfo } from './collectives-store.ts';
import { invalidQuery, ocsData, ocsFailure } from './ocs.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';

const BASE = '/apps/collectives/api/v1\\.0/collectives';

function v3Page(p: FakePageInfo): Record<string, unknown> {
  return { ...p, tags: [], linkedPageIds: [], filePathString: p.filePath };
}

function intParam(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return null;
}

export function collectivesV3Routes(store: FakeCollectivesStore): FakeRoute[] {
  const route = (method: string, path: string, name: string, run: (ctx: RouteContext, m: RegExpExecArray, uid: string) => unknown): FakeRoute => ({
    method,
    path: new RegExp(`^${BASE}${path}$`),
    access: 'login',
    csrf: true,
    handle: (ctx, m): FakeReply => {
      if (store.generation !== 3) return invalidQuery(ctx.version, ctx.format);
      const uid = ctx.user ?? '';
      store.record(3, uid, method, name);
      try {
        return ocsData(ctx.version, ctx.format, run(ctx, m, uid));
      } catch (err) {
        if (err instanceof CollectivesFailure) return ocsFailure(ctx.version, ctx.format, err.status === 422 ? 400 : err.status, err.message);
        throw err;
      }
    },
  });
  return [
    route('GET', '', 'collective#index', (_ctx, _m, uid) => ({
      collectives: store.collectivesOf(uid).map((c) => ({ ...store.collectiveInfo(c, uid), userShowMembers: true })),
    })),
    route('GET', '/(\\d+)/pages', 'page#index', (_ctx, m, uid) => ({ pages: store.pages(uid, Number(m[1])).map(v3Page) })),
    route('GET', '/(\\d+)/pages/(\\d+)/touch', 'page#touch', (_ctx, m, uid) => ({ page: v3Page(store.touch(uid, Number(m[1]), Number(m[2]))) })),
    route('GET', '/(\\d+)/pages/(\\d+)', 'page#get', (_ctx, m, uid) => ({ page: v3Page(store.page(uid, Number(m[1]), Number(m[2]))) })),
    route('POST', '/(\\d+)/pages/(\\d+)', 'page#create', (ctx, m, uid) => {
      const title = ctx.params['title'];
      return { page: v3Page(store.createPage(uid, Number(m[1]), Number(m[2]), typeof title === 'string' ? title : '')) };
    }),
    route('PUT', '/(\\d+)/pages/(\\d+)', 'page#moveOrCopy', (ctx, m, uid) => {
      if (ctx.params['copy'] === true || ctx.params['copy'] === 'true') throw new CollectivesFailure(400, 'copy is not supported by this fake');
      const title = ctx.params['title'];
      return {
        page: v3Page(
          store.move(
            uid,
            Number(m[1]),
            Number(m[2]),
            intParam(ctx.params['parentId']),
            typeof title === 'string' ? title : null,
            intParam(ctx.params['index']) ?? 0,
          ),
        ),
      };
    }),
    route('DELETE', '/(\\d+)/pages/(\\d+)', 'page#trash', (_ctx, m, uid) => ({ page: v3Page(store.trash(uid, Number(m[1]), Number(m[2]))) })),
  ];
}
