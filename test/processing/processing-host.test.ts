import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { describe, it } from 'node:test';
import type { ProcessingControl } from '../../lib/bootstrap.ts';
import { hostProcessing, type HostedApplication } from '../../lib/processing/processing-host.ts';
import { ThreadRpc } from '../../lib/server/thread-rpc.ts';
import type { HandedRow } from '../../lib/intake/inbox.ts';

/** A processing side that records what reached it. */
function recordingApplication(log: string[]): HostedApplication {
  const processing: ProcessingControl = {
    notify: (row?: HandedRow) => void log.push(`notify ${row?.id ?? '-'}`),
    reactionSeen: (roomToken, messageId) => void log.push(`reaction ${roomToken}/${messageId}`),
    idle: async () => void log.push('idle'),
    processQueueNow: async () => ({ processed: 0, failed: 0, remaining: 0 }) as never,
    settingsChanged: async () => void log.push('settingsChanged'),
    runtime: async (seconds) => ({ seconds }),
    wikiFileEvent: () => void log.push('wikiFileEvent'),
  };
  return { processing, close: async () => void log.push('close') };
}

describe('processing thread host', () => {
  it('passes an index refresh asked for while the application is being built to the HTTP side', async () => {
    const { port1: processingPort, port2: httpPort } = new MessageChannel();
    let httpRefreshes = 0;
    const http = new ThreadRpc(httpPort, { refreshIndex: async () => void httpRefreshes++ });
    const ready = new Promise<void>((resolve) => httpPort.on('message', (m: { type?: string }) => m?.type === 'ready' && resolve()));
    await hostProcessing(processingPort, async (refreshHttpIndex) => {
      // The worker starts inside the build: a turn that began an onboarding refreshes the intake's index.
      await refreshHttpIndex();
      assert.equal(httpRefreshes, 1, 'the refresh reached the HTTP side before the build returned');
      return recordingApplication([]);
    });
    await ready;
    http.close();
    processingPort.close();
  });

  it('serves calls, notifications and wiki file events that arrive during the build after it, in order, then says ready', async () => {
    const { port1: processingPort, port2: httpPort } = new MessageChannel();
    const log: string[] = [];
    const http = new ThreadRpc(httpPort, { refreshIndex: async () => undefined });
    httpPort.on('message', (m: { type?: string }) => m?.type === 'ready' && log.push('ready'));
    let finishBuild!: () => void;
    const buildMayFinish = new Promise<void>((resolve) => (finishBuild = resolve));
    const hosted = hostProcessing(processingPort, async () => {
      await buildMayFinish;
      log.push('built');
      return recordingApplication(log);
    });
    httpPort.postMessage({ type: 'notify', row: { id: 7 } });
    const idle = http.call('idle', 1000);
    httpPort.postMessage({ type: 'notify' });
    httpPort.postMessage({ type: 'wiki-file-event' });
    const runtime = http.call<{ seconds: number }>('runtime', 30);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(log, [], 'nothing is served before the application exists');
    finishBuild();
    await hosted;
    await idle;
    assert.deepEqual(await runtime, { seconds: 30 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(log, ['built', 'notify 7', 'idle', 'notify -', 'wikiFileEvent', 'ready']);
    http.close();
    processingPort.close();
  });

  it('hands a reaction webhook to the processing side, also one that arrived during the build', async () => {
    const { port1: processingPort, port2: httpPort } = new MessageChannel();
    const log: string[] = [];
    const http = new ThreadRpc(httpPort, { refreshIndex: async () => undefined });
    let finishBuild!: () => void;
    const buildMayFinish = new Promise<void>((resolve) => (finishBuild = resolve));
    const hosted = hostProcessing(processingPort, async () => {
      await buildMayFinish;
      return recordingApplication(log);
    });
    httpPort.postMessage({ type: 'reaction', roomToken: 'room1', messageId: '7' });
    httpPort.postMessage({ type: 'reaction', roomToken: 42, messageId: '8' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    finishBuild();
    await hosted;
    httpPort.postMessage({ type: 'reaction', roomToken: 'room1', messageId: '9' });
    await http.call('idle', 1000);
    assert.deepEqual(
      log.filter((l) => l.startsWith('reaction')),
      ['reaction room1/7', 'reaction room1/9'],
      'a malformed one is dropped',
    );
    http.close();
    processingPort.close();
  });
});
