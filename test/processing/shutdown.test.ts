// The first stop after `make run` once logged "processing thread did not shut down cleanly" ("The client is
// destroyed", issue 20). Two stops overlapped (a second SIGINT: npm and the terminal both pass Ctrl-C on):
// the second close reached clients the first had already closed, and undici throws when a closed (so
// destroyed) agent is closed again. Every close is now once; the second waits for the first.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createEgressFetch } from '../../lib/egress/egress-fetch.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

/** Resolves with how `p` settled, or 'pending' if it has not within `ms` (a hang fails the test rather than it). */
async function settled(p: Promise<unknown>, ms = 30_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const out = await Promise.race([
    p.then(
      () => 'resolved',
      (err: unknown) => `rejected: ${err instanceof Error ? err.message : String(err)}`,
    ),
    new Promise<string>((r) => (timer = setTimeout(() => r('pending'), ms))),
  ]);
  clearTimeout(timer);
  return out;
}

describe('stopping twice', () => {
  it('an egress client closes twice without "The client is destroyed"', async () => {
    const egress = createEgressFetch({});
    await egress.close();
    assert.equal(await settled(egress.close()), 'resolved');
  });

  for (const dialect of DIALECTS) {
    describe(`on ${dialect}`, () => {
      const harnesses: Harness[] = [];
      after(async () => {
        for (const h of harnesses) await settled(h.close());
      });

      it('the application (one thread) closes a second time after the first without an error', async () => {
        const h = await startHarness({ dialect });
        harnesses.push(h);
        assert.equal(await settled(h.application.close()), 'resolved');
        assert.equal(await settled(h.application.close()), 'resolved');
      });

      it('with the processing thread: overlapping stops and a later one all finish, and the thread shuts down cleanly', async () => {
        const h = await startHarness({ dialect, build: { role: 'http' } });
        harnesses.push(h);
        const app = h.application;
        // Two signals a moment apart, then a third stop once both returned.
        const first = app.close();
        await new Promise((r) => setImmediate(r));
        const second = app.close();
        assert.deepEqual(await Promise.all([settled(first), settled(second)]), ['resolved', 'resolved']);
        assert.equal(await settled(app.close()), 'resolved');
        const unclean = h.logLines.filter((l) => /did not shut down cleanly|client is destroyed/.test(l));
        assert.deepEqual(unclean, []);
      });
    });
  }
});
