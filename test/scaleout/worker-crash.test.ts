import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { TEST_SECRET, waitFor } from '../helpers/harness.ts';
import { Cluster, LLM_KEY } from './cluster.ts';

const LEASE_SECONDS = 3;

describe('scale-out: kill -9 of a worker in the middle of a streamed answer', () => {
  let nc: FakeNextcloud;
  let llm: FakeOpenAI;
  let cluster: Cluster;

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY });
    cluster = await Cluster.create(nc, { rooms: 1, env: { EDUCAI_INBOX_LEASE_SECONDS: String(LEASE_SECONDS) } });
    await cluster.start('web');
    await cluster.configure(llm.url);
    await cluster.start('worker');
    await cluster.start('worker');
  });
  after(async () => {
    await cluster?.close();
    await nc?.close();
    await llm?.close();
  });

  it("finishes the dead worker's turn on another worker after its lease, without repeating a posted chunk", async () => {
    const room = cluster.rooms[0]!;
    llm.enqueue({ text: ['First paragraph.\n\n', 'Second', ' paragraph', ' that', ' never', ' arrives.'], tokensPerSecond: 2 });
    await cluster.say(room, 'alice', '@tutor tell me two things');
    await waitFor(() => cluster.replies(room).length === 1, 'the first chunk', 30_000);

    // The lease names the worker that holds the turn (host-pid-random).
    const held = await cluster.db.db.selectFrom('inbox_progress').select(['inbox_id', 'lease_owner']).where('status', '=', 'processing').execute();
    assert.equal(held.length, 1);
    const pid = Number(/-(\d+)-[0-9a-f]{8}$/.exec(held[0]!.lease_owner ?? '')?.[1]);
    const holder = cluster.processes.find((p) => p.role === 'worker' && p.app.child?.pid === pid);
    assert.ok(holder, 'a worker process holds the turn');
    await holder.app.kill('SIGKILL');
    assert.deepEqual(cluster.replies(room), ['First paragraph.']);

    llm.enqueue({ text: ['Second paragraph, continued.'] });
    await waitFor(() => cluster.replies(room).length >= 2, 'the resumed answer on the other worker', LEASE_SECONDS * 1000 + 20_000);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(cluster.replies(room), ['First paragraph.', 'Second paragraph, continued.'], 'no chunk repeated');
    const resumed = llm.lastChatBody().messages as Array<{ role: string; content: string }>;
    assert.match(resumed[0]!.content, /interrupted[\s\S]*First paragraph\./i, 'the model continues after what was posted');
    const row = await cluster.db.db
      .selectFrom('inbox_progress')
      .select(['status', 'attempts'])
      .where('inbox_id', '=', held[0]!.inbox_id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'done');
    assert.equal(row.attempts, 2, 'claimed once by each worker');
  });
});
