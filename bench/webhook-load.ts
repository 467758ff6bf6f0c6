// The webhook load generator in a process of its own, as AppAPI is: measured in the benchmark
// process, an ack would also wait for the fake Nextcloud and fake model sharing that event loop.
// Input (JSON file, argv[2]): { url, headers, rate, bodies: string[] }.
// Output (stdout, one JSON line): { latencies: number[] (ms, in send order; -1 = failed), statuses: string[] }.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

interface LoadPlan {
  url: string;
  headers: Record<string, string>;
  rate: number;
  bodies: string[];
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LoadPlan;
const target = new URL(plan.url);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function post(body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { ...plan.headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

const latencies = new Array<number>(plan.bodies.length).fill(-1);
const statuses = new Array<string>(plan.bodies.length).fill('failed');
const started = performance.now();
const inflight: Promise<void>[] = [];
for (let i = 0; i < plan.bodies.length; i++) {
  const wait = started + (i * 1000) / plan.rate - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const t0 = performance.now();
  inflight.push(
    post(plan.bodies[i]!)
      .then((r) => {
        latencies[i] = performance.now() - t0;
        const m = /"status":"([a-z]+)"/.exec(r.text);
        statuses[i] = r.status === 200 && m ? m[1]! : `http-${r.status}`;
      })
      .catch(() => undefined),
  );
}
await Promise.all(inflight);
agent.destroy();
process.stdout.write(`${JSON.stringify({ latencies, statuses })}\n`);
