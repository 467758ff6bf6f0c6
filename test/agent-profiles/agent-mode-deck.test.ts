// Issue 11 with issue 10: a Deck tool assigned with an agent profile acts as the profile's account on
// every Deck call, only on the boards of its scope; the same tool without the profile acts as alice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import type { FakeDeckBoard, FakeDeckStack } from '../fakes/nextcloud/deck.ts';
import { AGENT_ACCOUNT_USERS, DEFAULT_USERS } from '../fakes/nextcloud/users.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

describe('a Deck tool run as an agent profile, through Talk', () => {
  let s: TalkScenario;
  let bot: Bot;
  let room: string;
  let teamBoard: FakeDeckBoard;
  let teamTodo: FakeDeckStack;
  let otherBoard: FakeDeckBoard;
  let otherTodo: FakeDeckStack;

  const api = (uid: string, method: string, path: string, body?: unknown) =>
    s.h.fetch(path, { method, headers: s.h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
  const createCard = async (board: FakeDeckBoard, stack: FakeDeckStack, title: string): Promise<void> => {
    s.llm.enqueue(
      { toolCalls: [{ name: 'deck_create_card', arguments: JSON.stringify({ boardId: board.id, stackId: stack.id, title }) }] },
      { text: ['Done.'] },
    );
    await s.say(room, 'alice', `@planner add "${title}"`);
    await s.idle();
  };
  const titles = (board: FakeDeckBoard) =>
    [...s.h.nc.deck.cards.values()].filter((c) => s.h.nc.deck.stacks.get(c.stackId)?.boardId === board.id).map((c) => c.title);

  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite', users: [...DEFAULT_USERS, ...AGENT_ACCOUNT_USERS] });
    // The service account's boards: one for the team, one the bot must not touch.
    teamBoard = s.h.nc.deck.createBoard('nuqloud-ai', 'Team board');
    teamTodo = s.h.nc.deck.addStack(teamBoard.id, 'To do', 1);
    otherBoard = s.h.nc.deck.createBoard('nuqloud-ai', 'Other board');
    otherTodo = s.h.nc.deck.addStack(otherBoard.id, 'To do', 1);
    // A personal bot: its owner changes its tools directly (a shared one would go through review, S9).
    bot = await s.h.application.bots.create({ mention: 'planner', displayName: 'Planner', systemPrompt: 'You plan.', visibility: 'personal' }, 'alice', {
      approvalStatus: 'personal',
    });
    await s.h.application.index.refresh();
    room = s.groupRoom();
    await s.onboard(room, bot, 'A');
  });
  after(async () => s.close());

  it('creates cards as nuqloud-ai on the granted board only, and as alice without the profile', async () => {
    const profile = await api('admin', 'POST', '/api/v1/admin/agent-profiles', {
      label: 'Team planner',
      accountUid: 'nuqloud-ai',
      scopeDescription: 'The team board',
      toolFamilies: ['deck'],
      triggerGroups: ['educai-students'],
      confirmGroups: ['educai-students'],
      enabled: true,
    });
    assert.equal(profile.status, 200, profile.text);
    const profileId = profile.json.profile.id as string;
    const grant = await api('admin', 'POST', `/api/v1/admin/agent-profiles/${profileId}/grants`, { botId: bot.id, maxScope: { boards: [teamBoard.id] } });
    assert.equal(grant.status, 200, grant.text);
    const outside = await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, {
      tools: [{ name: 'deck_create_card', config: { agentProfile: profileId, scope: { boards: [otherBoard.id] } } }],
    });
    assert.equal(outside.status, 400, outside.text);
    const saved = await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, {
      tools: [{ name: 'deck_create_card', config: { agentProfile: profileId, scope: { boards: [teamBoard.id] } } }],
    });
    assert.equal(saved.status, 200, saved.text);

    const mark = s.h.nc.deck.actors.length;
    await createCard(teamBoard, teamTodo, 'Plan the project week');
    assert.deepEqual(
      titles(teamBoard),
      ['Plan the project week'],
      s
        .bot(room)
        .map((m) => m.message)
        .join(' | '),
    );
    const actors = s.h.nc.deck.actors.slice(mark).map((a) => a.uid);
    assert.ok(actors.length >= 2);
    assert.deepEqual([...new Set(actors)], ['nuqloud-ai'], 'every Deck call of the tool ran as the service account');

    // The model names the other board: the scope refuses it, nothing is created there.
    await createCard(otherBoard, otherTodo, 'Sneaky card');
    assert.deepEqual(titles(otherBoard), []);
    const told = s.llm.chatRequests().at(-1)?.body as { messages?: Array<{ role: string; content: unknown }> };
    assert.match(String(told.messages?.filter((m) => m.role === 'tool').at(-1)?.content), /not one this bot may use/);

    const audit = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&tool=deck_create_card`);
    assert.equal(audit.status, 200, audit.text);
    const rows = audit.json.entries as Array<{ mode: string; profileId: string; invokerUid: string; actingUid: string; outcome: string }>;
    assert.ok(
      rows.some((r) => r.mode === 'agent' && r.profileId === profileId && r.invokerUid === 'alice' && r.actingUid === 'nuqloud-ai' && r.outcome === 'ok'),
      JSON.stringify(rows),
    );

    // Without the profile, the same tool acts as alice (who cannot see the service account's boards).
    const plain = await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, { tools: [{ name: 'deck_create_card', config: {} }] });
    assert.equal(plain.status, 200, plain.text);
    const before = s.h.nc.deck.actors.length;
    await createCard(teamBoard, teamTodo, 'As alice');
    assert.deepEqual(titles(teamBoard), ['Plan the project week'], 'alice has no access to that board');
    assert.deepEqual([...new Set(s.h.nc.deck.actors.slice(before).map((a) => a.uid))], ['alice']);
  });
});
