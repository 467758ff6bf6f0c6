/**
 * heartbeat_cold_start_ms: spawn the ExApp and poll /heartbeat until it answers
 * (median of 5 cold starts, each with a fresh data folder).
 * auth_overhead_p99_us: the AppAPI auth middleware alone, per request.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Request, Response } from 'express';
import { appApiAuth } from '../lib/server/middleware/appapi-auth.ts';
import { createLogger } from '../lib/log/logger.ts';
import { percentile, report } from './report.ts';

const root = new URL('..', import.meta.url).pathname;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function coldStart(): Promise<number> {
  const port = await freePort();
  const data = mkdtempSync(join(tmpdir(), 'educai-bench-'));
  const started = performance.now();
  const child = spawn(process.execPath, ['lib/main.ts'], {
    cwd: root,
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '',
      APP_ID: 'educai',
      APP_SECRET: 'bench-secret-0123456789abcdef',
      APP_VERSION: '0.1.0',
      APP_HOST: '127.0.0.1',
      APP_PORT: String(port),
      NEXTCLOUD_URL: 'http://127.0.0.1:9',
      APP_PERSISTENT_STORAGE: data,
      LOG_LEVEL: 'silent',
    },
  });
  try {
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/heartbeat`);
        if (res.ok && ((await res.json()) as { status?: string }).status === 'ok') return performance.now() - started;
      } catch {
        // not listening yet
      }
      if (performance.now() - started > 30_000) throw new Error('no heartbeat within 30 s');
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill('SIGKILL');
    rmSync(data, { recursive: true, force: true });
  }
}

const starts: number[] = [];
for (let i = 0; i < 5; i++) starts.push(await coldStart());
report('heartbeat_cold_start_ms', percentile(starts, 50), 'ms');

const secret = 'bench-secret-0123456789abcdef';
const middleware = appApiAuth({ appId: 'educai', appSecret: secret, logger: createLogger({ level: 'silent' }), openPaths: ['/heartbeat'] });
const headers = {
  'ex-app-id': 'educai',
  'ex-app-version': '0.1.0',
  'authorization-app-api': Buffer.from(`alice:${secret}`).toString('base64'),
  'accept-language': 'en',
};
const res = { status: () => res, json: () => res } as unknown as Response;
const samples: number[] = [];
for (let i = 0; i < 60_000; i++) {
  const req = { path: '/api/v1/bots', method: 'GET', headers, socket: {} } as unknown as Request;
  let called = false;
  const t0 = process.hrtime.bigint();
  middleware(req, res, () => {
    called = true;
  });
  const t1 = process.hrtime.bigint();
  if (!called) throw new Error('auth refused a valid request');
  if (i >= 10_000) samples.push(Number(t1 - t0) / 1000);
}
report('auth_overhead_p99_us', percentile(samples, 99), 'us');
report('auth_overhead_p50_us', percentile(samples, 50), 'us');
