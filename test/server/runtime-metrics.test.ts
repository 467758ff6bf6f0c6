import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RuntimeMetrics } from '../../lib/server/runtime-metrics.ts';

const windowPassed = () => new Promise((r) => setTimeout(r, 80));

describe('runtime metrics', () => {
  it('reports the worst window p99 of webhook handling, and null while none arrived', async () => {
    const metrics = new RuntimeMetrics(50);
    try {
      await windowPassed();
      assert.equal(metrics.snapshot(60).webhookP99Ms, null, 'no delivery, no figure');
      // A slow window (half the deliveries took 30 ms), then a fast one: the slow one is reported.
      for (let i = 0; i < 50; i++) metrics.recordWebhook(1);
      for (let i = 0; i < 50; i++) metrics.recordWebhook(30);
      await windowPassed();
      for (let i = 0; i < 100; i++) metrics.recordWebhook(2);
      await windowPassed();
      const p99 = metrics.snapshot(60).webhookP99Ms;
      assert.ok(p99 !== null && Math.abs(p99 - 30) < 0.5, `p99 ${p99}`);
      const snapshot = metrics.snapshot(60);
      assert.equal(typeof snapshot.loopLagP99Ms, 'number');
      assert.ok(snapshot.peakRssMb > 0);
    } finally {
      metrics.stop();
    }
  });

  it("reports this thread's CPU time, which grows with work done here and not with waiting", async () => {
    const metrics = new RuntimeMetrics(50);
    try {
      const before = metrics.snapshot(60).cpuMs;
      await new Promise((r) => setTimeout(r, 100));
      const idle = metrics.snapshot(60).cpuMs - before;
      // Work measured in this thread's CPU time, not wall time: on a busy machine 150 ms of spinning may get far less CPU.
      const started = performance.now();
      const cpu0 = process.threadCpuUsage();
      const spent = () => {
        const d = process.threadCpuUsage(cpu0);
        return (d.user + d.system) / 1000;
      };
      while (spent() < 150);
      const wall = performance.now() - started;
      const busy = metrics.snapshot(60).cpuMs - before - idle;
      assert.ok(idle < 60, `waiting 100 ms used ${idle} ms of CPU`);
      assert.ok(busy >= 145, `150 ms of work counted ${busy} ms of CPU`);
      assert.ok(busy <= wall + 60 + 5, `more CPU counted (${busy} ms) than the thread could use in ${wall} ms of work and 100 ms of waiting`);
    } finally {
      metrics.stop();
    }
  });
});
