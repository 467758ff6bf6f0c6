// Feature row 13: in a room with several of our bots, an answer through the shared "Talk AI"
// identity starts with the answering bot's name; a bot's own Talk identity and a room with one
// bot stay unnamed. The name is Talk's only: the model and the memory see the bot's own words.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { dedicatedRoute } from '../../lib/bots/dedicated-talk-bots.ts';
import { SHARED_ROUTE } from '../../lib/talk/talk-identities.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

for (const dialect of DIALECTS) {
  describe(`bot names on the shared identity on ${dialect}`, () => {
    let s: TalkScenario;
    let helper: Bot;
    let tutor: Bot;
    before(async () => {
      s = await startTalkScenario({ dialect });
      helper = await s.createBot({ mention: 'helper', displayName: 'Helper' });
      tutor = await s.createBot({ mention: 'tutor', displayName: 'Tutor' });
    });
    after(async () => s.close());

    const messages = (token: string, from: number) =>
      s
        .bot(token)
        .slice(from)
        .map((m) => m.message);

    it('a room with one bot: answers are not named', async () => {
      const room = s.groupRoom();
      await s.onboard(room, helper, 'A');
      const before = s.bot(room).length;
      s.llm.enqueue({ text: ['Just me here.'] });
      await s.say(room, 'alice', '@helper who answers?');
      await s.idle();
      assert.deepEqual(messages(room, before), ['Just me here.']);
    });

    it('a room with two bots: each answer names its bot in its first message only, and the model never sees the name', async () => {
      const room = s.groupRoom();
      await s.onboard(room, helper, 'A');
      await s.onboard(room, tutor, 'A');
      let before = s.bot(room).length;
      s.llm.enqueue({ text: ['Fractions are parts.\n\n', 'Halves and quarters.'] });
      const q = await s.say(room, 'bob', '@tutor what are fractions?');
      await s.idle();
      assert.deepEqual(messages(room, before), ['**Tutor:** Fractions are parts.', 'Halves and quarters.']);
      assert.equal(s.bot(room)[before]?.replyTo, q.id, 'the name is part of the first message, which still replies');

      before = s.bot(room).length;
      s.llm.enqueue({ text: ['I can help with that.'] });
      await s.say(room, 'alice', '@helper can you help?');
      await s.idle();
      assert.deepEqual(messages(room, before), ['**Helper:** I can help with that.']);

      // The tutor's next turn carries its earlier answer from memory, without the name.
      s.llm.enqueue({ text: ['Yes.'] });
      await s.say(room, 'bob', '@tutor and thirds?');
      await s.idle();
      const sent = JSON.stringify(s.llm.lastChatBody().messages);
      assert.match(sent, /Fractions are parts\./);
      assert.doesNotMatch(sent, /\*\*Tutor:\*\*|\*\*Helper:\*\*/);
      const stored = await s.h.application.database.db.selectFrom('reply_chunks').select('text').execute();
      assert.ok(
        stored.every((r) => !r.text.startsWith('**Tutor:**') && !r.text.startsWith('**Helper:**')),
        "the reply log keeps the bot's own words",
      );
    });

    it('a bot answering through its own Talk identity is not named; the other bot on the shared identity is', async () => {
      const registered = await s.h.fetch(`/api/v1/admin/bots/${helper.id}/talk-identity`, {
        method: 'POST',
        headers: s.h.browserHeaders('admin'),
        body: { name: 'Helper' },
      });
      assert.equal(registered.status, 200, registered.text);
      await s.h.application.index.refresh();
      const room = s.groupRoom();
      s.h.nc.enableBotInRoom(room, dedicatedRoute(helper.id));
      // Talk delivers to every enabled bot; the helper's own identity first, so the room is known to have it.
      const sayThrough = async (text: string) => {
        const msg = s.h.nc.postMessage(room, { actorType: 'users', actorId: 'alice' }, text);
        for (const route of [dedicatedRoute(helper.id), SHARED_ROUTE]) {
          const r = await s.h.fetch(`/${route}`, {
            method: 'POST',
            headers: { ...s.h.headers(''), 'Content-Type': 'application/json' },
            body: s.h.nc.webhookBodyFor(msg, { route }),
          });
          assert.equal(r.status, 200, r.text);
        }
        await s.idle();
        return msg;
      };
      const byActor = new Map([...s.h.nc.talk.bots.values()].map((b) => [`bot-${b.urlHash}`, b.route]));
      const answersAfter = (id: number) =>
        s.h.nc.talk
          .room(room)
          .messages.filter((m) => m.id > id && m.actorType === 'bots')
          .map((m) => ({ route: byActor.get(m.actorId) ?? '?', text: m.message }));
      await sayThrough('@helper hi');
      await sayThrough('A');
      await sayThrough('@tutor hi');
      await sayThrough('A');
      s.llm.enqueue({ text: ['Own voice.'] });
      const toHelper = await sayThrough('@helper where?');
      assert.deepEqual(answersAfter(toHelper.id), [{ route: dedicatedRoute(helper.id), text: 'Own voice.' }]);
      s.llm.enqueue({ text: ['Shared voice.'] });
      const toTutor = await sayThrough('@tutor where?');
      assert.deepEqual(answersAfter(toTutor.id), [{ route: SHARED_ROUTE, text: '**Tutor:** Shared voice.' }]);
    });
  });
}
