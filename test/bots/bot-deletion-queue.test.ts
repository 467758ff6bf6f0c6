// Deleting a bot while a user's request waits in the rate-limit queue: the user gets a final message in Talk.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { botDeletedText } from '../../lib/bots/bot-deletion.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

for (const dialect of DIALECTS) {
  describe(`deleting a bot with queued requests on ${dialect}`, () => {
    let s: TalkScenario;
    before(async () => {
      s = await startTalkScenario({ dialect, build: { queuePollMs: 0 } });
    });
    after(async () => s.close());

    it('tells the waiting user that the bot was deleted instead of leaving them in silence', async () => {
      const bot = await s.createBot({ mention: 'quizzer' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      const limits = await s.h.fetch('/api/v1/admin/ratelimit', {
        method: 'PUT',
        headers: s.h.browserHeaders('admin'),
        body: { enabled: true, chat: { instance: { second: null, minute: 1, hour: 1, day: 1 } } },
      });
      assert.equal(limits.status, 200, limits.text);

      s.llm.enqueue({ text: ['First answer.'] });
      await s.say(room, 'alice', '@quizzer first question');
      await s.idle();
      assert.equal(s.bot(room).at(-1)?.message, 'First answer.');
      const waiting = await s.say(room, 'alice', '@quizzer second question');
      await s.idle();
      assert.match(s.bot(room).at(-1)?.message ?? '', /queued/);
      assert.equal((await s.h.application.requestQueue.stats()).pending, 1);

      const deleted = await s.h.fetch(`/api/v1/admin/bots/${bot.id}`, { method: 'DELETE', headers: s.h.browserHeaders('admin') });
      assert.equal(deleted.status, 200, deleted.text);
      assert.equal(deleted.json.queuedRequestsDropped, 1);
      const notice = s.bot(room).at(-1);
      assert.deepEqual(notice, { message: botDeletedText('quizzer'), replyTo: waiting.id });
      assert.equal((await s.h.application.requestQueue.stats()).pending, 0);
      assert.equal(s.llm.chatRequests().length, 1, 'the queued request never reached the model');
    });

    it('tells them in their Nextcloud language', async () => {
      // The day's single model call went to the test above: this request waits in the queue.
      s.h.nc.addUser({ id: 'jonas', displayName: 'Jonas', groups: ['educai-students'], language: 'de' });
      const bot = await s.createBot({ mention: 'quizfrage' });
      const room = s.groupRoom();
      s.h.nc.addParticipant(room, { actorId: 'jonas', participantType: 3 });
      await s.onboard(room, bot, 'A', 'jonas');
      const waiting = await s.say(room, 'jonas', '@quizfrage noch eine Frage');
      await s.idle();
      assert.match(s.bot(room).at(-1)?.message ?? '', /^⏳ Die Anfrage steht in der Warteschlange/);
      const deleted = await s.h.fetch(`/api/v1/admin/bots/${bot.id}`, { method: 'DELETE', headers: s.h.browserHeaders('admin') });
      assert.equal(deleted.json.queuedRequestsDropped, 1, deleted.text);
      assert.deepEqual(s.bot(room).at(-1), {
        message: '⚠️ @quizfrage wurde gelöscht; die wartende Anfrage wird daher nicht beantwortet.',
        replyTo: waiting.id,
      });
    });
  });
}
