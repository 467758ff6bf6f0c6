// The Deck board, stack and label tools from Talk against the real Deck 1.17: every effect read back with
// Deck's own REST API as alice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { codeIn } from '../helpers/talk-scenario.ts';
import type { ChatMessage } from './nextcloud.ts';
import { startStack, unique, type Stack } from './stack.ts';

const TOOLS = [
  'deck_list_boards',
  'deck_get_board',
  'deck_create_board',
  'deck_update_board',
  'deck_archive_board',
  'deck_create_stack',
  'deck_update_stack',
  'deck_create_label',
  'deck_update_label',
  'deck_delete_label',
  'deck_create_card',
];

describe('Deck boards, stacks and labels from Talk on the real Deck 1.17', () => {
  let s: Stack;
  let mention: string;
  before(async () => {
    s = await startStack();
    mention = unique('planner').replace(/-/g, '_');
    await s.createBot('alice', mention, TOOLS);
  });
  after(async () => s?.stop());

  const deck = async (path: string) => {
    const r = await s.nc.request('alice', 'GET', `/index.php/apps/deck/api/v1.0${path}`, { headers: { 'OCS-APIRequest': 'true' } });
    assert.equal(r.status, 200, r.text);
    return r.data;
  };
  /** One tool call in a fresh room (no earlier tool output taints it), then the model's closing words. */
  const turn = async (name: string, args: object, closing = 'Done.'): Promise<{ token: string; answer: ChatMessage[] }> => {
    const token = await s.room('alice', ['bob']);
    await s.onboard('alice', token, mention);
    s.llm.enqueue({ toolCalls: [{ id: `c-${name}`, name, arguments: JSON.stringify(args) }] }, { text: [closing] });
    return { token, answer: await s.ask('alice', token, `@${mention} please ${name.replace(/_/g, ' ')}`) };
  };
  const said = (m: ChatMessage[]) => m.map((x) => x.message).join(' | ');

  it('creates a board, stacks in order, moves a stack first, manages labels and archives the board', async () => {
    const title = unique('Sprint');
    const created = await turn('deck_create_board', { title });
    assert.equal(created.answer.at(-1)?.message, 'Done.', said(created.answer));
    const board = ((await deck('/boards')) as Array<{ id: number; title: string }>).find((b) => b.title === title);
    assert.ok(board, 'the board exists in Deck');

    for (const stackTitle of ['Todo', 'Doing', 'Done']) await turn('deck_create_stack', { boardId: board.id, title: stackTitle });
    const stacks = () => deck(`/boards/${board.id}/stacks`) as Promise<Array<{ id: number; title: string; order: number }>>;
    const ordered = async () =>
      (await stacks())
        .slice()
        .sort((a, b) => a.order - b.order || a.id - b.id)
        .map((x) => x.title);
    assert.deepEqual(await ordered(), ['Todo', 'Doing', 'Done']);
    const done = (await stacks()).find((x) => x.title === 'Done')!;
    await turn('deck_update_stack', { boardId: board.id, stackId: done.id, title: 'Finished', position: 0 });
    assert.deepEqual(await ordered(), ['Finished', 'Todo', 'Doing'], 'renamed and moved first');

    await turn('deck_create_label', { boardId: board.id, title: 'Urgent', color: 'e9322d' });
    const labels = async () => ((await deck(`/boards/${board.id}`)) as { labels: Array<{ id: number; title: string }> }).labels;
    const urgent = (await labels()).find((l) => l.title === 'Urgent');
    assert.ok(urgent, 'the label exists');

    // Deleting a label is always confirmed; bob's yes with the code does nothing.
    const asked = await turn('deck_delete_label', { boardId: board.id, labelId: urgent.id }, 'I asked you to confirm.');
    const request = asked.answer.find((m) => /Urgent/.test(m.message) && /\b\d{4,8}\b/.test(m.message));
    assert.ok(request, `a confirmation request naming the label: ${said(asked.answer)}`);
    const code = codeIn(request.message);
    await s.ask('bob', asked.token, `@${mention} yes ${code}`);
    assert.ok(
      (await labels()).some((l) => l.id === urgent.id),
      "bob's yes confirms nothing",
    );
    await s.ask('alice', asked.token, `@${mention} yes ${code}`);
    assert.ok(!(await labels()).some((l) => l.id === urgent.id), 'deleted once alice confirmed');

    const archived = await turn('deck_archive_board', { boardId: board.id });
    assert.equal(archived.answer.at(-1)?.message, 'Done.', `a board only alice uses is archived without a question: ${said(archived.answer)}`);
    assert.equal(((await deck(`/boards/${board.id}`)) as { archived: boolean }).archived, true);
  });
});
