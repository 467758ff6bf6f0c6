// Collectives tools, as the invoking user, on both API generations (nextcloud/collectives/api.ts). Page
// contents and titles are other members' text, so reading them taints the turn (S6); every write
// to a collective is a write to shared content and goes through prepare/execute, so after taint
// the provider asks the user first. Ids are integers (S2); page files come from the server's page
// data; every call checks the collective against the assignment's scope.
import { NextcloudError } from '../../nextcloud/errors.ts';
import { byteLength, MAX_PAGE_BYTES, paginate } from '../page-text.ts';
import { InvalidArgumentError } from '../files/user-paths.ts';
import {
  guarded,
  guardedPrepare,
  jsonResult,
  nextcloudMessage,
  objectSchema,
  optionalString,
  type FirstPartyTool,
  type PreparedAction,
  type ToolEnv,
} from '../first-party-tool.ts';
import { assertCollectiveInScope } from '../resource-scope.ts';
import { destructivePolicy, readPolicy, writePolicy } from '../tool-policy.ts';
import { errorResult, type ToolResult } from '../tool-provider.ts';
import { withCollectivesApi, type CollectivesApi, type PageInfo } from '../../nextcloud/collectives/api.ts';
import { pageDavPath, putPageText, readPageText, statPageFile } from '../../nextcloud/collectives/page-file.ts';
import { idArg, normalizeEtag, pageTree, sameEtag, titleArg } from './collectives-pages.ts';

const available = (c: ReadonlySet<string>): boolean => c.has('collectives');

const COLLECTIVE_ID = { type: 'integer', description: 'The collective id from collectives_list.' };
const PAGE_ID = { type: 'integer', description: 'The page id from collectives_page_tree.' };

function collectiveArg(args: Record<string, unknown>, env: ToolEnv): number {
  const id = idArg(args, 'collective_id');
  assertCollectiveInScope(env.scope, id);
  return id;
}

function contentArg(args: Record<string, unknown>, required: boolean): string | undefined {
  const text = optionalString(args, 'content', MAX_PAGE_BYTES);
  if (text === undefined) {
    if (required) throw new InvalidArgumentError('content is required');
    return undefined;
  }
  if (byteLength(text) > MAX_PAGE_BYTES) throw new InvalidArgumentError(`content is larger than ${MAX_PAGE_BYTES / 1024} KiB`);
  return text;
}

function label(page: PageInfo): string {
  return `"${page.title}" (page ${page.id})`;
}

async function collectiveName(api: CollectivesApi, id: number): Promise<string> {
  const c = (await api.listCollectives()).find((x) => x.id === id);
  if (!c) throw new InvalidArgumentError(`collective ${id} is not one of your collectives`);
  return c.name;
}

const CHANGED = 'changed since it was prepared; nothing was done. Read it again and retry';

/** The page again, at execute time, and whether it is still what the action was bound to. */
async function recheck(api: CollectivesApi, collectiveId: number, pageId: number, binding: Record<string, unknown>): Promise<PageInfo | ToolResult> {
  let page: PageInfo;
  try {
    page = await api.getPage(collectiveId, pageId);
  } catch (err) {
    if ((err as { status?: number }).status === 404)
      return errorResult(`ERROR: Page ${pageId} is not there any more (trashed, deleted or moved away); nothing was done.`);
    throw err;
  }
  if (binding['parentId'] !== undefined && page.parentId !== binding['parentId']) return errorResult(`ERROR: Page ${label(page)} was moved: it ${CHANGED}.`);
  if (binding['title'] !== undefined && page.title !== binding['title']) return errorResult(`ERROR: Page ${label(page)} was renamed: it ${CHANGED}.`);
  return page;
}

function isPage(x: PageInfo | ToolResult): x is PageInfo {
  return typeof (x as PageInfo).id === 'number';
}

/** Collectives renames on a clash (`Title (2)`, NodeHelper::generateFilename): the answer says so. */
function titleNote(asked: string, saved: PageInfo): Record<string, string> {
  if (saved.title === asked) return {};
  return {
    note: `Collectives saved the title as "${saved.title}", not "${asked}" (a page with that title already exists there, or the server changed characters it cannot store)`,
  };
}

// --- reads ---

const collectivesList: FirstPartyTool = {
  family: 'collectives',
  taints: false,
  available,
  definition: {
    name: 'collectives_list',
    description: 'Lists the Collectives (shared wikis of a team) you are a member of, with their ids and whether you may edit them.',
    schema: objectSchema({}),
    policy: readPolicy(),
    label: 'List collectives',
    summary: 'List the Collectives you belong to',
    requiresUser: true,
  },
  run: (_args, env) =>
    guarded(() =>
      withCollectivesApi(env, async (api) => {
        const all = await api.listCollectives();
        const visible = all.filter((c) => env.scope.allowsCollective(c.id));
        return jsonResult({
          collectives: visible.map((c) => ({ id: c.id, name: c.name, canEdit: c.canEdit })),
          ...(visible.length < all.length ? { note: 'Only the collectives this bot may use are listed.' } : {}),
        });
      }),
    ),
};

const collectivesPageTree: FirstPartyTool = {
  family: 'collectives',
  taints: true,
  available,
  definition: {
    name: 'collectives_page_tree',
    description: "Shows the pages of a collective as a tree (id, title, depth, last editor). Titles are written by the collective's members.",
    schema: objectSchema({ collective_id: COLLECTIVE_ID }, ['collective_id']),
    policy: readPolicy(),
    label: 'Collective page tree',
    summary: 'Show the pages of a Collective',
    requiresUser: true,
  },
  run: (args, env) =>
    guarded(async () => {
      const collectiveId = collectiveArg(args, env);
      return withCollectivesApi(env, async (api) => {
        const tree = pageTree(await api.listPages(collectiveId));
        return jsonResult({ collectiveId, pages: tree.entries, ...(tree.truncated ? { truncated: true } : {}) });
      });
    }),
};

const collectivesReadPage: FirstPartyTool = {
  family: 'collectives',
  taints: true,
  available,
  definition: {
    name: 'collectives_read_page',
    description:
      "Reads a page of a collective (Markdown) in chunks: offset and limit count characters (limit up to 3500). The answer has the page's etag: pass it to collectives_update_page so that a page changed meanwhile is not overwritten.",
    schema: objectSchema(
      {
        collective_id: COLLECTIVE_ID,
        page_id: PAGE_ID,
        offset: { type: 'integer', description: 'First character to return (default 0).' },
        limit: { type: 'integer', description: 'How many characters (default 3000, at most 3500).' },
      },
      ['collective_id', 'page_id'],
    ),
    policy: readPolicy(),
    label: 'Read a collective page',
    summary: 'Read a page of a Collective',
    requiresUser: true,
  },
  run: (args, env) =>
    guarded(async () => {
      const collectiveId = collectiveArg(args, env);
      const pageId = idArg(args, 'page_id');
      return withCollectivesApi(env, async (api) => {
        const page = await api.getPage(collectiveId, pageId);
        const file = await statPageFile(env, page);
        if ((file.size ?? 0) > MAX_PAGE_BYTES)
          return errorResult(`ERROR: Page ${label(page)} is larger than ${MAX_PAGE_BYTES / 1024} KiB; it cannot be read here.`);
        const { text, etag } = await readPageText(env, file);
        return jsonResult({
          collectiveId,
          pageId,
          title: page.title,
          parentId: page.parentId,
          etag: normalizeEtag(etag),
          ...paginate(text, args['offset'], args['limit']),
        });
      });
    }),
};

// --- writes ---

const collectivesCreatePage: FirstPartyTool = {
  family: 'collectives',
  risk: 'outward',
  taints: false,
  available,
  definition: {
    name: 'collectives_create_page',
    description: 'Creates a page under a parent page of a collective (the landing page is the top), optionally with Markdown content.',
    schema: objectSchema(
      {
        collective_id: COLLECTIVE_ID,
        parent_id: { type: 'integer', description: 'The id of the parent page (from collectives_page_tree).' },
        title: { type: 'string', description: 'Title of the new page.' },
        content: { type: 'string', description: 'Markdown content of the new page (optional).' },
      },
      ['collective_id', 'parent_id', 'title'],
    ),
    policy: writePolicy(),
    label: 'Create a collective page',
    summary: 'Create a page in a Collective',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async () => {
      const collectiveId = collectiveArg(args, env);
      const parentId = idArg(args, 'parent_id');
      const title = titleArg(args);
      const content = contentArg(args, false);
      return withCollectivesApi(env, async (api): Promise<PreparedAction | ToolResult> => {
        const name = await collectiveName(api, collectiveId);
        const parent = await api.getPage(collectiveId, parentId);
        return {
          args: { collective_id: collectiveId, parent_id: parentId, title, ...(content !== undefined ? { content } : {}) },
          binding: { parentId: parent.parentId, title: parent.title },
          description: `create the page "${title}" under ${label(parent)} in the collective "${name}"${content ? ` with ${content.length} characters` : ''}`,
          confirmReason: null,
        };
      });
    }),
  execute: (action, env) =>
    guarded(async () => {
      const collectiveId = collectiveArg(action.args, env);
      const parentId = idArg(action.args, 'parent_id');
      const title = titleArg(action.args);
      const content = contentArg(action.args, false);
      return withCollectivesApi(env, async (api) => {
        await api.confirmActingUser();
        const parent = await recheck(api, collectiveId, parentId, action.binding);
        if (!isPage(parent)) return parent;
        const withContent = content !== undefined && content !== '';
        // The new file lies below the parent's: a path we could not write is refused before creating.
        if (withContent) pageDavPath(parent);
        const page = await api.createPage(collectiveId, parentId, title);
        let etag: string | null = null;
        if (withContent) {
          const written = await writeNewPage(env, api, page, content);
          if (typeof written !== 'string') return written;
          etag = written;
        }
        return jsonResult({
          created: { collectiveId, pageId: page.id, title: page.title, parentId: page.parentId },
          ...titleNote(title, page),
          ...(etag ? { etag: normalizeEtag(etag) } : {}),
          chars: content?.length ?? 0,
        });
      });
    }),
};

/** The content of a page just created (its etag), or an answer that says the page exists but is empty. */
async function writeNewPage(env: ToolEnv, api: CollectivesApi, page: PageInfo, content: string): Promise<string | ToolResult> {
  const empty = (why: string): ToolResult =>
    errorResult(
      `ERROR: The page ${label(page)} was created, but it is empty: its content could not be written (${why}). Write it with collectives_update_page, or trash the page.`,
    );
  try {
    const file = await statPageFile(env, page);
    const put = await putPageText(env, file, content, file.etag);
    if (!put.ok) return empty(`HTTP ${put.status}`);
    // Collectives records the last editor through touch (test/fixtures/nextcloud29/91-collectives.json, touchPage); the content is already saved.
    await api.touchPage(page.collectiveId, page.id).catch(() => null);
    return put.etag;
  } catch (err) {
    if (err instanceof InvalidArgumentError) return empty(err.message);
    if (err instanceof NextcloudError) return empty(nextcloudMessage(err) || `HTTP ${err.status}`);
    throw err;
  }
}

const collectivesUpdatePage: FirstPartyTool = {
  family: 'collectives',
  risk: 'outward',
  taints: false,
  available,
  definition: {
    name: 'collectives_update_page',
    description:
      'Replaces the content of a collective page, or appends to it, only if the page is still at the revision (etag) you read with collectives_read_page. A changed page is refused: read it again.',
    schema: objectSchema(
      {
        collective_id: COLLECTIVE_ID,
        page_id: PAGE_ID,
        content: { type: 'string', description: 'Markdown: the new content (replace) or the text to add at the end (append).' },
        mode: { type: 'string', enum: ['replace', 'append'], description: 'replace (default) or append.' },
        etag: { type: 'string', description: 'The etag from collectives_read_page; without it, the revision current now is used.' },
      },
      ['collective_id', 'page_id', 'content'],
    ),
    policy: writePolicy(),
    label: 'Update a collective page',
    summary: 'Replace or extend a Collective page, with a revision check',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async () => {
      const collectiveId = collectiveArg(args, env);
      const pageId = idArg(args, 'page_id');
      const content = contentArg(args, true) ?? '';
      const mode = optionalString(args, 'mode', 10) ?? 'replace';
      if (mode !== 'replace' && mode !== 'append') throw new InvalidArgumentError('mode must be "replace" or "append"');
      const expected = optionalString(args, 'etag', 200);
      return withCollectivesApi(env, async (api): Promise<PreparedAction | ToolResult> => {
        const name = await collectiveName(api, collectiveId);
        const page = await api.getPage(collectiveId, pageId);
        const file = await statPageFile(env, page);
        if (expected !== undefined && !sameEtag(expected, file.etag)) {
          return errorResult(
            `ERROR: The page ${label(page)} changed since you read it (its etag is now ${normalizeEtag(file.etag)}). Read it again before updating it. Nothing was written.`,
          );
        }
        return {
          args: { collective_id: collectiveId, page_id: pageId, content, mode },
          binding: { fileId: file.fileId, etag: normalizeEtag(file.etag) },
          description: `${mode === 'append' ? `append ${content.length} characters to` : `replace the content of`} the page ${label(page)} in the collective "${name}"${mode === 'replace' ? ` with ${content.length} characters` : ''}`,
          confirmReason: null,
        };
      });
    }),
  execute: (action, env) =>
    guarded(async () => {
      const collectiveId = collectiveArg(action.args, env);
      const pageId = idArg(action.args, 'page_id');
      const content = contentArg(action.args, true) ?? '';
      const append = action.args['mode'] === 'append';
      const etag = String(action.binding['etag'] ?? '');
      return withCollectivesApi(env, async (api) => {
        await api.confirmActingUser();
        const page = await recheck(api, collectiveId, pageId, action.binding);
        if (!isPage(page)) return page;
        const file = await statPageFile(env, page);
        const changed = errorResult(
          `ERROR: The page ${label(page)} changed since it was read (etag now ${normalizeEtag(file.etag)}, expected ${etag}). Nothing was written: read it again and retry.`,
        );
        if (file.fileId !== action.binding['fileId'] || !sameEtag(file.etag, etag)) return changed;
        let text = content;
        if (append) {
          const current = await readPageText(env, file);
          if (!sameEtag(current.etag, etag)) return changed;
          text = `${current.text.replace(/\s*$/, '')}${current.text.trim() === '' ? '' : '\n\n'}${content}`;
          if (byteLength(text) > MAX_PAGE_BYTES) return errorResult(`ERROR: The page would grow beyond ${MAX_PAGE_BYTES / 1024} KiB; nothing was written.`);
        }
        const put = await putPageText(env, file, text, etag);
        if (!put.ok) return put.status === 412 ? changed : errorResult(`ERROR: Nextcloud refused to write the page (HTTP ${put.status}).`);
        // Collectives records the last editor through touch (test/fixtures/nextcloud29/91-collectives.json, touchPage); the content is already saved.
        await api.touchPage(collectiveId, pageId).catch(() => null);
        return jsonResult({
          updated: { collectiveId, pageId, title: page.title },
          mode: append ? 'append' : 'replace',
          etag: normalizeEtag(put.etag),
          chars: Array.from(text).length,
        });
      });
    }),
};

function moveTool(kind: 'rename' | 'move'): FirstPartyTool {
  const rename = kind === 'rename';
  return {
    family: 'collectives',
    risk: 'outward',
    taints: false,
    available,
    definition: {
      name: rename ? 'collectives_rename_page' : 'collectives_move_page',
      description: rename
        ? 'Renames a page of a collective (its subpages stay with it).'
        : 'Moves a page of a collective, with its subpages, under another parent page of the same collective; it is placed after the subpages already there.',
      schema: objectSchema(
        rename
          ? { collective_id: COLLECTIVE_ID, page_id: PAGE_ID, title: { type: 'string', description: 'The new title.' } }
          : { collective_id: COLLECTIVE_ID, page_id: PAGE_ID, parent_id: { type: 'integer', description: 'The id of the new parent page.' } },
        ['collective_id', 'page_id', rename ? 'title' : 'parent_id'],
      ),
      policy: writePolicy(),
      label: rename ? 'Rename a collective page' : 'Move a collective page',
      summary: rename ? 'Rename a page in a Collective' : 'Move a page within a Collective',
      requiresUser: true,
    },
    prepare: (args, env) =>
      guardedPrepare(async () => {
        const collectiveId = collectiveArg(args, env);
        const pageId = idArg(args, 'page_id');
        const target = rename ? titleArg(args) : idArg(args, 'parent_id');
        return withCollectivesApi(env, async (api): Promise<PreparedAction | ToolResult> => {
          const name = await collectiveName(api, collectiveId);
          const page = await api.getPage(collectiveId, pageId);
          if (page.parentId === 0) return errorResult('ERROR: The landing page of a collective cannot be renamed or moved.');
          let what: string;
          if (rename) {
            if (page.title === target) return errorResult(`ERROR: Page ${label(page)} already has that title.`);
            what = `rename the page ${label(page)} to "${String(target)}"`;
          } else {
            if (page.parentId === target) return errorResult(`ERROR: Page ${label(page)} is already under page ${target}.`);
            if (target === page.id) return errorResult('ERROR: A page cannot be moved under itself.');
            const parent = await api.getPage(collectiveId, target as number);
            what = `move the page ${label(page)} with its subpages under ${label(parent)}, after its other subpages`;
          }
          return {
            args: { collective_id: collectiveId, page_id: pageId, ...(rename ? { title: target } : { parent_id: target }) },
            binding: { parentId: page.parentId, title: page.title },
            description: `${what} in the collective "${name}"`,
            confirmReason: null,
          };
        });
      }),
    execute: (action, env) =>
      guarded(async () => {
        const collectiveId = collectiveArg(action.args, env);
        const pageId = idArg(action.args, 'page_id');
        const newTitle = rename ? titleArg(action.args) : null;
        const newParent = rename ? null : idArg(action.args, 'parent_id');
        return withCollectivesApi(env, async (api) => {
          await api.confirmActingUser();
          const page = await recheck(api, collectiveId, pageId, action.binding);
          if (!isPage(page)) return page;
          if (newTitle !== null) {
            const renamed = await api.movePage(collectiveId, pageId, { kind: 'rename', title: newTitle });
            return jsonResult({
              renamed: { collectiveId, pageId: renamed.id, title: renamed.title, parentId: renamed.parentId },
              ...titleNote(newTitle, renamed),
            });
          }
          return movePageLast(api, page, newParent as number);
        });
      }),
  };
}

/**
 * Moves `page` under `parentId`, last in the new parent's subpage order: PageService::move inserts
 * the page at `index` of that order (SubpageOrderService::add), so the index is its current length.
 */
async function movePageLast(api: CollectivesApi, page: PageInfo, parentId: number): Promise<ToolResult> {
  const parent = await api.getPage(page.collectiveId, parentId);
  const index = parent.subpageOrder.filter((id) => id !== page.id).length;
  const moved = await api.movePage(page.collectiveId, page.id, { kind: 'move', parentId, index });
  return jsonResult({
    moved: { collectiveId: page.collectiveId, pageId: moved.id, title: moved.title, parentId: moved.parentId },
    position: `after the other subpages of ${label(parent)}`,
    ...titleNote(page.title, moved),
  });
}

const collectivesTrashPage: FirstPartyTool = {
  family: 'collectives',
  risk: 'destructive',
  taints: false,
  available,
  definition: {
    name: 'collectives_trash_page',
    description:
      "Moves a page of a collective, with its subpages, to the collective's trash. Where the Nextcloud trash (files_trashbin) is disabled for the user, Collectives deletes the page permanently instead; the answer says which happened. Needs the user's confirmation.",
    schema: objectSchema({ collective_id: COLLECTIVE_ID, page_id: PAGE_ID }, ['collective_id', 'page_id']),
    policy: destructivePolicy(),
    label: 'Trash a collective page',
    summary: 'Move a Collective page to the trash, with your confirmation',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async () => {
      const collectiveId = collectiveArg(args, env);
      const pageId = idArg(args, 'page_id');
      return withCollectivesApi(env, async (api): Promise<PreparedAction | ToolResult> => {
        const name = await collectiveName(api, collectiveId);
        const page = await api.getPage(collectiveId, pageId);
        if (page.parentId === 0) return errorResult('ERROR: The landing page of a collective cannot be trashed.');
        const subpages = (await api.listPages(collectiveId)).filter((p) => p.parentId === page.id).length;
        // Capabilities as the user: without files_trashbin, PageService::trash deletes for good.
        const trashbin = env.capabilities.has('trashbin');
        return {
          args: { collective_id: collectiveId, page_id: pageId },
          binding: { parentId: page.parentId, title: page.title },
          description: `move the page ${label(page)}${subpages > 0 ? ` and its subpages` : ''} of the collective "${name}" to the trash${trashbin ? '' : ' (WARNING: the Nextcloud trash is not enabled for you, so Collectives will most likely delete it permanently)'}`,
          confirmReason: trashbin
            ? 'trashing a page removes it for every member of the collective'
            : 'this can delete the page permanently for every member of the collective',
        };
      });
    }),
  execute: (action, env) =>
    guarded(async () => {
      const collectiveId = collectiveArg(action.args, env);
      const pageId = idArg(action.args, 'page_id');
      return withCollectivesApi(env, async (api) => {
        await api.confirmActingUser();
        const page = await recheck(api, collectiveId, pageId, action.binding);
        if (!isPage(page)) return page;
        return trashResult(await api.trashPage(collectiveId, pageId));
      });
    }),
};

/** Only a trash timestamp proves the page went to the trash (PageService::trash sets it on that path only). */
function trashResult(page: PageInfo): ToolResult {
  const which = { collectiveId: page.collectiveId, pageId: page.id, title: page.title };
  if (page.trashTimestamp !== null) return jsonResult({ trashed: which, note: 'moved to the trash (members can restore it)' });
  return jsonResult({
    deletedPermanently: which,
    note: 'deleted permanently: the trash is not available for this user (the files_trashbin app is disabled for them), so Collectives deleted the page and its subpages for good; it cannot be restored',
  });
}

export const COLLECTIVES_TOOLS: readonly FirstPartyTool[] = [
  collectivesList,
  collectivesPageTree,
  collectivesReadPage,
  collectivesCreatePage,
  collectivesUpdatePage,
  moveTool('rename'),
  moveTool('move'),
  collectivesTrashPage,
];
