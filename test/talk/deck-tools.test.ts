import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { lastToolOutput } from '../fakes/openai/fake-openai.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';
import { seedDeck, type DeckSeed } from '../tools/deck/deck-seed.ts';

describe('Deck tools driven by Talk, as alice (issue 11, Deck part, end to end)', () => {
  let s: TalkScenario;
  let bot: Bot;
  let d: DeckSeed;
  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite' });
    d = seedDeck(s.h.nc.deck);
    bot = await s.createBot({ mention: 'planner' });
    const names = Object.keys(s.h.application.registry.metadata()).filter((n) => n.startsWith('deck_'));
    assert.ok(names.includes('deck_create_card') && names.includes('deck_add_comment'));
    await s.h.application.toolAssignments.replace(
      bot.id,
      names.map((name) => ({ name, config: {} })),
    );
  });
  after(async () => s.close());

  it('creates a card with a label and a due date, then comments on it after alice confirms', async () => {
    const room = s.groupRoom();
    await s.onboard(room, bot, 'A');
    s.h.nc.reset();
    const cardsBefore = new Set(s.h.nc.deck.cards.keys());
    s.llm.enqueue({
      toolCalls: [
        {
          id: 'd1',
          name: 'deck_create_card',
          arguments: JSON.stringify({
            boardId: d.board.id,
            stackId: d.todo.id,
            title: 'Grade fractions quiz',
            dueDate: '2027-03-05T17:00:00',
            timezone: 'Europe/Berlin',
            labels: ['AI'],
          }),
        },
      ],
    });
    s.llm.responder = (req) => {
      const created = JSON.parse(lastToolOutput(req)) as { created?: { id?: number } };
      s.llm.responder = () => ({ text: ['I created the card; please confirm the comment.'] });
      return {
        toolCalls: [
          {
            id: 'd2',
            name: 'deck_add_comment',
            arguments: JSON.stringify({ boardId: d.board.id, cardId: created.created?.id, message: 'Rubric is in the shared folder.' }),
          },
        ],
      };
    };
    await s.say(
      room,
      'alice',
      '@planner put "Grade fractions quiz" on the EducAI board, label AI, due March 5 at 17:00 Berlin time, and note that the rubric is in the shared folder',
    );
    await s.idle();

    const created = [...s.h.nc.deck.cards.values()].filter((c) => !cardsBefore.has(c.id));
    assert.equal(
      created.length,
      1,
      s
        .bot(room)
        .map((m) => m.message)
        .join(' | '),
    );
    const card = created[0]!;
    assert.equal(card.title, 'Grade fractions quiz');
    assert.equal(card.stackId, d.todo.id);
    assert.equal(card.duedate, '2027-03-05T16:00:00+00:00');
    assert.deepEqual(card.labels, [d.ai.id]);

    // The card's creation is a tool result in this turn (S6): the comment waits for alice.
    const comments = () => [...s.h.nc.deck.comments.values()].filter((c) => c.cardId === card.id);
    assert.equal(comments().length, 0);
    const request = s.bot(room).find((m) => /\b\d{4,8}\b/.test(m.message) && /Rubric is in the shared folder/.test(m.message));
    assert.ok(
      request,
      `the server asked to confirm the comment: ${s
        .bot(room)
        .map((m) => m.message)
        .join(' | ')}`,
    );
    const code = /\b(\d{4,8})\b/.exec(request.message)![1]!;
    await s.say(room, 'bob', `@planner yes ${code}`);
    await s.idle();
    assert.equal(comments().length, 0, 'bob cannot confirm for alice');
    await s.say(room, 'alice', `@planner yes ${code}`);
    await s.idle();
    assert.deepEqual(
      comments().map((c) => [c.actorId, c.message]),
      [['alice', 'Rubric is in the shared folder.']],
    );
    await s.say(room, 'alice', `@planner yes ${code}`);
    await s.idle();
    assert.equal(comments().length, 1, 'a second yes does nothing');

    // Every Deck call ran as alice, the invoking user.
    const deckActors = s.h.nc.deck.actors;
    assert.ok(deckActors.length >= 5);
    assert.deepEqual([...new Set(deckActors.map((a) => a.uid))], ['alice']);
    assert.deepEqual(s.h.nc.headerViolations, []);
  });

  it('sets up a board from Talk: creates it, adds stacks in place and a label; deleting the label waits for alice', async () => {
    const room = s.groupRoom();
    await s.onboard(room, bot, 'A');
    /** One turn with one tool call; a confirmation the server asks for (S6 taint of the room's history) is given by alice. */
    const turn = async (text: string, name: string, args: Record<string, unknown>, confirm = true): Promise<string | null> => {
      const before = s.bot(room).length;
      s.llm.enqueue({ toolCalls: [{ id: 't1', name, arguments: JSON.stringify(args) }] });
      s.llm.responder = () => ({ text: ['Done.'] });
      await s.say(room, 'alice', `@planner ${text}`);
      await s.idle();
      const asked =
        s
          .bot(room)
          .slice(before)
          .map((m) => /Confirmation needed\*\* \(code (\d{4,8})\)/.exec(m.message)?.[1])
          .find(Boolean) ?? null;
      if (asked && confirm) {
        await s.say(room, 'alice', `@planner yes ${asked}`);
        await s.idle();
      }
      return asked;
    };
    const boardsBefore = new Set(s.h.nc.deck.boards.keys());
    await turn('make a board "Science fair"', 'deck_create_board', { title: 'Science fair' });
    const board = [...s.h.nc.deck.boards.values()].find((b) => !boardsBefore.has(b.id));
    assert.ok(
      board,
      s
        .bot(room)
        .slice(-2)
        .map((m) => m.message)
        .join(' | '),
    );
    assert.deepEqual([board.title, board.owner, board.acl], ['Science fair', 'alice', []]);
    const columns = () =>
      [...s.h.nc.deck.stacks.values()]
        .filter((x) => x.boardId === board.id)
        .sort((a, b) => a.order - b.order || a.id - b.id)
        .map((x) => x.title);
    await turn('add a stack To do', 'deck_create_stack', { boardId: board.id, title: 'To do' });
    await turn('add a stack Done', 'deck_create_stack', { boardId: board.id, title: 'Done' });
    await turn('put a stack Doing in the middle', 'deck_create_stack', { boardId: board.id, title: 'Doing', position: 1 });
    assert.deepEqual(
      columns(),
      ['To do', 'Doing', 'Done'],
      s
        .bot(room)
        .slice(-3)
        .map((m) => m.message)
        .join(' | '),
    );
    await turn('rename Done to Finished and put it first', 'deck_update_stack', {
      boardId: board.id,
      stackId: [...s.h.nc.deck.stacks.values()].find((x) => x.boardId === board.id && x.title === 'Done')?.id,
      title: 'Finished',
      position: 0,
    });
    assert.deepEqual(columns(), ['Finished', 'To do', 'Doing']);

    await turn('add a label "Needs material"', 'deck_create_label', { boardId: board.id, title: 'Needs material', color: 'ff7a66' });
    const label = board.labels.find((l) => l.title === 'Needs material');
    assert.ok(
      label,
      s
        .bot(room)
        .slice(-2)
        .map((m) => m.message)
        .join(' | '),
    );
    // Deleting is always confirmed, whatever the turn's taint.
    const code = await turn('delete the label "Needs material"', 'deck_delete_label', { boardId: board.id, labelId: label.id }, false);
    assert.ok(code, 'the deletion waits for a confirmation');
    assert.ok(
      board.labels.some((l) => l.id === label.id),
      'not deleted before the confirmation',
    );
    await s.say(room, 'bob', `@planner yes ${code}`);
    await s.idle();
    assert.ok(
      board.labels.some((l) => l.id === label.id),
      'bob cannot confirm for alice',
    );
    await s.say(room, 'alice', `@planner yes ${code}`);
    await s.idle();
    assert.ok(!board.labels.some((l) => l.id === label.id));
    assert.deepEqual([...new Set(s.h.nc.deck.actors.map((a) => a.uid))], ['alice']);
  });
});
