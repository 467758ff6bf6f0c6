import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { TEST_SECRET, waitFor } from '../helpers/harness.ts';
import { asUser, Cluster, LLM_KEY } from './cluster.ts';

const ROOMS = 6;
const handled = (logFile: string) =>
  readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"Talk event handled"')).length;

describe('scale-out: a bot edited through the web process', () => {
  let nc: FakeNextcloud;
  let llm: FakeOpenAI;
  let cluster: Cluster;

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    // Slow enough that each worker (one conversation at a time) takes some of the rooms.
    llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY, responder: () => ({ text: ['Noted.'], delayMs: 400 }) });
    cluster = await Cluster.create(nc, { rooms: ROOMS, env: { EDUCAI_WORKER_CONCURRENCY: '1' }, bot: { visibility: 'personal' } });
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

  const systemPrompts = (from: number) =>
    llm.requests
      .slice(from)
      .filter((r) => r.path.endsWith('/chat/completions'))
      .map((r) => ((r.body?.messages ?? []) as Array<{ role: string; content: string }>)[0]!.content);

  it('is used by every worker for its next turn', async () => {
    const round = async (text: string) => {
      const before = cluster.rooms.map((room) => cluster.replies(room).length);
      await Promise.all(cluster.rooms.map((room) => cluster.say(room, 'alice', `@tutor ${text}`)));
      await waitFor(() => cluster.rooms.every((room, i) => cluster.replies(room).length > before[i]!), `answers to "${text}"`, 60_000);
    };
    // Every worker has answered with the old instructions (and loaded whatever it caches).
    await round('hello');
    assert.ok(systemPrompts(0).every((p) => p.includes('You teach.')));

    const edited = await fetch(`${cluster.web().url}/api/v1/bots/${cluster.botId}`, {
      method: 'PUT',
      headers: asUser('alice'),
      body: JSON.stringify({ displayName: 'Tutor', systemPrompt: 'You teach chemistry, nothing else.' }),
    });
    assert.equal(edited.status, 200, await edited.text());
    // Changes reach every process within a second (LISTEN/NOTIFY).
    await new Promise((r) => setTimeout(r, 1000));
    const workers = cluster.processes.filter((p) => p.role === 'worker');
    const handledBefore = workers.map((w) => handled(w.logFile));
    const from = llm.requests.length;
    await round('what now?');
    const after = systemPrompts(from);
    assert.equal(after.length, ROOMS);
    for (const p of after) assert.match(p, /You teach chemistry, nothing else\./);
    for (const [i, w] of workers.entries()) assert.ok(handled(w.logFile) > handledBefore[i]!, `worker ${i} answered a turn after the edit`);
  });
});
