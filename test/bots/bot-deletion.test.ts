import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { dedicatedRoute } from '../../lib/bots/dedicated-talk-bots.ts';
import { ConversationMemory } from '../../lib/conversation/memory.ts';
import { OnboardingService } from '../../lib/router/onboarding.ts';
import { withToolTables } from '../../lib/storage/tables/tool-tables.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { freshMention, READ_TOOL, startWorld, type World } from './governance-world.ts';

for (const dialect of DIALECTS) {
  describe(`bot deletion on ${dialect}`, () => {
    let w: World;
    const removedByOwners: string[] = [];
    before(async () => {
      w = await startWorld(dialect);
      w.owners.push({ name: 'knowledge', removeBot: async (id) => void removedByOwners.push(id) });
    });
    after(async () => w.close());

    /** A global bot with a pending edit, its own Talk bot, memory, room state, tools, a queued request and a trace. */
    async function populated(): Promise<Bot> {
      const db = w.tdb.db;
      const made = await w.governance.create(w.user('admin'), {
        displayName: 'Full',
        mention: freshMention('full'),
        visibility: 'global',
        tools: [{ name: READ_TOOL }],
      });
      await w.dedicated.register(made, 'Full bot');
      await w.governance.update(w.user('admin'), made.id, { systemPrompt: 'pending' });
      await w.identities.sawRoom('room1234', dedicatedRoute(made.id));
      await new OnboardingService(db).start(made, 'room1234', 'student', null);
      await new ConversationMemory(db).append({
        botId: made.id,
        roomToken: 'room1234',
        threadId: null,
        invokerUid: null,
        role: 'user',
        authorUid: 'student',
        messageId: '7',
        content: 'hi',
      });
      await w.queue.enqueue({ botId: made.id, roomToken: 'room1234', route: 'talk_bot', inboxPayload: { x: 1 }, uid: 'student', replyTo: '7' });
      await w.traces.startRun({
        uid: 'student',
        botId: made.id,
        botMention: made.mention,
        roomToken: 'room1234',
        messageId: '7',
        source: 'talk',
        userText: 'hi',
      });
      return w.governance.require(made.id);
    }

    async function rowsOf(botId: string): Promise<Record<string, number>> {
      const db = w.tdb.db;
      const count = async (q: Promise<unknown[]>) => (await q).length;
      return {
        bots: await count(db.selectFrom('bots').select('id').where('id', '=', botId).execute()),
        versions: await count(db.selectFrom('bot_versions').select('id').where('bot_id', '=', botId).execute()),
        tools: await count(withToolTables(db).selectFrom('bot_tools').select('tool_name').where('bot_id', '=', botId).execute()),
        memory: await count(db.selectFrom('conversation_messages').select('id').where('bot_id', '=', botId).execute()),
        roomStates: await count(db.selectFrom('room_states').select('bot_id').where('bot_id', '=', botId).execute()),
        queue: await count(db.selectFrom('request_queue').select('id').where('bot_id', '=', botId).execute()),
        traces: await count(db.selectFrom('trace_runs').select('id').where('bot_id', '=', botId).execute()),
        identities: await count(db.selectFrom('talk_identities').select('route').where('bot_id', '=', botId).execute()),
        roomIdentities: await count(db.selectFrom('room_identities').select('route').where('route', '=', dedicatedRoute(botId)).execute()),
      };
    }

    it('removes everything that belongs to the bot and only that, and anonymises its traces', async () => {
      const gone = await populated();
      const kept = await populated();
      const full = { bots: 1, versions: 2, tools: 1, memory: 1, roomStates: 1, queue: 1, traces: 1, identities: 1, roomIdentities: 1 };
      assert.deepEqual(await rowsOf(gone.id), full);
      assert.ok(w.nc.talk.botByRoute(dedicatedRoute(gone.id)), 'its own Talk bot is registered');

      const res = await w.api('admin', 'delete', `/api/v1/admin/bots/${gone.id}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { success: true, queuedRequestsDropped: 1, tracesAnonymised: 1 });
      assert.deepEqual(await rowsOf(gone.id), {
        bots: 0,
        versions: 0,
        tools: 0,
        memory: 0,
        roomStates: 0,
        queue: 0,
        traces: 0,
        identities: 0,
        roomIdentities: 0,
      });
      const runs = await w.tdb.db.selectFrom('trace_runs').select(['bot_id', 'bot_mention']).where('bot_mention', '=', gone.mention).execute();
      assert.deepEqual(runs, [{ bot_id: null, bot_mention: gone.mention }], 'the user keeps the trace, without the bot');
      assert.equal(w.nc.talk.botByRoute(dedicatedRoute(gone.id)), undefined, 'the Talk bot is unregistered through AppAPI');
      assert.deepEqual(removedByOwners, [gone.id], 'knowledge and other owners are told');

      assert.deepEqual(await rowsOf(kept.id), full, 'the other bot is untouched');
      assert.ok(w.nc.talk.botByRoute(dedicatedRoute(kept.id)));
      assert.equal((await w.api('admin', 'delete', `/api/v1/admin/bots/${gone.id}`)).status, 404);
    });

    it('keeps the bot when its Talk bot cannot be unregistered, so the deletion can be retried', async () => {
      const bot = await populated();
      w.nc.failNext(
        { method: 'DELETE', path: /\/apps\/app_api\/api\/v1\/talk_bot$/ },
        { status: 500, body: '{"ocs":{"meta":{"status":"failure","statuscode":500,"message":""},"data":[]}}' },
      );
      const res = await w.api('admin', 'delete', `/api/v1/bots/${bot.id}`);
      assert.equal(res.status, 502, res.text);
      assert.equal((await rowsOf(bot.id)).bots, 1);
      assert.ok(w.nc.talk.botByRoute(dedicatedRoute(bot.id)));
      const retry = await w.api('admin', 'delete', `/api/v1/bots/${bot.id}`);
      assert.equal(retry.status, 200);
      assert.equal((await rowsOf(bot.id)).bots, 0);
    });
  });
}
