// Confirm with a 👍 through the whole application (issue 23): the request posted by the server,
// alice's reaction in the fake Talk, Talk's Like webhook through the intake (a hint only: nothing is
// stored), the reaction read as alice in the processing side, the action run once and ✅ posted.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { startTalkScenario, waitFor, type TalkScenario } from '../helpers/talk-scenario.ts';

const capture = JSON.parse(readFileSync(new URL('../fixtures/nextcloud33/talk-21-reactions.json', import.meta.url), 'utf8')) as {
  '17-webhooks-after-reaction-feature': { webhooksReceivedByExApp: Array<{ rawBody: string }> };
};

describe('confirm with a 👍 through the application (issue 23)', () => {
  let s: TalkScenario;
  let bot: Bot;
  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite' });
    bot = await s.createBot({ mention: 'assistant' });
    await s.h.application.toolAssignments.replace(bot.id, [{ name: 'files_delete', config: {} }]);
  });
  after(async () => s.close());

  it("Talk's captured Like and Undo webhooks are only a hint: answered 200, nothing stored", async () => {
    const seen: Array<[string, string]> = [];
    const processing = s.h.application.processing;
    const original = processing.reactionSeen;
    processing.reactionSeen = (room, id) => void seen.push([room, id]);
    try {
      const before = await s.h.application.inbox.pendingCount();
      for (const w of capture['17-webhooks-after-reaction-feature'].webhooksReceivedByExApp) {
        const r = await s.deliver(w.rawBody);
        assert.equal(r.status, 200, JSON.stringify(r.json));
      }
      assert.deepEqual(
        seen,
        [
          ['nn5awd8i', '7'],
          ['nn5awd8i', '7'],
          ['nn5awd8i', '7'],
        ],
        'each Like, none for the Undo or the Activity',
      );
      assert.equal(await s.h.application.inbox.pendingCount(), before, 'no inbox row');
    } finally {
      processing.reactionSeen = original;
    }
  });

  it("with the reaction feature: bob's 👍 does nothing, alice's 👍 deletes once and the bot reacts ✅", async () => {
    const nc = s.h.nc;
    nc.talk.setBotFeatures('talk_bot', ['webhook', 'response', 'reaction']);
    // AppAPI forwards Talk's webhooks to the ExApp.
    nc.talk.webhookHandler = async (d) => void (await s.deliver(d.body));
    try {
      nc.dav.files.putFile('alice', 'old.md', 'old notes');
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      s.llm.enqueue({ toolCalls: [{ id: 'c1', name: 'files_delete', arguments: '{"path":"old.md"}' }] }, { text: ['Please confirm.'] });
      await s.say(room, 'alice', '@assistant delete old.md');
      await s.idle();
      const request = nc.talk
        .room(room)
        .messages.find((m) => m.actorType === 'bots' && m.systemMessage === '' && /old\.md/.test(m.message) && /Confirmation needed/.test(m.message));
      assert.ok(request, 'the server posted the request');
      const reactionReads = () => nc.calls.filter((c) => c.method === 'GET' && c.path.includes(`/reaction/${room}/${request.id}`)).length;
      await waitFor(() => reactionReads() > 0, 'the first read of the request', 15_000);

      const r0 = reactionReads();
      assert.equal((await nc.talk.userReaction(room, 'bob', request.id, '👍', 'POST')).status, 201);
      await waitFor(() => reactionReads() > r0, "a read after bob's Like", 15_000);
      await s.idle();
      assert.equal(nc.dav.files.read('alice', 'old.md'), 'old notes', "bob's 👍 does nothing");

      assert.equal((await nc.talk.userReaction(room, 'alice', request.id, '👍', 'POST')).status, 201);
      await waitFor(() => nc.dav.files.read('alice', 'old.md') === null, "alice's 👍 to run the delete", 15_000);
      await waitFor(() => nc.talk.botReactions.some((r) => r.messageId === request.id && r.reaction === '✅' && r.status === 201), 'the bot ✅', 15_000);
      await waitFor(() => s.bot(room).some((m) => /Done: delete the file \/old\.md/.test(m.message)), 'the answer', 15_000);
      assert.equal(nc.dav.files.trashOf('alice').length, 1, 'deleted once');
      for (const c of nc.calls.filter((x) => x.path.includes(`/reaction/${room}/`) && x.method === 'GET'))
        assert.equal(c.user, 'alice', 'read as the requester');
    } finally {
      nc.talk.webhookHandler = null;
      nc.talk.setBotFeatures('talk_bot', ['webhook', 'response']);
    }
  });
});
