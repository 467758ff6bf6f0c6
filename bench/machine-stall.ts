// A busy loop per core for a few seconds on an otherwise idle machine: every pause it sees is time the
// machine (the host of a virtual machine, the kernel, other tenants) took from a running thread. The Talk
// figures are tails of a few milliseconds; this says how much of such a tail the machine itself adds.
// Input: argv[2] = seconds. Output (stdout, one JSON line): { stalledMsPerS, maxMs }.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { availableParallelism } from 'node:os';

const THRESHOLD_NS = 1_000_000n;

function spin(seconds: number): { stalledMs: number; maxMs: number } {
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  let last = process.hrtime.bigint();
  let stalled = 0n;
  let max = 0n;
  for (;;) {
    const now = process.hrtime.bigint();
    const gap = now - last;
    if (gap > THRESHOLD_NS) {
      stalled += gap;
      if (gap > max) max = gap;
    }
    if (now >= end) break;
    last = now;
  }
  return { stalledMs: Number(stalled) / 1e6, maxMs: Number(max) / 1e6 };
}

if (isMainThread) {
  const seconds = Number(process.argv[2] ?? 3);
  const results = await Promise.all(
    Array.from(
      { length: availableParallelism() },
      () =>
        new Promise<{ stalledMs: number; maxMs: number }>((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url), { workerData: seconds });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  const stalledMsPerS = results.reduce((sum, r) => sum + r.stalledMs, 0) / results.length / seconds;
  process.stdout.write(`${JSON.stringify({ stalledMsPerS, maxMs: Math.max(...results.map((r) => r.maxMs)) })}\n`);
} else {
  parentPort!.postMessage(spin(workerData as number));
}
