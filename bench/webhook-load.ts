// The webhook load generator in a process of its own, as AppAPI is: measured in the benchmark
// process, an ack would also wait for the fake Nextcloud and fake model sharing that event loop.
// It writes prepared HTTP/1.1 requests on keep-alive sockets and reads the answers itself: AppAPI
// sends through curl, and node:http's client cost as much CPU per request as the ack it measured,
// on the same two cores.
// Input (JSON file, argv[2]): { url, headers, rate, bodies: string[] }.
// Output (stdout, one JSON line): { latencies: number[] (ms, in send order; -1 = failed), statuses: string[] }.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

interface LoadPlan {
  url: string;
  headers: Record<string, string>;
  rate: number;
  bodies: string[];
}

interface Answer {
  status: number;
  text: string;
}

const TIMEOUT_MS = 5000;
const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LoadPlan;
const target = new URL(plan.url);
const head = Object.entries({ Host: target.host, ...plan.headers, 'Content-Type': 'application/json' })
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');
const requests = plan.bodies.map((body) => Buffer.from(`POST ${target.pathname} HTTP/1.1\r\n${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));

/** One keep-alive connection carrying one request at a time. */
class Connection {
  readonly #socket: Socket;
  #received: Buffer = Buffer.alloc(0);
  #pending: { resolve: (a: Answer) => void; reject: (e: Error) => void; timer: NodeJS.Timeout } | null = null;
  usable = true;

  constructor(ready: (c: Connection) => void, failed: (e: Error) => void) {
    this.#socket = connect({ host: target.hostname, port: Number(target.port), noDelay: true }, () => ready(this));
    this.#socket.on('data', (d: Buffer) => this.#read(d));
    this.#socket.on('error', (e) => this.#fail(e, failed));
    this.#socket.on('close', () => this.#fail(new Error('connection closed'), failed));
  }

  send(request: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.#socket.destroy(new Error('timeout')), TIMEOUT_MS);
      this.#pending = { resolve, reject, timer };
      this.#socket.write(request);
    });
  }

  close(): void {
    this.usable = false;
    this.#socket.destroy();
  }

  #read(data: Buffer): void {
    this.#received = this.#received.length ? Buffer.concat([this.#received, data]) : data;
    const end = this.#received.indexOf('\r\n\r\n');
    if (end < 0) return;
    const headText = this.#received.subarray(0, end).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headText)?.[1] ?? 0);
    if (this.#received.length < end + 4 + length) return;
    const answer = { status: Number(headText.slice(9, 12)), text: this.#received.subarray(end + 4, end + 4 + length).toString() };
    this.#received = this.#received.subarray(end + 4 + length);
    const pending = this.#pending;
    this.#pending = null;
    if (pending) {
      clearTimeout(pending.timer);
      idle.push(this);
      pending.resolve(answer);
    }
  }

  #fail(error: Error, failed: (e: Error) => void): void {
    this.usable = false;
    const pending = this.#pending;
    this.#pending = null;
    if (pending) {
      clearTimeout(pending.timer);
      pending.reject(error);
    } else failed(error);
  }
}

const idle: Connection[] = [];
const open = (): Promise<Connection> => new Promise((resolve, reject) => new Connection(resolve, reject));

async function post(request: Buffer): Promise<Answer> {
  let connection = idle.pop();
  while (connection && !connection.usable) connection = idle.pop();
  return (connection ?? (await open())).send(request);
}

const latencies = new Array<number>(plan.bodies.length).fill(-1);
const statuses = new Array<string>(plan.bodies.length).fill('failed');
// A few connections up front, as a client that has been talking to the app keeps them.
for (const c of await Promise.all(Array.from({ length: 8 }, open))) idle.push(c);
const started = performance.now();
const inflight: Promise<void>[] = [];
for (let i = 0; i < requests.length; i++) {
  const wait = started + (i * 1000) / plan.rate - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const t0 = performance.now();
  inflight.push(
    post(requests[i]!)
      .then((r) => {
        latencies[i] = performance.now() - t0;
        const m = /"status":"([a-z]+)"/.exec(r.text);
        statuses[i] = r.status === 200 && m ? m[1]! : `http-${r.status}`;
      })
      .catch(() => undefined),
  );
}
await Promise.all(inflight);
for (const c of idle) c.close();
process.stdout.write(`${JSON.stringify({ latencies, statuses })}\n`);
