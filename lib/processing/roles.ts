import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** EDUCAI_ROLE: what one process of the app does. */
export type ProcessRole = 'all' | 'web' | 'worker';

/** The composition root's side (bootstrap.ts): the HTTP side, the processing side, or both in one thread (tests). */
export type Side = 'all' | 'http' | 'processing';

export interface RolePlan {
  /** Which side buildApplication composes in this process. */
  side: Side;
  /** The whole HTTP app (lifecycle, webhooks, API), or only `/heartbeat` (for health checks). */
  serves: 'app' | 'heartbeat';
  /** Whether the processing side runs in a worker thread of this process. */
  processingThread: boolean;
  /**
   * Several processes share one PostgreSQL: inbox leases, LISTEN/NOTIFY for configuration changes,
   * a leader per housekeeping timer (storage/notifier.ts, storage/leader-lock.ts, intake/inbox-leases.ts).
   */
  scaleOut: boolean;
  /** What the role runs (docs/DEPLOYMENT.md repeats this table). */
  runs: readonly string[];
}

const WEB = ['lifecycle (/heartbeat, /init, /enabled)', 'Talk webhook intake', 'the API and the app page'] as const;
const WORKER = [
  'the Talk inbox',
  'the rate-limit queue',
  'knowledge ingestion jobs',
  'housekeeping (retention, user reconciliation, wiki scan, admin form sync)',
] as const;

export const ROLES: Readonly<Record<ProcessRole, RolePlan>> = {
  // Today's single process: the HTTP thread and one processing thread.
  all: { side: 'http', serves: 'app', processingThread: true, scaleOut: false, runs: [...WEB, ...WORKER] },
  web: { side: 'http', serves: 'app', processingThread: false, scaleOut: true, runs: [...WEB, 'the admin form sync'] },
  worker: { side: 'processing', serves: 'heartbeat', processingThread: false, scaleOut: true, runs: WORKER },
};

/** The one line that refuses a scale-out role without PostgreSQL, or null when the role may start. */
export function scaleOutRefusal(role: ProcessRole, databaseUrl: string | null): string | null {
  if (role === 'all' || databaseUrl) return null;
  return `EDUCAI_ROLE=${role} needs PostgreSQL (DATABASE_URL): SQLite serves one process only, so run a single EDUCAI_ROLE=all process or set DATABASE_URL`;
}

const PID_FILE = 'educai.pid';

/**
 * SQLite: one process per data folder. The folder's pid file names the process that holds it; a second
 * live process is refused (the one line returned), a dead one's file (kill -9, a crash) is taken over.
 */
export function claimSqliteFolder(folder: string, pid: number = process.pid): string | null {
  mkdirSync(folder, { recursive: true });
  const file = join(folder, PID_FILE);
  if (existsSync(file)) {
    const other = Number(readFileSync(file, 'utf8').trim());
    if (Number.isSafeInteger(other) && other > 0 && other !== pid && alive(other)) {
      return `another educai process (pid ${other}) already uses the SQLite database in ${folder}; SQLite serves one process only (scale out on PostgreSQL with EDUCAI_ROLE=web and worker)`;
    }
  }
  writeFileSync(file, String(pid), { mode: 0o600 });
  return null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
