// A real CalDAV server for the tests (Debian's radicale, installed by scripts/ensure-radicale.sh),
// behind a small proxy that speaks AppAPI: it checks EX-APP-ID / EX-APP-VERSION /
// AUTHORIZATION-APP-API like Nextcloud, maps the uid to Basic auth, and serves radicale under
// /remote.php/dav (X-Script-Name), so the production `authMethod: 'Custom'` path runs for real.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { capturedCapabilitiesBody } from '../../fakes/nextcloud/fixtures.ts';

export interface Radicale {
  url: string;
  passwords: Record<string, string>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function radicaleInstalled(): boolean {
  return spawnSync('radicale', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function startRadicale(users: Record<string, string>): Promise<Radicale> {
  if (!radicaleInstalled()) throw new Error('radicale is not installed: run scripts/ensure-radicale.sh (make test does)');
  const dir = mkdtempSync(join(tmpdir(), 'educai-radicale-'));
  writeFileSync(
    join(dir, 'users'),
    Object.entries(users)
      .map(([u, p]) => `${u}:${p}`)
      .join('\n') + '\n',
  );
  let lastError: unknown = null;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    writeFileSync(
      join(dir, 'config'),
      [
        '[server]',
        `hosts = 127.0.0.1:${port}`,
        '[auth]',
        'type = htpasswd',
        `htpasswd_filename = ${join(dir, 'users')}`,
        'htpasswd_encryption = plain',
        '[storage]',
        `filesystem_folder = ${join(dir, 'collections')}`,
        '[rights]',
        'type = owner_only',
        '[logging]',
        'level = warning',
      ].join('\n'),
    );
    // A clean environment: the child gets no secret of ours.
    const child: ChildProcess = spawn('radicale', ['--config', join(dir, 'config')], {
      stdio: 'ignore',
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    });
    const url = `http://127.0.0.1:${port}`;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let up = false;
    for (let i = 0; i < 100 && child.exitCode === null; i++) {
      try {
        const res = await fetch(`${url}/.web/`, { signal: AbortSignal.timeout(500) });
        await res.arrayBuffer();
        up = true;
        break;
      } catch (err) {
        lastError = err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (up) {
      return {
        url,
        passwords: users,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          await exited;
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`radicale did not start: ${String(lastError)}`);
}

export interface AppApiProxy {
  url: string;
  /** The uid of every request that passed, in order ('!' for refused ones). */
  calls: Array<{ method: string; path: string; user: string }>;
  close(): Promise<void>;
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding', 'host']);

export async function startAppApiProxy(options: { target: string; appId: string; appSecret: string; passwords: Record<string, string> }): Promise<AppApiProxy> {
  const calls: AppApiProxy['calls'] = [];
  const server = http.createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const method = (req.method ?? 'GET').toUpperCase();
      const path = new URL(req.url ?? '/', 'http://proxy.invalid').pathname;
      const auth = String(req.headers['authorization-app-api'] ?? '');
      const decoded = Buffer.from(auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const uid = colon > 0 ? decoded.slice(0, colon) : '';
      const ok =
        req.headers['ex-app-id'] === options.appId &&
        String(req.headers['ex-app-version'] ?? '') !== '' &&
        colon > 0 &&
        decoded.slice(colon + 1) === options.appSecret &&
        options.passwords[uid] !== undefined &&
        req.headers['authorization'] === undefined &&
        req.headers['cookie'] === undefined;
      calls.push({ method, path, user: ok ? uid : '!' });
      if (!ok) {
        res.writeHead(401, { 'content-type': 'text/plain' }).end('AppAPI authentication failed');
        return;
      }
      if (method === 'GET' && path === '/ocs/v2.php/cloud/capabilities') {
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(capturedCapabilitiesBody(`http://${req.headers.host ?? ''}`));
        return;
      }
      if (path !== '/remote.php/dav' && !path.startsWith('/remote.php/dav/')) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (v === undefined || HOP.has(k) || k.startsWith('ex-app') || k === 'authorization-app-api' || k === 'aa-request-id' || k === 'user-agent') continue;
        headers[k] = Array.isArray(v) ? v.join(', ') : v;
      }
      headers['authorization'] = `Basic ${Buffer.from(`${uid}:${options.passwords[uid]}`).toString('base64')}`;
      headers['x-script-name'] = '/remote.php/dav';
      const upstream = await fetch(`${options.target}${path.slice('/remote.php/dav'.length) || '/'}`, {
        method,
        headers,
        ...(body.length > 0 ? { body } : {}),
        redirect: 'manual',
      });
      const out: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!HOP.has(k)) out[k] = v;
      });
      const bytes = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, out).end(bytes);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
