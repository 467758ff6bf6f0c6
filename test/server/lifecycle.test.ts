import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../helpers/databases.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

for (const dialect of DIALECTS) {
  describe(`AppAPI lifecycle on ${dialect}`, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness({ dialect });
    });
    after(async () => h.close());

    it('answers heartbeat, init with progress up to 100, then enabled', async () => {
      const hb = await h.fetch('/heartbeat', { headers: { Accept: 'application/json' } });
      assert.equal(hb.status, 200);
      assert.deepEqual(hb.json, { status: 'ok' });

      const started = Date.now();
      const init = await h.fetch('/init', { method: 'POST', headers: h.headers('') });
      assert.equal(init.status, 200);
      assert.deepEqual(init.json, {});
      assert.ok(Date.now() - started < 1000, 'init answers at once');

      await waitFor(() => h.nc.statusReports.some((r) => r.progress === 100), 'progress 100');
      const progress = h.nc.statusReports.map((r) => r.progress);
      assert.ok(progress.length >= 3, `several steps: ${progress.join(',')}`);
      assert.deepEqual(
        [...progress].sort((a, b) => a - b),
        progress,
        'progress only grows',
      );
      assert.equal(progress.at(-1), 100);
      assert.ok(h.nc.statusReports.every((r) => !r.error));

      const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
      assert.equal(enabled.status, 200);
      assert.deepEqual(enabled.json, { error: '' });
      const disabled = await h.fetch('/enabled?enabled=0', { method: 'PUT', headers: h.headers('') });
      assert.deepEqual(disabled.json, { error: '' });
      assert.deepEqual(h.nc.headerViolations, [], 'every call to Nextcloud carried the exact AppAPI headers');
    });

    it('reports an init failure as an error text', async () => {
      const broken = await startHarness({ dialect });
      try {
        // The database goes away under the running app; the migration step fails for real.
        await broken.application.database.close();
        const init = await broken.fetch('/init', { method: 'POST', headers: broken.headers('') });
        assert.equal(init.status, 200);
        await waitFor(() => broken.nc.statusReports.some((r) => Boolean(r.error)), 'an error report');
        const report = broken.nc.statusReports.find((r) => r.error);
        assert.match(report?.error ?? '', /database migrations/);
        assert.ok(!broken.nc.statusReports.some((r) => r.progress === 100));
      } finally {
        await broken.close().catch(() => undefined);
      }
    });

    it('does not turn a timed-out final report into a failure when AppAPI enabled the app meanwhile', async () => {
      const slow = await startHarness({ dialect });
      try {
        slow.nc.appApi.finalReportTimesOut = true;
        const init = await slow.fetch('/init', { method: 'POST', headers: slow.headers('') });
        assert.equal(init.status, 200);
        await waitFor(() => slow.nc.calls.some((c) => c.method === 'GET' && c.path.endsWith('/ex-app/state')), 'a look at the app state');
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(slow.nc.statusReports.filter((r) => r.progress === 100).length, 1, 'AppAPI said enabled: the 100 is not sent again');
        assert.deepEqual(
          slow.nc.statusReports.filter((r) => r.error),
          [],
          'no error was reported after 100',
        );
        assert.equal(slow.nc.appApi.initState.error, '');
      } finally {
        await slow.close().catch(() => undefined);
      }
    });

    it('refuses lifecycle calls with a user or through the browser proxy', async () => {
      for (const headers of [h.headers('alice'), h.browserHeaders(''), h.headers('', { 'X-Origin-IP': '198.51.100.1' })]) {
        const r = await h.fetch('/enabled?enabled=0', { method: 'PUT', headers });
        assert.equal(r.status, 403);
        const i = await h.fetch('/init', { method: 'POST', headers });
        assert.equal(i.status, 403);
      }
    });
  });
}
