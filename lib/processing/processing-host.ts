import type { MessagePort } from 'node:worker_threads';
import type { Application } from '../bootstrap.ts';
import { ThreadRpc } from '../server/thread-rpc.ts';
import type { HandedRow } from '../intake/inbox.ts';

/** What the HTTP thread reaches of the processing side's application. */
export type HostedApplication = Pick<Application, 'processing' | 'close'>;

type Port = Pick<MessagePort, 'postMessage' | 'on' | 'off'>;

/**
 * Serves the HTTP thread on `port` for the application that `build` makes, then says 'ready'.
 *
 * The channel is open before the build starts: the Talk worker starts inside the build and can finish
 * a turn before the build returns, and a routing change that turn makes (an onboarding begun) must reach
 * the intake's index at once (`refreshHttpIndex`), or the intake would drop the room's next plain reply.
 * Calls and notifications that arrive during the build wait for it, in order.
 */
export async function hostProcessing(port: Port, build: (refreshHttpIndex: () => Promise<void>) => Promise<HostedApplication>): Promise<HostedApplication> {
  let built!: (application: HostedApplication) => void;
  const ready = new Promise<HostedApplication>((resolve) => (built = resolve));
  let application: HostedApplication | null = null;
  const rpc = new ThreadRpc(port, {
    idle: async (timeoutMs) => (await ready).processing.idle(typeof timeoutMs === 'number' ? timeoutMs : undefined),
    processQueueNow: async () => (await ready).processing.processQueueNow(),
    settingsChanged: async () => (await ready).processing.settingsChanged(),
    runtime: async (seconds) => (await ready).processing.runtime(typeof seconds === 'number' ? seconds : 60),
    shutdown: async () => (await ready).close(),
  });
  port.on('message', (m: unknown) => {
    const message = m as { type?: string; row?: HandedRow; roomToken?: string; messageId?: string };
    if (message?.type === 'wiki-file-event') {
      if (application !== null) application.processing.wikiFileEvent();
      else void ready.then((a) => a.processing.wikiFileEvent());
      return;
    }
    if (message?.type === 'reaction' && typeof message.roomToken === 'string' && typeof message.messageId === 'string') {
      const { roomToken, messageId } = message;
      if (application !== null) application.processing.reactionSeen(roomToken, messageId);
      else void ready.then((a) => a.processing.reactionSeen(roomToken, messageId));
      return;
    }
    if (message?.type !== 'notify') return;
    // Once built, straight through: a notification comes with every accepted webhook.
    if (application !== null) application.processing.notify(message.row);
    else void ready.then((a) => a.processing.notify(message.row));
  });
  application = await build(() => rpc.call<void>('refreshIndex'));
  built(application);
  port.postMessage({ type: 'ready' });
  return application;
}
