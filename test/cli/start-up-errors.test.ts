// A newcomer's first run (issue 20): a busy port ends `make run` with one line before the set-up
// instructions, not with a stack trace after them; and the server does not let a slow sender hold a
// connection for Node's default minutes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/exapp-process.ts';
import { waitFor } from '../helpers/harness.ts';

const root = new URL('../..', import.meta.url).pathname;

function run(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('start-up on a busy port', () => {
  let holder: Server;
  let port: number;
  let data: string;

  before(async () => {
    data = mkdtempSync(join(tmpdir(), 'educai-startup-'));
    holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    port = (holder.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise<void>((r) => holder.close(() => r()));
    rmSync(data, { recursive: true, force: true });
  });

  it('make run (dev-run) exits with one line naming the port and APP_PORT, before the occ commands', async () => {
    const r = await run('lib/cli/dev-run.ts', { APP_PORT: String(port), APP_PERSISTENT_STORAGE: data });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '', 'no banner, no occ commands');
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use.*APP_PORT`));
  });

  it('the ExApp itself exits with the same one line instead of an EADDRINUSE stack trace', async () => {
    const r = await run('lib/main.ts', {
      APP_PORT: String(port),
      APP_ID: 'educai',
      APP_VERSION: '0.1.0',
      APP_SECRET: 'start-up-test-secret-0123456789',
      NEXTCLOUD_URL: 'http://127.0.0.1:9',
      APP_PERSISTENT_STORAGE: data,
    });
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stderr, /at .*node:net|Unhandled 'error'/);
    assert.match(r.stderr, new RegExp(`^educai: port ${port} on 127\\.0\\.0\\.1 is already in use.*APP_PORT[^\\n]*\\n$`));
  });
});

describe('a slow sender', () => {
  let child: ReturnType<typeof spawn>;
  let port: number;
  let data: string;

  before(async () => {
    data = mkdtempSync(join(tmpdir(), 'educai-slow-'));
    port = await freePort();
    child = spawn(process.execPath, ['lib/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        APP_PORT: String(port),
        APP_ID: 'educai',
        APP_VERSION: '0.1.0',
        APP_SECRET: 'start-up-test-secret-0123456789',
        NEXTCLOUD_URL: 'http://127.0.0.1:9',
        APP_PERSISTENT_STORAGE: data,
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/heartbeat`).catch(() => null))?.ok === true, 'the ExApp to listen', 60_000);
  });
  after(async () => {
    if (child.exitCode === null) await new Promise((r) => (child.once('exit', r), child.kill('SIGKILL')));
    rmSync(data, { recursive: true, force: true });
  });

  it('gets 408 and a closed connection when its headers never finish (headersTimeout 5 s, not 60 s)', async () => {
    const answer = await new Promise<{ text: string; closed: boolean }>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('POST /talk_bot HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'));
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('close', () => (clearTimeout(timer), resolve({ text, closed: true })));
      socket.on('error', () => undefined);
      // Node's defaults would answer after 60 s at the earliest.
      const timer = setTimeout(() => (socket.destroy(), resolve({ text, closed: false })), 20_000);
    });
    assert.ok(answer.closed, 'the connection was held');
    assert.match(answer.text, /^HTTP\/1\.1 408 /);
  });
});
