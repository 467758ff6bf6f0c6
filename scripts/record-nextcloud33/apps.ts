// Deck 1.17 cards (positions, moves, labels, assignments, comments) and Collectives 4.5 (OCS API,
// pages, the `.Collectives` mount in the member's files), as the ExApp acting for alice.
import type { Context, Steps } from './context.ts';

export async function recordDeck(ctx: Context): Promise<void> {
  const API = '/index.php/apps/deck/api/v1.0';
  const s: Steps = {};
  const x = async (name: string, method: string, path: string, body?: unknown, uid = 'alice') => {
    const r = await ctx.appApi(uid, method, path, body);
    s[name] = r.exchange;
    return r.json as any;
  };
  await x('boards', 'GET', `${API}/boards`);
  const board = await x('create-board', 'POST', `${API}/boards`, { title: 'Capture board', color: '0082c9' });
  const b = board.id as number;
  await x('board', 'GET', `${API}/boards/${b}`);
  const todo = await x('create-stack-todo', 'POST', `${API}/boards/${b}/stacks`, { title: 'To do', order: 0 });
  const done = await x('create-stack-done', 'POST', `${API}/boards/${b}/stacks`, { title: 'Done', order: 1 });
  const c1 = await x('create-card-1', 'POST', `${API}/boards/${b}/stacks/${todo.id}/cards`, { title: 'First', type: 'plain', order: 0 });
  const c2 = await x('create-card-2', 'POST', `${API}/boards/${b}/stacks/${todo.id}/cards`, {
    title: 'Second',
    type: 'plain',
    order: 1,
    description: 'Details',
    duedate: '2030-06-30T12:00:00+00:00',
  });
  const c3 = await x('create-card-3-no-order', 'POST', `${API}/boards/${b}/stacks/${todo.id}/cards`, { title: 'Third', type: 'plain' });
  await x('create-card-missing-title', 'POST', `${API}/boards/${b}/stacks/${todo.id}/cards`, { type: 'plain', order: 0 });
  await x('stacks-after-create', 'GET', `${API}/boards/${b}/stacks`);
  await x('reorder-card-3-to-top', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c3.id}/reorder`, { order: 0, stackId: todo.id });
  await x('stacks-after-reorder', 'GET', `${API}/boards/${b}/stacks`);
  await x('move-card-1-to-done', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c1.id}/reorder`, { order: 0, stackId: done.id });
  await x('stacks-after-move', 'GET', `${API}/boards/${b}/stacks`);
  await x('card', 'GET', `${API}/boards/${b}/stacks/${done.id}/cards/${c1.id}`);
  await x('update-card', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}`, {
    title: 'Second (renamed)',
    type: 'plain',
    owner: 'alice',
    description: 'New details',
    duedate: null,
    order: 5,
  });
  await x('update-card-missing-owner', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}`, { title: 'x', type: 'plain' });
  const label = await x('create-label', 'POST', `${API}/boards/${b}/labels`, { title: 'Urgent', color: 'ff0000' });
  await x('assign-label', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}/assignLabel`, { labelId: label.id });
  await x('assign-label-again', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}/assignLabel`, { labelId: label.id });
  await x('share-board-with-bob', 'POST', `${API}/boards/${b}/acl`, {
    type: 0,
    participant: 'bob',
    permissionEdit: true,
    permissionShare: false,
    permissionManage: false,
  });
  await x('assign-user-bob', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}/assignUser`, { userId: 'bob' });
  await x('assign-user-unknown', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}/assignUser`, { userId: 'nobody-here' });
  await x('card-with-label-and-user', 'GET', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}`);
  await x('comment', 'POST', `/ocs/v2.php/apps/deck/api/v1.0/cards/${c2.id}/comments`, { message: 'A capture comment' });
  await x('comments', 'GET', `/ocs/v2.php/apps/deck/api/v1.0/cards/${c2.id}/comments?limit=20&offset=0`);
  await x('archive-card', 'PUT', `${API}/boards/${b}/stacks/${todo.id}/cards/${c2.id}/archive`);
  await x('stacks-archived', 'GET', `${API}/boards/${b}/stacks/archived`);
  await x('bob-sees-board', 'GET', `${API}/boards/${b}`, undefined, 'bob');
  await x('delete-card', 'DELETE', `${API}/boards/${b}/stacks/${todo.id}/cards/${c3.id}`);
  await x('card-deleted', 'GET', `${API}/boards/${b}/stacks/${todo.id}/cards/${c3.id}`);
  await x('delete-board', 'DELETE', `${API}/boards/${b}`);
  await x('boards-after-delete', 'GET', `${API}/boards`);
  await x('board-unknown', 'GET', `${API}/boards/999999`);
  ctx.write(
    'deck-1.17-cards.json',
    {
      what: 'Deck 1.17.4 cards as the ExApp for alice: create (with and without order), reorder and move between stacks with the stack listing after each, update, labels, sharing with bob and assignment, OCS comments, archive, delete',
    },
    s,
  );
}

export async function recordCollectives(ctx: Context): Promise<void> {
  const API = '/ocs/v2.php/apps/collectives/api/v1.0/collectives';
  const s: Steps = {};
  const x = async (name: string, method: string, path: string, body?: unknown, uid = 'alice') => {
    const r = await ctx.appApi(uid, method, path, body);
    s[name] = r.exchange;
    return r.json?.ocs?.data as any;
  };
  await x('list-before', 'GET', API);
  const name = `Capture wiki ${Date.now().toString(36)}`;
  const created = await x('create', 'POST', API, { name });
  const c = created?.collective;
  await x('create-again-same-name', 'POST', API, { name });
  await x('list', 'GET', API);
  if (c?.id !== undefined) {
    const pages = await x('pages', 'GET', `${API}/${c.id}/pages`);
    const root = (pages?.pages ?? [])[0];
    const page = await x('create-page', 'POST', `${API}/${c.id}/pages/${root.id}`, { title: 'Capture page' });
    const p = page?.page;
    await x('create-subpage', 'POST', `${API}/${c.id}/pages/${p.id}`, { title: 'Child page' });
    await x('pages-after-create', 'GET', `${API}/${c.id}/pages`);
    await x('page', 'GET', `${API}/${c.id}/pages/${p.id}`);
    await x('touch', 'GET', `${API}/${c.id}/pages/${p.id}/touch`);
    await x('rename-page', 'PUT', `${API}/${c.id}/pages/${p.id}`, { title: 'Capture page renamed' });
    const folder = `/remote.php/dav/files/alice/${encodeURI(String(created?.collective?.collectivePath ?? `.Collectives/${name}`)).replace(/^\/+/, '')}`;
    const propfind =
      '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop><d:getetag/><d:resourcetype/><oc:fileid/><nc:mount-type/></d:prop></d:propfind>';
    s['mount-folder-propfind'] = (
      await ctx.appApiRaw('alice', 'PROPFIND', folder, { body: propfind, headers: { Depth: '1', 'Content-Type': 'application/xml' } })
    ).exchange;
    s['collectives-root-propfind'] = (
      await ctx.appApiRaw('alice', 'PROPFIND', '/remote.php/dav/files/alice/.Collectives', {
        body: propfind,
        headers: { Depth: '1', 'Content-Type': 'application/xml' },
      })
    ).exchange;
    s['page-file-put'] = (
      await ctx.appApiRaw('alice', 'PUT', `${folder}/${encodeURIComponent('Capture page renamed')}/Readme.md`, {
        body: '# Capture page renamed\n\nWritten over WebDAV.\n',
      })
    ).exchange;
    s['page-file-get'] = (await ctx.appApiRaw('alice', 'GET', `${folder}/${encodeURIComponent('Capture page renamed')}/Readme.md`)).exchange;
    await x('pages-as-bob-not-member', 'GET', `${API}/${c.id}/pages`, undefined, 'bob');
    await x('trash-page', 'DELETE', `${API}/${c.id}/pages/${p.id}`);
    await x('trash-collective', 'DELETE', `${API}/${c.id}`);
  }
  s['web-api-probe'] = (await ctx.appApiRaw('alice', 'GET', '/index.php/apps/collectives/_api', { headers: { 'OCS-APIRequest': 'true' } })).exchange;
  ctx.write(
    'collectives-4.5.json',
    {
      what: 'Collectives 4.5.0 OCS API as the ExApp for alice: list, create (twice), pages, create page and subpage, get, touch, rename, the collective folder over WebDAV, a non-member, trash; the 2.x web route probe',
    },
    s,
  );
}
