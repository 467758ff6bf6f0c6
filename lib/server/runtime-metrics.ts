import { createHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

interface Window {
  at: number;
  p50: number;
  p99: number;
  max: number;
  /** Webhook handling in this thread (route to answer), when any arrived in the window. */
  webhookP99: number | null;
}

/**
 * Event-loop lag and memory of this process, in 5-second windows, so an admin
 * (and the benchmarks) can see whether the loop keeps up under load; and the
 * CPU time this thread has used, whose difference over a load is steadier on a
 * shared machine than any latency.
 */
export class RuntimeMetrics {
  readonly #histogram: ReturnType<typeof monitorEventLoopDelay>;
  readonly #webhooks = createHistogram();
  readonly #windows: Window[] = [];
  readonly #timer: NodeJS.Timeout;
  #peakRss = 0;

  constructor(windowMs = 5000, keep = 120) {
    this.#histogram = monitorEventLoopDelay({ resolution: 10 });
    this.#histogram.enable();
    this.#timer = setInterval(() => {
      const h = this.#histogram;
      const w = this.#webhooks;
      this.#windows.push({
        at: Date.now(),
        p50: h.percentile(50) / 1e6,
        p99: h.percentile(99) / 1e6,
        max: h.max / 1e6,
        webhookP99: w.count > 0 ? w.percentile(99) / 1e3 : null,
      });
      if (this.#windows.length > keep) this.#windows.shift();
      h.reset();
      w.reset();
      this.#peakRss = Math.max(this.#peakRss, process.memoryUsage().rss);
    }, windowMs);
    this.#timer.unref();
  }

  /** How long a Talk delivery took in this thread, in milliseconds. */
  recordWebhook(ms: number): void {
    this.#webhooks.record(Math.max(1, Math.round(ms * 1000)));
  }

  /** Lag and webhook percentiles over the windows of the last `seconds` (the worst window's p99). */
  snapshot(seconds = 60): {
    loopLagP99Ms: number;
    loopLagMaxMs: number;
    webhookP99Ms: number | null;
    rssMb: number;
    peakRssMb: number;
    heapUsedMb: number;
    cpuMs: number;
    uptimeS: number;
  } {
    const since = Date.now() - seconds * 1000;
    const recent = this.#windows.filter((w) => w.at >= since);
    const mem = process.memoryUsage();
    this.#peakRss = Math.max(this.#peakRss, mem.rss);
    const cpu = process.threadCpuUsage();
    return {
      loopLagP99Ms: recent.length ? Math.max(...recent.map((w) => w.p99)) : 0,
      loopLagMaxMs: recent.length ? Math.max(...recent.map((w) => w.max)) : 0,
      webhookP99Ms: recent.some((w) => w.webhookP99 !== null) ? Math.max(...recent.map((w) => w.webhookP99 ?? 0)) : null,
      rssMb: mem.rss / 1048576,
      peakRssMb: this.#peakRss / 1048576,
      heapUsedMb: mem.heapUsed / 1048576,
      cpuMs: (cpu.user + cpu.system) / 1000,
      uptimeS: process.uptime(),
    };
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#webhooks.reset();
    this.#histogram.disable();
  }
}
