// The first-party tools as alice, driven from Talk, against the real WebDAV, CalDAV, OCS sharing, Deck and
// Collectives of Nextcloud 33. The model is scripted; every effect is read back from the real server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lastToolOutput } from '../fakes/openai/fake-openai.ts';
import { codeIn } from '../helpers/talk-scenario.ts';
import type { ChatMessage } from './nextcloud.ts';
import { startStack, unique, type Stack } from './stack.ts';

const TOOLS = [
  'files_list',
  'files_read',
  'files_create',
  'files_delete',
  'sharing_create_user_share',
  'sharing_list',
  'calendar_list',
  'calendar_create_event',
  'deck_list_boards',
  'deck_get_board',
  'deck_create_card',
  'collectives_list',
  'collectives_page_tree',
  'collectives_create_page',
  'collectives_read_page',
];

describe('first-party tools as alice on the real Nextcloud 33', () => {
  let s: Stack;
  let mention: string;
  let folder: string;
  before(async () => {
    s = await startStack();
    mention = unique('assistant').replace(/-/g, '_');
    await s.createBot('alice', mention, TOOLS);
    folder = unique('Notes');
    await s.nc.putFile('alice', `${folder}/todo.md`, '# Todo\n\nBuy milk.\n');
    await s.nc.putFile('bob', `${folder}/secret.md`, 'the launch code is 0451');
  });
  after(async () => s?.stop());

  /** A fresh room with bob per step, so no earlier answer or read taints the turn (S6). */
  async function room(): Promise<string> {
    const token = await s.room('alice', ['bob']);
    await s.onboard('alice', token, mention);
    return token;
  }
  const text = (messages: ChatMessage[]) => messages.map((m) => m.message).join(' | ');

  it('lists and reads her files, and creates one', async () => {
    let token = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c1', name: 'files_list', arguments: JSON.stringify({ path: folder }) }] },
      { toolCalls: [{ id: 'c2', name: 'files_read', arguments: JSON.stringify({ path: `${folder}/todo.md` }) }] },
      { text: ['Your todo list says: buy milk.'] },
    );
    const answer = await s.ask('alice', token, `@${mention} what is in my todo file?`);
    const outputs = s.llm.chatRequests().slice(-2).map(lastToolOutput);
    assert.match(outputs[0]!, /todo\.md/);
    assert.match(outputs[1]!, /Buy milk/);
    assert.equal(answer.at(-1)?.message, 'Your todo list says: buy milk.', text(answer));

    token = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c3', name: 'files_create', arguments: JSON.stringify({ path: `${folder}/plan.md`, content: '# Plan\n\nShip it.' }) }] },
      { text: ['Created.'] },
    );
    await s.ask('alice', token, `@${mention} create a plan`);
    assert.equal(await s.nc.readFile('alice', `${folder}/plan.md`), '# Plan\n\nShip it.');
  });

  it("cannot reach bob's private file from alice's bot", async () => {
    const token = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c4', name: 'files_read', arguments: JSON.stringify({ path: `${folder}/secret.md` }) }] },
      { toolCalls: [{ id: 'c5', name: 'files_read', arguments: JSON.stringify({ path: `../bob/${folder}/secret.md` }) }] },
      { text: ['I cannot find that file.'] },
    );
    await s.ask('alice', token, `@${mention} read bob's secret`);
    const outputs = s.llm.chatRequests().slice(-2).map(lastToolOutput);
    for (const out of outputs) assert.doesNotMatch(out, /0451/, `no tool result carries bob's file: ${out}`);
    assert.match(outputs[0]!, /Nothing exists at/, 'her own home has no such file');
    assert.match(outputs[1]!, /^ERROR/, `a path out of her home is refused: ${outputs[1]}`);
    assert.doesNotMatch(JSON.stringify(s.llm.lastChatBody()), /0451/);
    assert.equal(await s.nc.readFile('bob', `${folder}/secret.md`), 'the launch code is 0451', "bob's file is untouched");
  });

  it('shares a file with bob as alice, and the share is real', async () => {
    const token = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c6', name: 'sharing_create_user_share', arguments: JSON.stringify({ path: `${folder}/todo.md`, user: 'bob' }) }] },
      { text: ['Shared with Bob.'] },
    );
    const answer = await s.ask('alice', token, `@${mention} share my todo file with bob`);
    assert.equal(answer.at(-1)?.message, 'Shared with Bob.', `a read-only share in an untainted turn runs without a question: ${text(answer)}`);
    const shares = await s.nc.ocs('bob', 'GET', '/apps/files_sharing/api/v1/shares?shared_with_me=true');
    assert.equal(shares.status, 200, shares.text);
    const share = (shares.data as Array<{ uid_owner: string; path: string; permissions: number }>).find(
      (x) => x.uid_owner === 'alice' && x.path.endsWith('/todo.md'),
    );
    assert.ok(share, `bob sees alice's share: ${text(answer)}`);
    assert.equal(share.permissions & 2, 0, 'read-only: no update permission');
  });

  it("deletes only after alice's confirmation: bob's yes with the code does nothing", async () => {
    await s.nc.putFile('alice', `${folder}/old.md`, 'old notes');
    const token = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c7', name: 'files_delete', arguments: JSON.stringify({ path: `${folder}/old.md` }) }] },
      { text: ['I asked you to confirm.'] },
    );
    const asked = await s.ask('alice', token, `@${mention} delete old.md`);
    assert.equal(await s.nc.readFile('alice', `${folder}/old.md`), 'old notes', 'nothing deleted before the confirmation');
    const request = asked.find((m) => /old\.md/.test(m.message) && /\b\d{4,8}\b/.test(m.message));
    assert.ok(request, `a confirmation request naming the file: ${text(asked)}`);
    const code = codeIn(request.message);
    await s.ask('bob', token, `@${mention} yes ${code}`);
    assert.equal(await s.nc.readFile('alice', `${folder}/old.md`), 'old notes', "bob's yes confirms nothing");
    await s.ask('alice', token, `@${mention} yes ${code}`);
    assert.equal(await s.nc.readFile('alice', `${folder}/old.md`), null, 'deleted once alice confirmed');
    const trash = await s.nc.request('alice', 'PROPFIND', '/remote.php/dav/trashbin/alice/trash/', { headers: { Depth: '1' } });
    assert.match(trash.text, /old\.md/, 'the file went to her trash bin');
  });

  it('creates an event in her calendar', async () => {
    const calendar = unique('work').toLowerCase();
    const made = await s.nc.request('alice', 'MKCALENDAR', `/remote.php/dav/calendars/alice/${calendar}/`);
    assert.equal(made.status, 201, made.text);
    const token = await room();
    s.llm.enqueue(
      {
        toolCalls: [
          {
            id: 'c8',
            name: 'calendar_create_event',
            arguments: JSON.stringify({ calendar, title: 'Review plan', start: '2027-01-12T10:00:00', end: '2027-01-12T11:00:00', timezone: 'Europe/Berlin' }),
          },
        ],
      },
      { text: ['Planned.'] },
    );
    const answer = await s.ask('alice', token, `@${mention} plan a review on Jan 12 at 10`);
    assert.equal(answer.at(-1)?.message, 'Planned.', `an event without attendees runs without a question: ${text(answer)}`);
    const events = await s.nc.request('alice', 'PROPFIND', `/remote.php/dav/calendars/alice/${calendar}/`, { headers: { Depth: '1' } });
    const href = /<d:href>([^<]+\.ics)<\/d:href>/.exec(events.text)?.[1];
    assert.ok(href, `an event in the calendar: ${text(answer)}`);
    const ics = await s.nc.request('alice', 'GET', href);
    assert.match(ics.text, /SUMMARY:Review plan/);
    assert.match(ics.text, /TZID[=:]Europe\/Berlin/);
  });

  it('creates a Deck card on her board', async () => {
    const board = await s.nc.request('alice', 'POST', '/index.php/apps/deck/api/v1.0/boards', {
      headers: { 'OCS-APIRequest': 'true', 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: unique('Board'), color: '0082c9' }),
    });
    assert.equal(board.status, 200, board.text);
    const stack = await s.nc.request('alice', 'POST', `/index.php/apps/deck/api/v1.0/boards/${board.data.id}/stacks`, {
      headers: { 'OCS-APIRequest': 'true', 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 'Todo', order: 1 }),
    });
    assert.equal(stack.status, 200, stack.text);
    const token = await room();
    s.llm.enqueue(
      {
        toolCalls: [
          { id: 'c9', name: 'deck_create_card', arguments: JSON.stringify({ boardId: board.data.id, stackId: stack.data.id, title: 'Write the report' }) },
        ],
      },
      { text: ['Card added.'] },
    );
    const answer = await s.ask('alice', token, `@${mention} add a card`);
    const cards = await s.nc.request('alice', 'GET', `/index.php/apps/deck/api/v1.0/boards/${board.data.id}/stacks/${stack.data.id}`, {
      headers: { 'OCS-APIRequest': 'true' },
    });
    assert.equal(answer.at(-1)?.message, 'Card added.', text(answer));
    assert.deepEqual(
      (cards.data.cards ?? []).map((c: { title: string }) => c.title),
      ['Write the report'],
    );
  });

  it('creates and reads a Collectives page in her collective', async () => {
    const created = await s.nc.ocs('alice', 'POST', '/apps/collectives/api/v1.0/collectives', { name: unique('Wiki') });
    assert.equal(created.status, 200, created.text);
    const collective = created.data.collective as { id: number };
    const pages = await s.nc.ocs('alice', 'GET', `/apps/collectives/api/v1.0/collectives/${collective.id}/pages`);
    const landing = (pages.data.pages as Array<{ id: number; parentId: number }>).find((p) => p.parentId === 0)!;
    const token = await room();
    s.llm.enqueue(
      {
        toolCalls: [
          {
            id: 'c10',
            name: 'collectives_create_page',
            arguments: JSON.stringify({
              collective_id: collective.id,
              parent_id: landing.id,
              title: 'Meeting notes',
              content: '# Meeting notes\n\nAll agreed.',
            }),
          },
        ],
      },
      { text: ['Page created.'] },
    );
    const answer = await s.ask('alice', token, `@${mention} write the meeting notes`);
    assert.equal(answer.at(-1)?.message, 'Page created.', text(answer));
    const after = await s.nc.ocs('alice', 'GET', `/apps/collectives/api/v1.0/collectives/${collective.id}/pages`);
    const page = (after.data.pages as Array<{ id: number; title: string }>).find((p) => p.title === 'Meeting notes');
    assert.ok(page, `the page exists in the collective: ${text(answer)}`);
    const read = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c11', name: 'collectives_read_page', arguments: JSON.stringify({ collective_id: collective.id, page_id: page.id }) }] },
      { text: ['Read.'] },
    );
    await s.ask('alice', read, `@${mention} read the meeting notes`);
    assert.match(lastToolOutput(s.llm.chatRequests().at(-1)!), /All agreed/);
  });
});
