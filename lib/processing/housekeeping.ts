import type { Logger } from '../log/logger.ts';
import type { LeaderLock } from '../storage/leader-lock.ts';

/** One timer: how often, whether this process takes part, and its work. */
export interface Chore {
  /** The leader lease's name: one process at a time runs it (storage/leader-lock.ts). */
  name: string;
  everyMs: number;
  /** The first run after this delay instead of after `everyMs`. */
  firstAfterMs?: number;
  /** Whether this process takes part now (its role; for the admin form, whether the app is enabled). */
  here: () => boolean;
  /** Work every process does for itself (its own caches), outside the lease. */
  local?: () => Promise<unknown>;
  run: () => Promise<unknown>;
  /** What the log says when it fails. */
  failure: string;
}

/**
 * The housekeeping timers: retention, user reconciliation, knowledge maintenance, the tool audit, the wiki
 * scan and the admin form sync. Each round, a process that takes part runs a chore only while it holds the
 * chore's lease, which lasts one and a half rounds: the holder renews it each round, and when it dies another
 * process takes over after at most that. With one process (SQLite) the lease always holds.
 */
export function startHousekeeping(chores: Chore[], leader: LeaderLock, logger: Logger): { stop(): void } {
  const timers: NodeJS.Timeout[] = [];
  for (const chore of chores) {
    const round = () => {
      if (!chore.here()) return;
      void (async () => {
        await chore.local?.();
        await leader.run(chore.name, Math.ceil(chore.everyMs * 1.5), chore.run);
      })().catch((err: unknown) => logger.warn({ err }, chore.failure));
    };
    const every = setInterval(round, chore.everyMs);
    every.unref();
    timers.push(every);
    if (chore.firstAfterMs !== undefined) {
      const first = setTimeout(round, chore.firstAfterMs);
      first.unref();
      timers.push(first);
    }
  }
  return {
    stop: () => {
      for (const t of timers) clearTimeout(t);
    },
  };
}
