/**
 * The request fuzzer at scale (issue 20): the generators of test/fuzz/ (Talk deliveries from the captured
 * webhooks, JSON bodies for every /api/v1 route from its zod schema, each sometimes broken or with a
 * Content-Encoding that does not fit) against the ExApp as its own process (`node lib/main.ts`, embedded
 * SQLite, processing thread), one request at a time.
 * - fuzz_requests: how many were sent (BENCH_FUZZ_REQUESTS, default 20000; seed BENCH_FUZZ_SEED);
 * - fuzz_5xx: answers with a 5xx (must be 0); fuzz_bad_4xx: 4xx answers that are not JSON with a code and
 *   a message (must be 0);
 * - fuzz_no_answer: requests whose connection ended before an answer could be read (must be 0);
 * - fuzz_p50_ms / fuzz_p99_ms: client-side latency of one request;
 * - fuzz_cpu_us_per_request: the ExApp process's CPU time (every thread, /proc) per request.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { FakeNextcloud } from '../test/fakes/nextcloud/server.ts';
import { createTestDatabase } from '../test/helpers/databases.ts';
import { ExAppProcess, exAppEnv, freePort } from '../test/helpers/exapp-process.ts';
import { TEST_SECRET } from '../test/helpers/harness.ts';
import { apiRequests, appApiHeaders, problemWith, send, webhookRequests } from '../test/fuzz/request-cases.ts';
import { percentile, report } from './report.ts';

const N = Number(process.env.BENCH_FUZZ_REQUESTS ?? 20_000);
const SEED = Number(process.env.BENCH_FUZZ_SEED ?? 20);

/** user + system CPU of a process, all threads, in microseconds (Linux). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / 100; // USER_HZ is 100 on Linux
}

const nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
nc.recordCalls = false;
const tdb = await createTestDatabase('sqlite');
await tdb.close();
const app = new ExAppProcess(await freePort(), exAppEnv(nc.url, tdb, { LOG_LEVEL: 'error' }));
try {
  await app.start();
  const call = async (uid: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { ...appApiHeaders(TEST_SECRET, uid), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as { id?: string; bot?: { id: string } };
  };
  await call('', 'PUT', '/enabled?enabled=1');
  const bot = await call('alice', 'POST', '/api/v1/bots', { displayName: 'Fuzz target', mention: 'fuzztarget' });
  const roomToken = nc.createRoom({ name: 'fuzz', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] }).token;
  const context = { params: { id: [bot.bot?.id ?? bot.id ?? 'missing'], token: [roomToken] }, users: ['alice', 'admin', 'bob'] };
  const requests = fc.sample(fc.oneof(webhookRequests(), apiRequests(context)), { seed: SEED, numRuns: N });

  const times: number[] = [];
  let fiveHundreds = 0;
  let badFourHundreds = 0;
  const examples = new Map<string, string>();
  const cpuBefore = cpuMicros(app.child!.pid!);
  let noAnswer = 0;
  for (const r of requests) {
    let answer;
    try {
      answer = await send(app.url, TEST_SECRET, r);
    } catch (err) {
      // The connection ended without an answer the client could read.
      noAnswer++;
      if (!examples.has(r.route)) examples.set(r.route, `${r.method} ${r.path}: no answer (${(err as { cause?: Error }).cause?.message ?? String(err)})`);
      continue;
    }
    times.push(answer.ms);
    const problem = problemWith(answer);
    if (problem === null) continue;
    if (answer.status >= 500) fiveHundreds++;
    else badFourHundreds++;
    if (!examples.has(r.route)) examples.set(r.route, `${r.method} ${r.path}: ${problem}`);
  }
  const cpu = cpuMicros(app.child!.pid!) - cpuBefore;
  for (const example of examples.values()) process.stderr.write(`# ${example}\n`);
  report('fuzz_requests', requests.length, 'count');
  report('fuzz_5xx', fiveHundreds, 'count');
  report('fuzz_bad_4xx', badFourHundreds, 'count');
  report('fuzz_no_answer', noAnswer, 'count');
  report('fuzz_p50_ms', percentile(times, 50), 'ms');
  report('fuzz_p99_ms', percentile(times, 99), 'ms');
  report('fuzz_cpu_us_per_request', cpu / requests.length, 'us');
} finally {
  await app.kill('SIGTERM');
  await nc.close();
  await tdb.drop();
}
