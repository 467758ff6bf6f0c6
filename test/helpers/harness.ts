import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { buildApplication, type Application, type BuildOptions } from '../../lib/bootstrap.ts';
import type { AppConfig } from '../../lib/config/env.ts';
import { createLogger } from '../../lib/log/logger.ts';
import type { Dialect } from '../../lib/storage/database.ts';
import { FakeNextcloud, type NextcloudVersion } from '../fakes/nextcloud/server.ts';
import type { FakeUser } from '../fakes/nextcloud/users.ts';
import { createTestDatabase, type TestDatabase } from './databases.ts';

export const TEST_SECRET = 'test-app-secret-0123456789abcdefghijklmnop';
export const APP_VERSION = '0.1.0';

export interface Harness {
  nc: FakeNextcloud;
  tdb: TestDatabase;
  application: Application;
  url: string;
  /** Every log line written, for leak checks. */
  logLines: string[];
  /** AppAPI headers as AppAPI sends them; `uid` '' = system. */
  headers(uid: string, extra?: Record<string, string>): Record<string, string>;
  /** A browser request through AppAPI's proxy (with its markers and the anti-CSRF header). */
  browserHeaders(uid: string, extra?: Record<string, string>): Record<string, string>;
  fetch(
    path: string,
    init?: { method?: string; headers?: Record<string, string>; body?: unknown },
  ): Promise<{ status: number; json: any; text: string; headers: Headers }>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  dialect: Dialect;
  users?: FakeUser[];
  build?: Omit<BuildOptions, 'logger' | 'pgSchema'>;
  /** Extra config fields. */
  config?: Partial<AppConfig>;
  /**
   * The admin's egress allow-list (S18). The fakes (model provider, MCP servers) listen on 127.0.0.1, a private
   * address, so it is allow-listed by default: the real egress path runs in tests. [] = nothing private is reachable.
   */
  egressAllowList?: string[];
  /** Which Nextcloud the fake answers like (test/fakes/nextcloud/server.ts); default 29. */
  version?: NextcloudVersion;
}

/**
 * The real ExApp (composition root, HTTP server, database) against the fake
 * Nextcloud, as AppAPI would run it.
 */
export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const nc = await FakeNextcloud.start({
    appId: 'educai',
    appSecret: TEST_SECRET,
    appVersion: APP_VERSION,
    users: options.users,
    ...(options.version ? { version: options.version } : {}),
  });
  const tdb = await createTestDatabase(options.dialect, { migrate: false });
  await tdb.close();
  const logLines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk));
      cb();
    },
  });
  const config: AppConfig = {
    appId: 'educai',
    appSecret: TEST_SECRET,
    appVersion: APP_VERSION,
    appHost: '127.0.0.1',
    appPort: 0,
    nextcloudUrl: nc.url,
    persistentStorage: tdb.dataDir,
    databaseUrl: tdb.databaseUrl,
    unixSocket: null,
    vaultKeyFile: null,
    vaultKey: null,
    logLevel: 'debug',
    workerConcurrency: 8,
    processingNice: 0,
    maxEventAgeSeconds: 600,
    ...options.config,
  };
  let application: Application;
  let server: Server;
  let url = '';
  const boot = async () => {
    application = await buildApplication(config, { ...options.build, logger: createLogger({ level: 'debug', destination }), pgSchema: tdb.pgSchema });
    server = createServer(application.app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  await boot();
  await application!.egressSettings.update({ allowList: options.egressAllowList ?? ['127.0.0.1'] });
  const stop = async () => {
    await new Promise<void>((r) => server.close(() => r()));
    server.closeAllConnections();
    await application.close();
  };
  const auth = (uid: string) => Buffer.from(`${uid}:${TEST_SECRET}`).toString('base64');
  const harness: Harness = {
    nc,
    tdb,
    get application() {
      return application;
    },
    get url() {
      return url;
    },
    logLines,
    headers: (uid, extra = {}) => ({
      'EX-APP-ID': 'educai',
      'EX-APP-VERSION': APP_VERSION,
      'AA-VERSION': '3.2.3',
      'AUTHORIZATION-APP-API': auth(uid),
      'AA-REQUEST-ID': 'test-request',
      ...extra,
    }),
    browserHeaders: (uid, extra = {}) => ({
      'EX-APP-ID': 'educai',
      'EX-APP-VERSION': APP_VERSION,
      'AA-VERSION': '3.2.3',
      'AUTHORIZATION-APP-API': auth(uid),
      'X-Origin-IP': '192.0.2.10',
      Authorization: 'Basic YWxpY2U6cGFzc3dvcmQ=',
      Cookie: 'nc_session_id=abc',
      requesttoken: 'browser-request-token',
      ...extra,
    }),
    async fetch(path, init = {}) {
      const headers: Record<string, string> = { ...(init.headers ?? {}) };
      let body: string | undefined;
      if (init.body !== undefined) {
        body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const res = await fetch(`${url}${path}`, { method: init.method ?? 'GET', headers, body });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
      return { status: res.status, json, text, headers: res.headers };
    },
    async restart() {
      await stop();
      await boot();
    },
    async close() {
      await stop();
      await nc.close();
      await tdb.drop();
    },
  };
  return harness;
}

/** Waits until `predicate` holds, polling; fails with `what` after the timeout. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
