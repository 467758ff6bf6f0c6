import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

for (const dialect of DIALECTS) {
  describe(`Talk pipeline end to end on ${dialect}`, () => {
    let s: TalkScenario;
    before(async () => {
      s = await startTalkScenario({ dialect });
    });
    after(async () => s.close());

    it('registers the shared Talk bot on enable and keeps its secret only in the vault', async () => {
      const registered = s.h.nc.talkBots.get('/talk_bot') ?? s.h.nc.talkBots.get('talk_bot');
      assert.ok(registered, 'AppAPI got the registration');
      assert.equal(registered.name, 'Talk AI');
      const rows = await s.h.application.database.db.selectFrom('secrets').selectAll().execute();
      assert.ok(rows.some((r) => r.name === 'talk.bot-secret.talk_bot'));
      assert.ok(rows.every((r) => !r.ciphertext.includes(registered.secret)));
      // Re-registering is idempotent: same secret, one identity.
      const again = await s.h.fetch('/enabled?enabled=1', { method: 'PUT', headers: s.h.headers('') });
      assert.deepEqual(again.json, { error: '' });
      assert.equal((await s.h.application.database.db.selectFrom('talk_identities').selectAll().execute()).length, 1);
    });

    it('onboards on the first mention, then answers that first question', async () => {
      const bot = await s.createBot({ mention: 'tutor' });
      const room = s.groupRoom();
      const first = await s.say(room, 'alice', '@tutor What is a fraction?');
      await s.idle();
      const welcome = s.bot(room);
      assert.equal(welcome.length, 1);
      assert.match(welcome[0]!.message, /\*\*A\*\*|\bA\b/);
      assert.equal(welcome[0]!.replyTo, first.id);
      assert.equal(s.llm.chatRequests().length, 0, 'no model call during onboarding');

      s.llm.enqueue({ text: ['A fraction is a part ', 'of a whole.'] });
      const choice = await s.say(room, 'alice', 'A');
      await s.idle();
      const replies = s.bot(room).slice(1);
      assert.ok(replies.length >= 2, JSON.stringify(replies));
      assert.equal(replies[0]!.replyTo, choice.id, 'the onboarding result replies to the choice');
      assert.equal(replies.at(-1)!.message, 'A fraction is a part of a whole.');
      const body = s.llm.lastChatBody();
      const messages = body.messages as Array<{ role: string; content: string }>;
      assert.equal(messages[0]!.role, 'system');
      assert.match(messages.at(-1)!.content, /Alice \(alice\): What is a fraction\?/);
      assert.equal(body.model, 'fake-model');
      void bot;
    });

    it('streams paragraphs as separate messages with replyTo on the first only', async () => {
      const bot = await s.createBot({ mention: 'writer' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      const before = s.bot(room).length;
      s.llm.enqueue({ text: ['First paragraph.', '\n\nSecond ', 'paragraph.\n\n', 'Third paragraph.'] });
      const q = await s.say(room, 'bob', '@writer three paragraphs please');
      await s.idle();
      const replies = s.bot(room).slice(before);
      assert.deepEqual(
        replies.map((r) => r.message),
        ['First paragraph.', 'Second paragraph.', 'Third paragraph.'],
      );
      assert.deepEqual(
        replies.map((r) => r.replyTo),
        [q.id, null, null],
      );
      assert.ok(
        s.h.nc.botMessages.every((m) => m.signatureValid),
        'every bot message is signed correctly',
      );
      assert.ok(s.h.nc.botMessages.every((m) => m.referenceId && m.referenceId.length >= 32));
    });

    it('filters thinking, sending one placeholder, and splits at 32000 characters', async () => {
      const bot = await s.createBot({ mention: 'thinker' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      const before = s.bot(room).length;
      const long = 'x'.repeat(20000) + '. ' + 'y'.repeat(20000) + '.';
      s.llm.enqueue({ think: 'secret reasoning that must not leak', text: ['<think>more</think>', long] });
      await s.say(room, 'alice', '@thinker go');
      await s.idle();
      const replies = s.bot(room).slice(before);
      assert.match(replies[0]!.message, /thinking/);
      assert.ok(replies.every((r) => !r.message.includes('secret reasoning') && !r.message.includes('<think>')));
      const answer = replies.slice(1);
      assert.ok(answer.length >= 2, 'the long answer is split');
      assert.ok(answer.every((r) => [...r.message].length <= 32000));
      assert.equal(
        answer
          .map((r) => r.message)
          .join('')
          .replace(/\s/g, ''),
        long.replace(/\s/g, ''),
      );
    });

    it('tells the user about an error after a partial stream, without provider details', async () => {
      const bot = await s.createBot({ mention: 'flaky' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      const before = s.bot(room).length;
      s.llm.enqueue({ text: ['Partial paragraph.\n\n', 'more', ' text', ' never'], failAfterChunks: 2 });
      await s.say(room, 'alice', '@flaky explain');
      await s.idle();
      const replies = s.bot(room).slice(before);
      assert.equal(replies[0]!.message, 'Partial paragraph.');
      const last = replies.at(-1)!.message;
      assert.match(last, /interrupted/i);
      assert.ok(!last.includes('127.0.0.1') && !last.includes('http') && !last.includes(LLM_KEY_FRAGMENT));
    });

    it('answers messages of one room in order', async () => {
      const bot = await s.createBot({ mention: 'orderly' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      const before = s.bot(room).length;
      s.llm.enqueue({ text: ['Answer one.'], delayMs: 150 }, { text: ['Answer two.'] });
      const one = await s.say(room, 'alice', '@orderly one');
      const two = await s.say(room, 'bob', '@orderly two');
      await s.idle();
      const replies = s.bot(room).slice(before);
      assert.deepEqual(
        replies.map((r) => [r.message, r.replyTo]),
        [
          ['Answer one.', one.id],
          ['Answer two.', two.id],
        ],
      );
    });

    it('routes two bots by their own mentions only, never inside a URL', async () => {
      const a = await s.createBot({ mention: 'alpha' });
      const b = await s.createBot({ mention: 'beta' });
      const room = s.groupRoom();
      await s.onboard(room, a, 'A');
      await s.onboard(room, b, 'A');
      const before = s.bot(room).length;
      const calls = s.llm.chatRequests().length;
      await s.say(room, 'alice', 'see https://example.org/@alpha and docs/beta for details');
      await s.idle();
      assert.equal(s.bot(room).length, before, 'no answer to mentions inside links or paths');
      s.llm.enqueue({ text: ['Beta here.'] });
      await s.say(room, 'bob', 'hey @beta, who are you?');
      await s.idle();
      assert.equal(s.llm.chatRequests().length, calls + 1, 'exactly one model call');
      const sys = (s.llm.lastChatBody().messages as Array<{ content: string }>)[0]!.content;
      assert.match(sys, /@beta/);
      // Two bots share the "Talk AI" identity here, so the answer names its bot (feature row 13).
      assert.deepEqual(
        s
          .bot(room)
          .slice(before)
          .map((r) => r.message),
        ['**beta:** Beta here.'],
      );
    });

    it('lets only moderators reset a bot, politely refusing others', async () => {
      const bot = await s.createBot({ mention: 'resettable' });
      const room = s.groupRoom();
      await s.onboard(room, bot, 'A');
      s.llm.enqueue({ text: ['Remembered.'] });
      await s.say(room, 'alice', '@resettable remember 42');
      await s.idle();
      const before = s.bot(room).length;
      await s.say(room, 'bob', '((RESET)) @resettable');
      await s.idle();
      assert.match(s.bot(room)[before]!.message, /Only moderators/);
      assert.ok(await s.h.application.database.db.selectFrom('room_states').select('bot_id').where('bot_id', '=', bot.id).executeTakeFirst());
      await s.say(room, 'alice', '((RESET)) @resettable');
      await s.idle();
      assert.match(s.bot(room).at(-1)!.message, /has been reset/);
      const memory = await s.h.application.database.db.selectFrom('conversation_messages').select('id').where('bot_id', '=', bot.id).execute();
      assert.equal(memory.length, 0, 'memory wiped');
    });

    it('answers every message in always-mode, but only for moderator choices', async () => {
      const bot = await s.createBot({ mention: 'always' });
      const room = s.groupRoom();
      // bob is no moderator: B is refused for him.
      await s.say(room, 'bob', '@always');
      await s.idle();
      await s.say(room, 'bob', 'B');
      await s.idle();
      assert.match(s.bot(room).at(-1)!.message, /moderator/i);
      await s.say(room, 'alice', 'B');
      await s.idle();
      s.llm.enqueue({ text: ['Plain answer.'] });
      await s.say(room, 'bob', 'a plain question without mention');
      await s.idle();
      assert.equal(s.bot(room).at(-1)!.message, 'Plain answer.');
      void bot;
    });
  });
}

const LLM_KEY_FRAGMENT = 'sk-test-provider';
