// `make chat`'s CLI (lib/cli/chat.ts) as a child process: lines typed on stdin, what it prints on stdout.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { waitFor } from './harness.ts';

const root = new URL('../..', import.meta.url).pathname;

/** One `node lib/cli/chat.ts` run: lines typed on stdin, what it prints on stdout. */
export class ChatSession {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, ['lib/cli/chat.ts', ...args], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (d) => (this.stdout += d));
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** Types `line` and waits until the output after it matches `until`; returns that output. */
  async say(line: string, until: RegExp, timeoutMs = 60_000): Promise<string> {
    const from = this.stdout.length;
    this.child.stdin.write(`${line}\n`);
    await waitFor(
      () => until.test(this.stdout.slice(from)),
      `"${until.source}" after "${line}" (stdout: ${this.stdout.slice(from)} stderr: ${this.stderr.slice(-2000)})`,
      timeoutMs,
    );
    return this.stdout.slice(from);
  }

  /** Ctrl-D: the session ends and cleans up. */
  async end(): Promise<number | null> {
    this.child.stdin.end();
    return this.exited;
  }
}

/** The messages printed in `output`, as Talk would show them (one "Talk AI:" block each). */
export function printed(output: string): string[] {
  return output
    .split(/^Talk AI: /m)
    .slice(1)
    .map((block) => block.replace(/\n$/, '').replace(/\n {2}/g, '\n'));
}
