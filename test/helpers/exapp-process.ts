import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { waitFor } from './harness.ts';

const root = new URL('../..', import.meta.url).pathname;

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
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
    await waitFor(async () => {
      try {
        return (await fetch(`${this.url}/heartbeat`)).ok;
      } catch {
        return false;
      }
    }, 'the ExApp to start', 60_000);
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
