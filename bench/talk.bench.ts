/**
 * The Talk pipeline under load. The ExApp runs as its own process
 * (`node lib/main.ts`, embedded SQLite); the fake Nextcloud and the load
 * generator run here, the 20 tokens/s fake model in a third process.
 * - webhook_ack_p50_ms / webhook_ack_p99_ms / webhook_lost: 200 webhooks/s for
 *   30 s (BENCH_ACK_SECONDS), every one addressing a bot, while the ExApp
 *   verifies and answers them. The same load runs 3 s before
 *   (BENCH_ACK_WARMUP_SECONDS): those acks are answered and counted as lost or
 *   not, but not timed, so the figures are the steady state of a running app
 *   rather than its first JIT compilations and connections;
 *   webhook_ack_cpu_us / turn_cpu_ms: CPU time of the HTTP thread per ack and of
 *   the processing thread per answered turn over the same load (from the
 *   app's runtime status): steadier than any latency on a shared machine;
 * - turn_overhead_ms: a turn end to end with zero-latency fakes (median);
 *   turn_overhead_cpu_ms: the processing thread's CPU per turn over those turns;
 * - streams_1000_loop_lag_p99_ms / streams_1000_rss_mb: 1000 concurrent
 *   streamed answers at 20 tokens/s, starts staggered over 10 s; lag and RSS
 *   are read from the ExApp's own /api/v1/admin/runtime;
 *   streams_cpu_ms_per_stream: the CPU time of the thread running them, per stream;
 * - webhook_ack_floor_p50_ms / webhook_ack_floor_p99_ms: the same load for 10 s
 *   (BENCH_ACK_FLOOR_SECONDS) against a server that only parses and answers a
 *   constant (bench/ack-floor-server.ts): the part of the ack figures that the
 *   machine and the load generator leave before the app does anything;
 * - machine_stall_ms_per_s / machine_stall_max_ms: first, on the idle machine, a
 *   busy loop per core counts the pauses over 1 ms that the machine imposed
 *   (bench/machine-stall.ts): the share of any latency tail that no code removes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { BotStore } from '../lib/bots/bot-store.ts';
import { openDatabase } from '../lib/storage/database.ts';
import { FakeNextcloud } from '../test/fakes/nextcloud/server.ts';
import { FakeOpenAI } from '../test/fakes/openai/fake-openai.ts';
import { createTestDatabase } from '../test/helpers/databases.ts';
import { ExAppProcess, exAppEnv, freePort } from '../test/helpers/exapp-process.ts';
import { TEST_SECRET, waitFor } from '../test/helpers/harness.ts';
import { percentile, report } from './report.ts';

const ACK_SECONDS = Number(process.env.BENCH_ACK_SECONDS ?? 30);
const ACK_WARMUP_SECONDS = Number(process.env.BENCH_ACK_WARMUP_SECONDS ?? 3);
const ACK_FLOOR_SECONDS = Number(process.env.BENCH_ACK_FLOOR_SECONDS ?? 10);
const ACK_RATE = 200;
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const LLM_KEY = 'bench-provider-key-123';

const auth = (uid: string) => Buffer.from(`${uid}:${TEST_SECRET}`).toString('base64');
const appHeaders = (uid: string): Record<string, string> => ({ 'EX-APP-ID': 'educai', 'EX-APP-VERSION': '0.1.0', 'AUTHORIZATION-APP-API': auth(uid) });

function post(agent: Agent, url: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: 'POST',
        agent,
        headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

interface Setup {
  nc: FakeNextcloud;
  dataDir: string;
  app: ExAppProcess;
  rooms: string[];
  close(): Promise<void>;
}

/** Fake Nextcloud here, a migrated database with one bot onboarded in `roomCount` rooms, and the ExApp process. */
async function setup(roomCount: number, llmUrl: string, concurrency: number): Promise<Setup> {
  const nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
  nc.recordCalls = false;
  const tdb = await createTestDatabase('sqlite');
  const bot = await new BotStore(tdb.db).create({ displayName: 'Tutor', mention: 'tutor', systemPrompt: 'Answer briefly.', visibility: 'global' }, 'alice', {
    approvalStatus: 'approved',
  });
  const rooms: string[] = [];
  const now = Date.now();
  for (let i = 0; i < roomCount; i++) {
    const token = nc.createRoom({
      name: `bench ${i}`,
      type: 2,
      participants: [
        { actorId: 'alice', participantType: 1 },
        { actorId: 'bob', participantType: 3 },
      ],
    }).token;
    rooms.push(token);
  }
  for (let i = 0; i < rooms.length; i += 200) {
    await tdb.db
      .insertInto('room_states')
      .values(
        rooms
          .slice(i, i + 200)
          .map((token) => ({
            bot_id: bot.id,
            room_token: token,
            response_mode: 'mention' as const,
            onboarding_status: 'completed' as const,
            current_question_id: null,
            onboarding_answers: '[]',
            deferred_message: null,
            activated_by: 'alice',
            created_at: now,
            updated_at: now,
          })),
      )
      .execute();
  }
  await tdb.close();
  const app = new ExAppProcess(
    await freePort(),
    exAppEnv(nc.url, tdb, {
      LOG_LEVEL: 'error',
      EDUCAI_WORKER_CONCURRENCY: String(concurrency),
      ...(process.env.EDUCAI_SINGLE_THREAD ? { EDUCAI_SINGLE_THREAD: process.env.EDUCAI_SINGLE_THREAD } : {}),
      ...(process.env.EDUCAI_PROCESSING_NICE ? { EDUCAI_PROCESSING_NICE: process.env.EDUCAI_PROCESSING_NICE } : {}),
      // Diagnostics, e.g. BENCH_APP_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof".
      ...(process.env.BENCH_APP_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_APP_NODE_OPTIONS } : {}),
    }),
  );
  await app.start();
  const enabled = await fetch(`${app.url}/enabled?enabled=1`, { method: 'PUT', headers: appHeaders('') });
  if (!enabled.ok) throw new Error('enable failed');
  for (const token of rooms) nc.enableBotInRoom(token, 'talk_bot');
  const saved = await fetch(`${app.url}/api/v1/admin/settings`, {
    method: 'PUT',
    headers: { ...appHeaders('admin'), requesttoken: 'bench', 'Content-Type': 'application/json' },
    body: JSON.stringify({ primaryEndpoint: llmUrl, primaryKey: LLM_KEY, defaultModel: 'primary:fake-model' }),
  });
  if (!saved.ok) throw new Error(`settings: ${await saved.text()}`);
  // The fake provider listens on 127.0.0.1: a private address the egress module reaches only when allow-listed (S18).
  const egress = await fetch(`${app.url}/api/v1/admin/egress`, {
    method: 'PUT',
    headers: { ...appHeaders('admin'), requesttoken: 'bench', 'Content-Type': 'application/json' },
    body: JSON.stringify({ allowList: ['127.0.0.1'] }),
  });
  if (!egress.ok) throw new Error(`egress: ${await egress.text()}`);
  // The runtime status waits for the processing thread: load starts once the app is fully up, not while it boots.
  const runtime = await fetch(`${app.url}/api/v1/admin/runtime?seconds=5`, { headers: appHeaders('admin') });
  if (!runtime.ok) throw new Error(`runtime: ${runtime.status}`);
  return {
    nc,
    dataDir: tdb.dataDir,
    app,
    rooms,
    async close() {
      await app.kill('SIGTERM');
      await nc.close();
      await tdb.drop();
    },
  };
}

function handledCount(dataDir: string): Promise<number> {
  const handle = openDatabase({ sqlitePath: `${dataDir}/educai.sqlite` });
  return handle.db
    .selectFrom('handled_messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n))
    .finally(() => handle.close());
}

/** Runs a script of bench/ in its own process and parses the JSON it prints. */
async function runBenchScript<T>(script: string, args: string[]): Promise<T> {
  const child = spawn(process.execPath, [new URL(script, import.meta.url).pathname, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += String(d)));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  return JSON.parse(out) as T;
}

/** Runs bench/webhook-load.ts in its own process and returns what it measured. */
async function runLoadGenerator(plan: {
  url: string;
  headers: Record<string, string>;
  rate: number;
  bodies: string[];
}): Promise<{ latencies: number[]; statuses: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'educai-load-'));
  try {
    const file = join(dir, 'plan.json');
    writeFileSync(file, JSON.stringify(plan));
    return await runBenchScript('./webhook-load.ts', [file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type ThreadStatus = { loopLagP99Ms: number; peakRssMb: number; webhookP99Ms: number | null; cpuMs: number };

async function runtimeStatus(app: ExAppProcess, seconds: number): Promise<{ http: ThreadStatus; processing: ThreadStatus | null }> {
  const res = await fetch(`${app.url}/api/v1/admin/runtime?seconds=${seconds}`, { headers: appHeaders('admin') });
  if (!res.ok) throw new Error(`runtime: ${res.status}`);
  return (await res.json()) as { http: ThreadStatus; processing: ThreadStatus | null };
}

async function ackBenchmark(): Promise<void> {
  const llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY, responder: () => ({ text: ['Fine.'] }) });
  llm.recordRequests = false;
  const s = await setup(50, llm.url, 32);
  try {
    const warmup = ACK_WARMUP_SECONDS * ACK_RATE;
    const total = warmup + ACK_SECONDS * ACK_RATE;
    const bodies = Array.from({ length: total }, (_, i) =>
      s.nc.webhookBodyFor(
        s.nc.postMessage(
          s.rooms[i % s.rooms.length]!,
          { actorType: 'users', actorId: i % 2 ? 'bob' : 'alice' },
          process.env.BENCH_ACK_IGNORED ? `just chatting ${i}` : `@tutor question ${i}`,
        ),
      ),
    );
    const expected = process.env.BENCH_ACK_IGNORED ? 'ignored' : 'accepted';
    const before = await runtimeStatus(s.app, 5);
    const result = await runLoadGenerator({ url: `${s.app.url}/talk_bot`, headers: appHeaders(''), rate: ACK_RATE, bodies });
    const sent = result.latencies.slice(warmup);
    const latencies = sent.filter((v) => v >= 0);
    const accepted = result.statuses.filter((st) => st === expected).length;
    const lost = total - accepted;
    if (process.env.BENCH_ACK_TRACE) {
      // Diagnostics: the ack latency second by second (p50 / max), to tell a start-up stall from steady state.
      for (let sec = 0; sec < ACK_SECONDS; sec++) {
        const slice = sent.slice(sec * ACK_RATE, (sec + 1) * ACK_RATE).filter((v) => v >= 0);
        process.stderr.write(`# second ${sec}: p50 ${percentile(slice, 50).toFixed(1)} ms, max ${Math.max(...slice).toFixed(1)} ms\n`);
      }
    }
    // The ack figures are final here; the worker may still be draining the backlog.
    report('webhook_ack_p50_ms', percentile(latencies, 50), 'ms');
    report('webhook_ack_p99_ms', percentile(latencies, 99), 'ms');
    report('webhook_ack_max_ms', Math.max(...latencies), 'ms');
    // The same acks as the app saw them (route to last byte), without the client's and the network's share.
    const runtime = await runtimeStatus(s.app, ACK_SECONDS);
    report('webhook_ack_app_p99_ms', runtime.http.webhookP99Ms ?? 0, 'ms');
    report('webhook_ack_cpu_us', ((runtime.http.cpuMs - before.http.cpuMs) * 1000) / total, 'us');
    if (!process.env.BENCH_ACK_IGNORED) {
      const drainStarted = performance.now();
      await waitFor(() => s.nc.botMessages.length >= accepted, 'every accepted webhook to be answered', Number(process.env.BENCH_DRAIN_SECONDS ?? 900) * 1000);
      report('webhook_drain_s', (performance.now() - drainStarted) / 1000, 's');
      const drained = await runtimeStatus(s.app, 5);
      if (drained.processing && before.processing) report('turn_cpu_ms', (drained.processing.cpuMs - before.processing.cpuMs) / accepted, 'ms');
    }
    const handled = process.env.BENCH_ACK_IGNORED ? accepted : await handledCount(s.dataDir);
    report('webhook_lost', lost + Math.max(0, accepted - handled), 'count');
  } finally {
    await s.close();
    await llm.close();
  }
}

async function turnOverhead(): Promise<void> {
  const llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY, responder: () => ({ text: ['A short answer.'] }) });
  llm.recordRequests = false;
  const s = await setup(1, llm.url, 4);
  try {
    const agent = new Agent({ keepAlive: true });
    const times: number[] = [];
    let measuredFrom: Awaited<ReturnType<typeof runtimeStatus>> | null = null;
    for (let i = 0; i < 150; i++) {
      if (i === 30) measuredFrom = await runtimeStatus(s.app, 5);
      const before = s.nc.botMessages.length;
      const body = s.nc.webhookBodyFor(s.nc.postMessage(s.rooms[0]!, { actorType: 'users', actorId: 'alice' }, `@tutor turn ${i}`));
      const t0 = performance.now();
      await post(agent, `${s.app.url}/talk_bot`, appHeaders(''), body);
      while (s.nc.botMessages.length === before) await new Promise((r) => setImmediate(r));
      if (i >= 30) times.push(performance.now() - t0);
    }
    report('turn_overhead_ms', percentile(times, 50), 'ms');
    report('turn_overhead_p99_ms', percentile(times, 99), 'ms');
    // One turn at a time: the processing thread's CPU per turn without the contention of the ack load.
    const after = await runtimeStatus(s.app, 5);
    if (measuredFrom?.processing && after.processing)
      report('turn_overhead_cpu_ms', (after.processing.cpuMs - measuredFrom.processing.cpuMs) / times.length, 'ms');
    agent.destroy();
  } finally {
    await s.close();
    await llm.close();
  }
}

async function streams(): Promise<void> {
  const child: ChildProcess = spawn(process.execPath, [new URL('../test/fakes/openai/fake-openai-process.ts', import.meta.url).pathname], {
    env: { ...process.env, TOKENS_PER_SECOND: '20', REPLY_TOKENS: '200' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(String(d));
      if (m) resolve(Number(m[1]));
    });
  });
  const s = await setup(STREAMS, `http://127.0.0.1:${port}/v1`, STREAMS + 24);
  try {
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const before = await runtimeStatus(s.app, 5);
    const staggerMs = 10_000 / STREAMS;
    const started = Date.now();
    for (let i = 0; i < STREAMS; i++) {
      const body = s.nc.webhookBodyFor(s.nc.postMessage(s.rooms[i]!, { actorType: 'users', actorId: 'alice' }, `@tutor stream ${i}`));
      await post(agent, `${s.app.url}/talk_bot`, appHeaders(''), body);
      await new Promise((r) => setTimeout(r, staggerMs));
    }
    await waitFor(() => s.nc.botMessages.length >= STREAMS, 'every stream to finish', 180_000);
    const seconds = Math.min(600, Math.max(5, Math.ceil((Date.now() - started) / 1000)));
    const runtime = await runtimeStatus(s.app, seconds);
    // The streams run on the processing thread; the HTTP thread's loop is what AppAPI's calls wait on.
    report('streams_1000_loop_lag_p99_ms', (runtime.processing ?? runtime.http).loopLagP99Ms, 'ms');
    report('streams_1000_http_loop_lag_p99_ms', runtime.http.loopLagP99Ms, 'ms');
    report('streams_1000_rss_mb', Math.max(runtime.http.peakRssMb, runtime.processing?.peakRssMb ?? 0), 'MB');
    report('streams_1000_completed', s.nc.botMessages.length, 'count');
    // CPU of the thread that runs the streams, per stream: steadier than the lag on a shared machine.
    const cpuThread = (r: typeof runtime) => r.processing ?? r.http;
    report('streams_cpu_ms_per_stream', (cpuThread(runtime).cpuMs - cpuThread(before).cpuMs) / STREAMS, 'ms');
    agent.destroy();
  } finally {
    await s.close();
    child.kill('SIGTERM');
  }
}

/**
 * The same load against the least server there is (bench/ack-floor-server.ts: parse, answer a constant), in
 * its own process: the client-side p99 that this machine and the load generator leave before the app does
 * any work of its own.
 */
async function ackFloor(): Promise<void> {
  const nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
  const server = spawn(process.execPath, [new URL('./ack-floor-server.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      server.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
      server.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)));
    });
    const room = nc.createRoom({ name: 'floor', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] }).token;
    const warmup = ACK_WARMUP_SECONDS * ACK_RATE;
    const bodies = Array.from({ length: warmup + ACK_FLOOR_SECONDS * ACK_RATE }, (_, i) =>
      nc.webhookBodyFor(nc.postMessage(room, { actorType: 'users', actorId: 'alice' }, `@tutor question ${i}`)),
    );
    const result = await runLoadGenerator({ url: `http://127.0.0.1:${port}/talk_bot`, headers: appHeaders(''), rate: ACK_RATE, bodies });
    const latencies = result.latencies.slice(warmup).filter((v) => v >= 0);
    report('webhook_ack_floor_p50_ms', percentile(latencies, 50), 'ms');
    report('webhook_ack_floor_p99_ms', percentile(latencies, 99), 'ms');
  } finally {
    server.kill('SIGTERM');
    await nc.close();
  }
}

/** bench/machine-stall.ts in its own process, before any load: what the machine takes from a running thread. */
async function machineStall(): Promise<void> {
  const { stalledMsPerS, maxMs } = await runBenchScript<{ stalledMsPerS: number; maxMs: number }>('./machine-stall.ts', ['3']);
  report('machine_stall_ms_per_s', stalledMsPerS, 'ms');
  report('machine_stall_max_ms', maxMs, 'ms');
}

const parts = (process.env.BENCH_TALK_PARTS ?? 'ack,turn,streams').split(',');
if (parts.includes('ack') || parts.includes('streams')) await machineStall();
if (parts.includes('ack')) await ackFloor();
if (parts.includes('ack')) await ackBenchmark();
if (parts.includes('turn')) await turnOverhead();
if (parts.includes('streams')) await streams();
process.exit(0);
