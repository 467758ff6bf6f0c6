/**
 * Scale-out (EDUCAI_ROLE=web|worker on one PostgreSQL). Real processes: the ExApp's web and worker
 * processes, the fake model in a process of its own (time to first token 300 ms, then 20 tokens/s, 60
 * tokens: about 3.3 s a turn); the fake Nextcloud here.
 * - scaleout_turns_per_s_1w / _3w: 1 web and 1 or 3 workers (EDUCAI_WORKER_CONCURRENCY=2 each), every
 *   room kept busy (BENCH_SCALEOUT_ROOMS rooms, BENCH_SCALEOUT_TURNS messages each, a room's sent one
 *   after another as each is acknowledged); the turns over the time until the last is answered, after a
 *   warm-up round; scaleout_ratio_3w is their ratio (≈ 3 while the model is the bottleneck);
 * - scaleout_lost / scaleout_duplicates: over both runs, messages never answered and answers posted
 *   more than once (each answer is one Talk message: the fake's text has no sentence end to cut at);
 * - webhook_ack_p99_ms_pg / turn_overhead_ms_pg: the Talk bench's ack load (200 webhooks/s, here for
 *   BENCH_SCALEOUT_ACK_SECONDS) and turn overhead (zero-latency fakes, median) with one EDUCAI_ROLE=all
 *   process on PostgreSQL, to set beside the SQLite figures of bench/talk.bench.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeNextcloud } from '../test/fakes/nextcloud/server.ts';
import { FakeOpenAI } from '../test/fakes/openai/fake-openai.ts';
import { TEST_SECRET, waitFor } from '../test/helpers/harness.ts';
import { Cluster, LLM_KEY, system } from '../test/scaleout/cluster.ts';
import { percentile, report } from './report.ts';

const ROOMS = Number(process.env.BENCH_SCALEOUT_ROOMS ?? 12);
const TURNS = Number(process.env.BENCH_SCALEOUT_TURNS ?? 2);
const CONCURRENCY = 2;
const ACK_SECONDS = Number(process.env.BENCH_SCALEOUT_ACK_SECONDS ?? 10);
const ACK_RATE = 200;

async function fakeModelProcess(): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [new URL('../test/fakes/openai/fake-openai-process.ts', import.meta.url).pathname], {
    env: { ...process.env, TTFT_MS: '300', TOKENS_PER_SECOND: '20', REPLY_TOKENS: '60' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(String(d));
      if (m) resolve(Number(m[1]));
    });
  });
  return { url: `http://127.0.0.1:${port}/v1`, stop: () => void child.kill('SIGTERM') };
}

interface Tally {
  lost: number;
  duplicates: number;
}

/** 1 web and `workers` workers: turns per second with every room busy. */
async function throughput(workers: number, modelUrl: string, tally: Tally): Promise<number> {
  const nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
  nc.recordCalls = false;
  const cluster = await Cluster.create(nc, { rooms: ROOMS, env: { EDUCAI_WORKER_CONCURRENCY: String(CONCURRENCY) } });
  try {
    await cluster.start('web');
    await cluster.configure(modelUrl);
    for (let i = 0; i < workers; i++) await cluster.start('worker');
    const send = (n: number) =>
      Promise.all(
        cluster.rooms.map(async (room, r) => {
          for (let i = 0; i < n; i++) await cluster.say(room, 'alice', `@tutor question ${r}-${i}`);
        }),
      );
    const answered = () => cluster.rooms.reduce((sum, room) => sum + cluster.replies(room).length, 0);
    // Warm-up (every worker is built once Cluster.start returns): connections, JIT.
    await send(1);
    await waitFor(() => answered() >= ROOMS, 'the warm-up round', 300_000);
    const t0 = performance.now();
    await send(TURNS);
    await waitFor(() => answered() >= ROOMS * (TURNS + 1), 'every turn answered', 600_000).catch(() => undefined);
    const elapsed = (performance.now() - t0) / 1000;
    // Late duplicates would arrive after the last answer.
    await new Promise((r) => setTimeout(r, 1000));
    const expected = TURNS + 1;
    for (const room of cluster.rooms) {
      const replies = nc.botMessages.filter((m) => m.token === room && m.status === 201);
      const references = new Set(replies.map((m) => m.referenceId));
      tally.duplicates += replies.length - references.size + Math.max(0, references.size - expected);
      tally.lost += Math.max(0, expected - references.size);
    }
    return (ROOMS * TURNS) / elapsed;
  } finally {
    await cluster.close();
    await nc.close();
  }
}

function post(agent: Agent, url: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { ...headers, 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The Talk bench's ack load and turn overhead, one EDUCAI_ROLE=all process on PostgreSQL. */
async function talkOnPostgres(): Promise<void> {
  const nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
  nc.recordCalls = false;
  const llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY, responder: () => ({ text: ['A short answer.'] }) });
  llm.recordRequests = false;
  const cluster = await Cluster.create(nc, { rooms: 50, env: { EDUCAI_WORKER_CONCURRENCY: '32' } });
  try {
    const app = (await cluster.start('all', { LOG_LEVEL: 'error' })).app;
    await cluster.configure(llm.url);
    // The processing thread is up once the runtime status answers.
    await fetch(`${app.url}/api/v1/admin/runtime?seconds=5`, {
      headers: { ...system(), 'AUTHORIZATION-APP-API': Buffer.from(`admin:${TEST_SECRET}`).toString('base64') },
    });
    // Ack load: webhook-load.ts in its own process, as in bench/talk.bench.ts.
    const bodies = Array.from({ length: ACK_SECONDS * ACK_RATE }, (_, i) =>
      nc.webhookBodyFor(nc.postMessage(cluster.rooms[i % cluster.rooms.length]!, { actorType: 'users', actorId: 'alice' }, `@tutor question ${i}`)),
    );
    const dir = mkdtempSync(join(tmpdir(), 'educai-load-'));
    const plan = join(dir, 'plan.json');
    const headers = { ...system() };
    delete headers['Content-Type'];
    writeFileSync(plan, JSON.stringify({ url: `${app.url}/talk_bot`, headers, rate: ACK_RATE, bodies }));
    const child = spawn(process.execPath, [new URL('./webhook-load.ts', import.meta.url).pathname, plan], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += String(d)));
    await new Promise((resolve) => child.on('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
    const { latencies } = JSON.parse(out) as { latencies: number[] };
    report(
      'webhook_ack_p99_ms_pg',
      percentile(
        latencies.filter((v) => v >= 0),
        99,
      ),
      'ms',
    );
    await waitFor(() => nc.botMessages.length >= bodies.length, 'the ack load answered', 900_000);
    // Turn overhead: one turn at a time, end to end.
    const agent = new Agent({ keepAlive: true });
    const room = cluster.rooms[0]!;
    const times: number[] = [];
    for (let i = 0; i < 130; i++) {
      const before = nc.botMessages.length;
      const body = nc.webhookBodyFor(nc.postMessage(room, { actorType: 'users', actorId: 'alice' }, `@tutor turn ${i}`));
      const t0 = performance.now();
      await post(agent, `${app.url}/talk_bot`, system(), body);
      while (nc.botMessages.length === before) await new Promise((r) => setImmediate(r));
      if (i >= 30) times.push(performance.now() - t0);
    }
    agent.destroy();
    report('turn_overhead_ms_pg', percentile(times, 50), 'ms');
  } finally {
    await cluster.close();
    await nc.close();
    await llm.close();
  }
}

const model = await fakeModelProcess();
const tally: Tally = { lost: 0, duplicates: 0 };
try {
  const one = await throughput(1, model.url, tally);
  report('scaleout_turns_per_s_1w', one, 'turns/s');
  const three = await throughput(3, model.url, tally);
  report('scaleout_turns_per_s_3w', three, 'turns/s');
  report('scaleout_ratio_3w', three / one, 'ratio');
  report('scaleout_lost', tally.lost, 'count');
  report('scaleout_duplicates', tally.duplicates, 'count');
} finally {
  model.stop();
}
if ((process.env.BENCH_SCALEOUT_PARTS ?? 'throughput,talk').includes('talk')) await talkOnPostgres();
process.exit(0);
