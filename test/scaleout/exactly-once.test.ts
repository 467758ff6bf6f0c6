import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { FakeOpenAI, type RecordedRequest } from '../fakes/openai/fake-openai.ts';
import { TEST_SECRET, waitFor } from '../helpers/harness.ts';
import { Cluster, LLM_KEY } from './cluster.ts';

const ROOMS = 50;
const PER_ROOM = 10;

/** The answer names the question it answers: "a<room>-<n>" for "q<room>-<n>". */
function answerTo(req: RecordedRequest): string {
  const messages = (req.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const q = /q(\d+)-(\d+)/.exec(typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? ''));
  return q ? `a${q[1]}-${q[2]}` : 'unknown';
}

describe('scale-out: 1 web and 3 worker processes on one PostgreSQL', () => {
  let nc: FakeNextcloud;
  let llm: FakeOpenAI;
  let cluster: Cluster;

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    nc.recordCalls = false;
    llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY, responder: (req) => ({ text: [answerTo(req)], delayMs: 20 }) });
    llm.recordRequests = false;
    cluster = await Cluster.create(nc, { rooms: ROOMS, env: { EDUCAI_WORKER_CONCURRENCY: '8' } });
    await cluster.start('web');
    await cluster.configure(llm.url);
    for (let i = 0; i < 3; i++) await cluster.start('worker');
  });
  after(async () => {
    await cluster?.close();
    await nc?.close();
    await llm?.close();
  });

  it('answers each of 500 messages across 50 rooms exactly once, in message order within each room', async () => {
    // Rooms in parallel, a room's messages one after another (each acknowledged before the next is sent).
    await Promise.all(
      cluster.rooms.map(async (room, r) => {
        for (let n = 0; n < PER_ROOM; n++) await cluster.say(room, 'alice', `@tutor q${r}-${n}`);
      }),
    );
    const total = () => cluster.rooms.reduce((sum, room) => sum + cluster.replies(room).length, 0);
    await waitFor(() => total() >= ROOMS * PER_ROOM, 'every message answered', 150_000);
    // A late duplicate would show up after the last answer.
    await new Promise((r) => setTimeout(r, 1000));
    for (const [r, room] of cluster.rooms.entries()) {
      assert.deepEqual(
        cluster.replies(room),
        Array.from({ length: PER_ROOM }, (_, n) => `a${r}-${n}`),
        `room ${r}: every answer once, in message order`,
      );
    }
    // The work was shared: every worker answered turns.
    const workers = cluster.processes.filter((p) => p.role === 'worker');
    const handled = workers.map(
      (w) =>
        readFileSync(w.logFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"Talk event handled"')).length,
    );
    assert.equal(
      handled.reduce((a, b) => a + b, 0),
      ROOMS * PER_ROOM,
      'each event handled once in all',
    );
    for (const n of handled) assert.ok(n > 0, `every worker took turns (${handled.join(', ')})`);
    // The web process answers webhooks only.
    assert.ok(!readFileSync(cluster.processes[0]!.logFile, 'utf8').includes('"Talk event handled"'));
  });
});
