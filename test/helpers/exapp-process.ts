import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { TEST_SECRET, waitFor } from './harness.ts';

const root = new URL('../..', import.meta.url).pathname;

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Where the ExApp's data lives: a test database's folder and, on PostgreSQL, its URL and schema. */
export interface ExAppData {
  dataDir: string;
  databaseUrl: string | null;
  pgSchema: string | undefined;
}

/** The PostgreSQL URL a process opens the test schema with (its search_path in the URL), or '' for SQLite. */
export function processDatabaseUrl(data: ExAppData): string {
  return data.databaseUrl ? `${data.databaseUrl}?options=${encodeURIComponent(`-c search_path=${data.pgSchema}`)}` : '';
}

/**
 * The environment AppAPI gives the ExApp (test app id, secret and version), for the fake or real
 * Nextcloud at `nextcloudUrl` and the data in `data`; `extra` adds or overrides variables.
 */
export function exAppEnv(nextcloudUrl: string, data: ExAppData, extra: Record<string, string> = {}): Record<string, string> {
  const databaseUrl = processDatabaseUrl(data);
  return {
    APP_ID: 'educai',
    APP_SECRET: TEST_SECRET,
    APP_VERSION: '0.1.0',
    NEXTCLOUD_URL: nextcloudUrl,
    APP_PERSISTENT_STORAGE: data.dataDir,
    LOG_LEVEL: 'warn',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...extra,
  };
}

/** The ExApp as its own process (`node lib/main.ts`), so a crash is a real SIGKILL and load is measured apart. */
export class ExAppProcess {
  child: ChildProcess | null = null;
  readonly url: string;
  readonly #env: Record<string, string>;

  readonly #logFile: string | undefined;

  /** `logFile`: where the app's stdout (its JSON log) is appended; by default it is dropped. */
  constructor(port: number, env: Record<string, string>, options: { logFile?: string } = {}) {
    this.url = `http://127.0.0.1:${port}`;
    this.#logFile = options.logFile;
    // MALLOC_ARENA_MAX as the image sets it (Dockerfile), so memory figures are the container's.
    this.#env = { PATH: process.env.PATH ?? '', MALLOC_ARENA_MAX: '2', APP_PORT: String(port), APP_HOST: '127.0.0.1', ...env };
  }

  async start(): Promise<void> {
    const stdout = this.#logFile === undefined ? 'ignore' : openSync(this.#logFile, 'a');
    this.child = spawn(process.execPath, ['lib/main.ts'], { cwd: root, env: this.#env, stdio: ['ignore', stdout, 'inherit'] });
    if (typeof stdout === 'number') closeSync(stdout);
    await waitFor(
      async () => {
        try {
          return (await fetch(`${this.url}/heartbeat`)).ok;
        } catch {
          return false;
        }
      },
      'the ExApp to start',
      60_000,
    );
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }
}
