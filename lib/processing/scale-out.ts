import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import { Notifier, type ChangeTopic } from '../storage/notifier.ts';
import type { Database } from '../storage/schema.ts';
import type { Inbox } from '../intake/inbox.ts';

export interface ScaleOutDeps {
  db: Kysely<Database>;
  databaseUrl: string;
  pgSchema?: string;
  /** This process (skips its own announcements). */
  origin: string;
  logger: Logger;
  /** Reloads every cached piece of configuration here: bots, settings, tool servers, the routing index. */
  reload: () => Promise<void>;
  refreshIndex: () => Promise<void>;
  /** The inbox worker's wake-up, where this process runs one. */
  wake: (() => void) | null;
}

export interface ScaleOut {
  /** Tells the other processes (a coalesced wake-up for 'inbox'). */
  announce(topic: ChangeTopic): Promise<void>;
  close(): Promise<void>;
}

/**
 * The links between the web and worker processes in place of the thread RPC: PostgreSQL NOTIFY for
 * new inbox rows (workers also poll), configuration changes and routing changes; after a reconnection
 * (messages meanwhile are lost) everything is reloaded and the worker looks at the inbox again.
 */
export async function startScaleOut(d: ScaleOutDeps): Promise<ScaleOut> {
  const failed = (what: string) => (err: unknown) => d.logger.warn({ err }, what);
  const notifier = await Notifier.start({
    url: d.databaseUrl,
    ...(d.pgSchema ? { schema: d.pgSchema } : {}),
    origin: d.origin,
    onChange: (topic) => {
      if (topic === 'inbox') d.wake?.();
      else if (topic === 'index') void d.refreshIndex().catch(failed('could not refresh the routing index'));
      else void d.reload().catch(failed('could not reload the configuration'));
    },
    onReconnect: () => {
      d.logger.info('configuration channel reconnected; reloading everything');
      void d.reload().catch(failed('could not reload the configuration'));
      d.wake?.();
    },
    onError: failed('configuration channel failed; reconnecting'),
  });
  // One wake-up in flight at a time: webhooks that arrive meanwhile ride on the next one.
  let sending: Promise<void> | null = null;
  let again = false;
  const wakeWorkers = (): Promise<void> => {
    if (sending) {
      again = true;
      return sending;
    }
    sending = notifier.announce(d.db, 'inbox').finally(() => {
      sending = null;
      if (again) {
        again = false;
        void wakeWorkers().catch(failed('could not wake the workers'));
      }
    });
    return sending;
  };
  return { announce: (topic) => (topic === 'inbox' ? wakeWorkers() : notifier.announce(d.db, topic)), close: () => notifier.close() };
}

/** A web process of a scale-out: waits until the workers have finished every inbox row (tests). */
export async function inboxDrained(inbox: Inbox, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await inbox.pendingCount()) > 0) {
    if (Date.now() > until) throw new Error('the workers did not finish the inbox');
    await new Promise((r) => setTimeout(r, 20));
  }
}
