import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BotStore } from '../../lib/bots/bot-store.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { ExAppProcess, exAppEnv, freePort } from '../helpers/exapp-process.ts';
import { TEST_SECRET, waitFor } from '../helpers/harness.ts';
import { LLM_KEY } from '../helpers/talk-scenario.ts';

for (const dialect of DIALECTS) {
  describe(`kill and restart on ${dialect}`, () => {
    let nc: FakeNextcloud;
    let llm: FakeOpenAI;
    let tdb: TestDatabase;
    let app: ExAppProcess;
    let room: string;
    const system = () => ({
      'EX-APP-ID': 'educai',
      'EX-APP-VERSION': '0.1.0',
      'AUTHORIZATION-APP-API': Buffer.from(`:${TEST_SECRET}`).toString('base64'),
      'Content-Type': 'application/json',
    });
    const say = async (uid: string, text: string) => {
      const msg = nc.postMessage(room, { actorType: 'users', actorId: uid }, text);
      const r = await fetch(`${app.url}/talk_bot`, { method: 'POST', headers: system(), body: nc.webhookBodyFor(msg) });
      assert.equal(r.status, 200);
      return msg;
    };
    const replies = () => nc.botMessages.filter((m) => m.token === room && m.status === 201).map((m) => m.message);

    before(async () => {
      nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
      llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY });
      tdb = await createTestDatabase(dialect);
      await new BotStore(tdb.db).create({ displayName: 'Tutor', mention: 'tutor', systemPrompt: 'You teach.' }, 'alice');
      await tdb.close();
      app = new ExAppProcess(await freePort(), exAppEnv(nc.url, tdb));
      await app.start();
      assert.deepEqual(await (await fetch(`${app.url}/enabled?enabled=1`, { method: 'PUT', headers: system() })).json(), { error: '' });
      const admin = { ...system(), 'AUTHORIZATION-APP-API': Buffer.from(`admin:${TEST_SECRET}`).toString('base64'), requesttoken: 't' };
      const saved = await fetch(`${app.url}/api/v1/admin/settings`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ primaryEndpoint: llm.url, primaryKey: LLM_KEY, defaultModel: 'primary:fake-model' }),
      });
      assert.equal(saved.status, 200);
      // The fake provider listens on 127.0.0.1, which the egress module reaches only when allow-listed (S18).
      const egress = await fetch(`${app.url}/api/v1/admin/egress`, { method: 'PUT', headers: admin, body: JSON.stringify({ allowList: ['127.0.0.1'] }) });
      assert.equal(egress.status, 200);
      room = nc.createRoom({ name: 'Restart', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] }).token;
      nc.enableBotInRoom(room, 'talk_bot');
      await say('alice', '@tutor');
      await waitFor(() => replies().length === 1, 'the onboarding question');
      await say('alice', 'A');
      await waitFor(() => replies().length === 2, 'the onboarding answer');
    });
    after(async () => {
      await app.kill();
      await nc.close();
      await llm.close();
      await tdb.drop();
    });

    it('completes an event that was accepted but not finished before a crash, without repeating posted chunks', async () => {
      const before = replies().length;
      // Slow stream: the first paragraph arrives, then the process dies mid-answer.
      llm.enqueue({ text: ['First paragraph.\n\n', 'Second', ' paragraph', ' that', ' never', ' arrives.'], tokensPerSecond: 2 });
      await say('alice', '@tutor tell me two things');
      await waitFor(() => replies().length === before + 1, 'the first chunk');
      await app.kill();
      assert.deepEqual(replies().slice(before), ['First paragraph.']);

      llm.enqueue({ text: ['Second paragraph, continued.'] });
      await app.start();
      await waitFor(() => replies().length >= before + 2, 'the resumed answer', 20_000);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(replies().slice(before), ['First paragraph.', 'Second paragraph, continued.']);
      const resumed = llm.lastChatBody().messages as Array<{ role: string; content: string }>;
      assert.match(resumed[0]!.content, /interrupted[\s\S]*First paragraph\./i, 'the model continues after what was posted');
    });

    it('processes an event accepted just before a crash', async () => {
      const before = replies().length;
      llm.enqueue({ text: ['Late but there.'], delayMs: 1500 });
      await say('alice', '@tutor are you there?');
      await app.kill();
      await app.start();
      await waitFor(() => replies().length === before + 1, 'the answer after restart', 20_000);
      assert.equal(replies().at(-1), 'Late but there.');
    });
  });
}
