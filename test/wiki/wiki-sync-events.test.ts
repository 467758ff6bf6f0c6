// The scheduler and scanner after file events: a sync a file event found waits the shorter window,
// and an event during a pass gets a pass of its own (the running one may have read that root already).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WikiRootStore } from '../../lib/wiki/wiki-roots.ts';
import { WikiScanner, WikiSyncScheduler } from '../../lib/wiki/wiki-sync.ts';
import { waitFor } from '../helpers/harness.ts';

const HOUR = 3_600_000;

describe('wiki sync after file events', () => {
  it('a sync found after a file event runs in the event window; one found by the periodic scan waits the full debounce', async () => {
    const synced: string[] = [];
    const scheduler = new WikiSyncScheduler({ sync: async (id) => void synced.push(id), debounceMs: HOUR, eventDebounceMs: 0 });
    scheduler.schedule('by-scan');
    scheduler.schedule('by-event', { afterEvent: true });
    await waitFor(() => synced.includes('by-event'), 'the event-found sync');
    assert.deepEqual(synced, ['by-event']);
    assert.equal(scheduler.pendingCount, 1, 'the scan-found sync is still waiting');
    await scheduler.flush();
    assert.deepEqual(synced, ['by-event', 'by-scan']);
    scheduler.close();
  });

  it('an event during a pass leads to exactly one more pass, however many came', async () => {
    let passes = 0;
    let done = 0;
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const roots = { list: async () => [{ botId: 'b', rootEtag: 'old' }] } as unknown as WikiRootStore;
    const scheduler = new WikiSyncScheduler({ sync: async () => undefined, debounceMs: HOUR });
    const scanner = new WikiScanner({
      roots,
      scheduler,
      etagOf: async () => {
        passes++;
        await gate;
        done++;
        return 'old';
      },
    });
    scanner.fileEvent();
    await waitFor(() => passes === 1, 'the first pass');
    for (let i = 0; i < 5; i++) scanner.fileEvent();
    const first = release;
    gate = new Promise<void>((r) => (release = r));
    first();
    await waitFor(() => passes === 2, 'the second pass');
    release();
    await waitFor(() => done === 2, 'the second pass to end');
    await scanner.scanOnce();
    assert.equal(passes, 3, 'the second pass, then the explicit one: no third event pass');
    scanner.stop();
    scanner.fileEvent();
    assert.equal(passes, 3, 'nothing after stop');
    scheduler.close();
  });
});
