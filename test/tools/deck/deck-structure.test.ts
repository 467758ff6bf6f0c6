// Boards, stacks and labels through the Deck tools, against the fake Deck set to 1.17 (its
// board, stack and label writes follow test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import { DECK_TOOLS } from '../../../lib/tools/deck/deck-tools.ts';
import type { CapabilityName } from '../../../lib/tools/first-party-capabilities.ts';
import { isToolResult, type ToolEnv } from '../../../lib/tools/first-party-tool.ts';
import { ResourceScope } from '../../../lib/tools/resource-scope.ts';
import type { ToolResult } from '../../../lib/tools/tool-provider.ts';
import { json, NOW, startToolWorld, text, type ToolWorld } from '../first-party-fixture.ts';
import { seedDeck, type DeckSeed } from './deck-seed.ts';

let w: ToolWorld;
let d: DeckSeed;
let mark = 0;

const stored = () => w.confirmations.stored();
const confirm = (uid = 'alice') => w.provider.executeConfirmed(stored(), issueFromConfirmedTalkAuthor(uid));
const REST = '/index.php/apps/deck/api/v1.0';

function writes(): Array<{ method: string; path: string; body: unknown }> {
  return w
    .callsSince(mark)
    .filter((c) => c.path.startsWith('/index.php/apps/deck/') && c.method !== 'GET')
    .map((c) => ({ method: c.method, path: c.path, body: c.body === '' ? null : (JSON.parse(c.body) as unknown) }));
}

function tool(name: string) {
  const t = DECK_TOOLS.find((x) => x.definition.name === name);
  assert.ok(t, name);
  return t;
}

function envFor(scope: ResourceScope, uid = 'alice'): ToolEnv {
  const user = issueFromConfirmedTalkAuthor(uid);
  return { user, session: w.client.as(user), capabilities: new Set<CapabilityName>(['deck']), now: () => NOW, scope };
}

/** Stacks of a board left to right, as Deck's clients sort them (order, then id). */
function columns(boardId: number): string[] {
  return [...w.nc.deck.stacks.values()]
    .filter((s) => s.boardId === boardId && s.deletedAt === 0)
    .sort((a, b) => a.order - b.order || a.id - b.id)
    .map((s) => s.title);
}

describe('Deck boards, stacks and labels (fake Deck 1.17)', () => {
  before(async () => {
    w = await startToolWorld();
    w.nc.deck.version = '1.17.4';
    d = seedDeck(w.nc.deck);
  });
  after(async () => {
    await w.close();
  });
  beforeEach(() => {
    mark = w.nc.calls.length;
    w.nc.headerViolations.length = 0;
  });

  it("creates a board of the user's own, with Deck's default labels; refused when the assignment is limited to some boards", async () => {
    const res = await w.run('deck_create_board', { title: '  Project X ', color: '#FF7A66' });
    assert.equal(res.isError, false, text(res));
    const created = json(res)['created'] as Record<string, unknown>;
    const board = w.nc.deck.boards.get(created['id'] as number);
    assert.ok(board);
    assert.deepEqual([board.title, board.owner, board.color, board.acl.length], ['Project X', 'alice', 'ff7a66', 0]);
    assert.deepEqual(
      (created['labels'] as Array<Record<string, unknown>>).map((l) => l['title']),
      ['Finished', 'To review', 'Action needed', 'Later'],
    );
    assert.deepEqual(writes(), [{ method: 'POST', path: `${REST}/boards`, body: { title: 'Project X', color: 'ff7a66' } }]);

    mark = w.nc.calls.length;
    const limited = await tool('deck_create_board').prepare!({ title: 'Outside' }, envFor(new ResourceScope({ boards: [d.board.id] })));
    assert.ok(isToolResult(limited) && limited.isError);
    assert.match(text(limited), /may use only some Deck boards, so it cannot create new ones/);
    const bad = await w.run('deck_create_board', { title: 'x', color: 'red' });
    assert.match(text(bad), /color must be six hex digits/);
    assert.deepEqual(writes(), []);
  });

  it('renames a board keeping its colour and archived state (Deck needs all three); only with the manage right', async () => {
    const board = w.nc.deck.createBoard('alice', 'Old name', '0082c9');
    const res = await w.run('deck_update_board', { boardId: board.id, title: 'New name' });
    assert.equal(res.isError, false, text(res));
    assert.deepEqual(writes(), [{ method: 'PUT', path: `${REST}/boards/${board.id}`, body: { title: 'New name', color: '0082c9', archived: false } }]);
    assert.equal(board.title, 'New name');

    // bob may edit the EducAI board but not manage it: Deck would answer 403, the tool says why first.
    mark = w.nc.calls.length;
    const asBob = await w.run('deck_update_board', { boardId: d.board.id, title: 'Bob was here' }, w.ctx('bob'));
    assert.match(text(asBob), /needs the right to manage the board/);
    assert.deepEqual(writes(), []);
    // An archived board can be renamed (capture renameArchivedBoard) and stays archived.
    board.archived = true;
    mark = w.nc.calls.length;
    assert.equal((await w.run('deck_update_board', { boardId: board.id, title: 'Archived name' })).isError, false);
    assert.deepEqual(writes()[0]?.body, { title: 'Archived name', color: '0082c9', archived: true });
    assert.equal(board.archived, true);
  });

  it('a write after a tainting read, and a rename bound to a board that changed meanwhile, are not done', async () => {
    const board = w.nc.deck.createBoard('alice', 'Bound');
    // Issue 23: on a board only alice sees a tainted write runs; shared with bob, it waits for her.
    w.nc.deck.share(board.id, 'bob', { edit: true });
    const ctx = w.ctx();
    await w.run('deck_list_boards', {}, ctx);
    const res = await w.run('deck_update_board', { boardId: board.id, title: 'After reading' }, ctx);
    assert.match(text(res), /NOT DONE YET/);
    assert.match(stored().description, /rename it to "After reading"/);
    board.title = 'Renamed by someone else';
    const late = await confirm();
    assert.match(text(late), /changed since this was prepared/);
    assert.equal(board.title, 'Renamed by someone else');
  });

  it('archives a private board directly; archiving a shared one is confirmed; unarchives', async () => {
    const mine = w.nc.deck.createBoard('alice', 'Private');
    const res = await w.run('deck_archive_board', { boardId: mine.id });
    assert.equal(res.isError, false, text(res));
    assert.equal(mine.archived, true);
    assert.deepEqual(writes(), [{ method: 'PUT', path: `${REST}/boards/${mine.id}`, body: { title: 'Private', color: '0082c9', archived: true } }]);
    const stack = await w.run('deck_create_stack', { boardId: mine.id, title: 'Late' });
    assert.match(text(stack), /is archived, and Deck allows no changes on it/);
    assert.equal((await w.run('deck_archive_board', { boardId: mine.id, archive: false })).isError, false);
    assert.equal(mine.archived, false);

    const shared = w.nc.deck.createBoard('alice', 'Team board');
    w.nc.deck.share(shared.id, 'bob', { edit: true });
    const ask = await w.run('deck_archive_board', { boardId: shared.id });
    assert.match(text(ask), /NOT DONE YET/);
    assert.match(w.confirmations.requests.at(-1)?.action.reason ?? '', /archiving a board that other people use/);
    assert.match(stored().description, /shared with Bob \(bob\)/);
    assert.equal(shared.archived, false);
    assert.equal((await confirm()).isError, false);
    assert.equal(shared.archived, true);
  });

  it('creates stacks last or at a place, renumbering the others since Deck does not', async () => {
    const board = w.nc.deck.createBoard('alice', 'Stacks');
    for (const title of ['To do', 'Done']) assert.equal((await w.run('deck_create_stack', { boardId: board.id, title })).isError, false);
    assert.deepEqual(columns(board.id), ['To do', 'Done']);
    mark = w.nc.calls.length;
    const mid = await w.run('deck_create_stack', { boardId: board.id, title: 'Doing', position: 1 });
    assert.equal(mid.isError, false, text(mid));
    assert.deepEqual(columns(board.id), ['To do', 'Doing', 'Done']);
    assert.equal((json(mid)['created'] as Record<string, unknown>)['position'], 1);
    // Every stack update names this board: Deck moves a stack to the board of its URL.
    for (const c of writes()) assert.ok(c.path.startsWith(`${REST}/boards/${board.id}/stacks`), c.path);
    const asBob = w.nc.deck.createBoard('alice', 'Shared');
    w.nc.deck.share(asBob.id, 'bob', { edit: true });
    assert.match(text(await w.run('deck_create_stack', { boardId: asBob.id, title: 'x' }, w.ctx('bob'))), /needs the right to manage the board/);
  });

  it('renames and reorders a stack on its own board; a reorder bound to stacks that changed is refused', async () => {
    const board = w.nc.deck.createBoard('alice', 'Reorder');
    const a = w.nc.deck.addStack(board.id, 'A', 0);
    w.nc.deck.addStack(board.id, 'B', 1);
    const c = w.nc.deck.addStack(board.id, 'C', 2);
    const res = await w.run('deck_update_stack', { boardId: board.id, stackId: c.id, title: 'First', position: 0 });
    assert.equal(res.isError, false, text(res));
    assert.deepEqual(columns(board.id), ['First', 'A', 'B']);
    assert.deepEqual(
      (json(res)['stacks'] as Array<Record<string, unknown>>).map((s) => s['title']),
      ['First', 'A', 'B'],
    );
    for (const call of writes()) assert.equal(call.method, 'PUT');
    assert.ok(writes().every((call) => call.path.startsWith(`${REST}/boards/${board.id}/stacks/`)));
    assert.equal(c.boardId, board.id);

    // Issue 23: a tainted write waits for alice once the board is shared with bob (on her own board it would run).
    w.nc.deck.share(board.id, 'bob', { edit: true });
    const ctx = w.ctx();
    await w.run('deck_list_boards', {}, ctx);
    assert.match(text(await w.run('deck_update_stack', { boardId: board.id, stackId: a.id, position: 2 }, ctx)), /NOT DONE YET/);
    w.nc.deck.addStack(board.id, 'D', 3);
    assert.match(text(await confirm()), /stacks of the board .* changed since this was prepared/);
    assert.deepEqual(columns(board.id), ['First', 'A', 'B', 'D']);
    // A stack of another board is not found on this one, so nothing moves it across boards.
    assert.match(text(await w.run('deck_update_stack', { boardId: board.id, stackId: d.inbox.id, title: 'Stolen' })), /is not on the board/);
    assert.equal(d.inbox.boardId, d.second.id);
  });

  it('creates, renames and recolours labels; titles must differ (Deck: "title must be unique"), case too', async () => {
    const res = await w.run('deck_create_label', { boardId: d.board.id, title: 'Urgent', color: 'FF0000' });
    assert.equal(res.isError, false, text(res));
    const id = (json(res)['created'] as Record<string, unknown>)['id'] as number;
    assert.ok(d.board.labels.some((l) => l.id === id && l.title === 'Urgent' && l.color === 'ff0000'));
    assert.deepEqual(writes(), [{ method: 'POST', path: `${REST}/boards/${d.board.id}/labels`, body: { title: 'Urgent', color: 'ff0000' } }]);
    for (const title of ['Urgent', 'urgent', 'ai'])
      assert.match(text(await w.run('deck_create_label', { boardId: d.board.id, title })), /already has the label/);
    assert.match(text(await w.run('deck_update_label', { boardId: d.board.id, labelId: id, title: 'AI' })), /already has the label "AI"/);

    mark = w.nc.calls.length;
    const renamed = await w.run('deck_update_label', { boardId: d.board.id, labelId: id, title: 'Very urgent' });
    assert.equal(renamed.isError, false, text(renamed));
    assert.deepEqual(writes(), [{ method: 'PUT', path: `${REST}/boards/${d.board.id}/labels/${id}`, body: { title: 'Very urgent', color: 'ff0000' } }]);
    assert.match(text(await w.run('deck_update_label', { boardId: d.board.id, labelId: d.second.labels[0]?.id })), /nothing to change|not on the board/);
    assert.match(text(await w.run('deck_update_label', { boardId: d.board.id, labelId: d.second.labels[0]?.id, title: 'x' })), /is not on the board/);
    assert.match(text(await w.run('deck_create_label', { boardId: d.board.id, title: 'Bob' }, w.ctx('bob'))), /needs the right to manage the board/);
  });

  it('deleting a label is always confirmed, names the cards it comes off, and is bound to them', async () => {
    const label = w.nc.deck.addLabel(d.board.id, 'Temporary');
    const card = w.nc.deck.addCard(d.todo.id, 'alice', { title: 'Labelled', labels: [label.id] });
    const res = await w.run('deck_delete_label', { boardId: d.board.id, labelId: label.id });
    assert.match(text(res), /NOT DONE YET/);
    assert.equal(w.confirmations.requests.at(-1)?.action.reason, 'deleting a label');
    assert.match(stored().description, new RegExp(`delete the label "Temporary" \\(${label.id}\\).*comes off 1 card: "Labelled" \\(${card.id}\\)`));
    const other = w.nc.deck.addCard(d.todo.id, 'bob', { title: 'Labelled meanwhile', labels: [label.id] });
    assert.match(text(await confirm()), /changed since this was prepared/);
    assert.ok(d.board.labels.some((l) => l.id === label.id));

    await w.run('deck_delete_label', { boardId: d.board.id, labelId: label.id });
    mark = w.nc.calls.length;
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    assert.deepEqual(writes(), [{ method: 'DELETE', path: `${REST}/boards/${d.board.id}/labels/${label.id}`, body: null }]);
    assert.ok(!d.board.labels.some((l) => l.id === label.id));
    assert.deepEqual([card.labels, other.labels], [[], []], 'Deck took it off the cards');
  });

  it('scope: stack and label writes on a board outside the assignment are refused before any call', async () => {
    const env = envFor(new ResourceScope({ boards: [d.board.id] }));
    const before = w.nc.calls.length;
    for (const [name, args] of [
      ['deck_update_board', { boardId: d.second.id, title: 'x' }],
      ['deck_archive_board', { boardId: d.second.id }],
      ['deck_create_stack', { boardId: d.second.id, title: 'x' }],
      ['deck_update_stack', { boardId: d.second.id, stackId: d.inbox.id, title: 'x' }],
      ['deck_create_label', { boardId: d.second.id, title: 'x' }],
      ['deck_update_label', { boardId: d.second.id, labelId: 1, title: 'x' }],
      ['deck_delete_label', { boardId: d.second.id, labelId: 1 }],
    ] as const) {
      const res = (await tool(name).prepare!(args, env)) as ToolResult;
      assert.ok(isToolResult(res) && res.isError, name);
      assert.match(text(res), /Deck board \d+ is not one this bot may use/, name);
    }
    assert.equal(w.nc.calls.length, before, 'no request at all');
  });
});
