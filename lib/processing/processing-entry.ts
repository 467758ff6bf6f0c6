import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { buildApplication } from '../bootstrap.ts';
import type { AppConfig } from '../config/env.ts';
import { hostProcessing } from './processing-host.ts';

/** The processing thread: the same composition root, in the 'processing' role. */
const port = parentPort;
if (!port) throw new Error('processing-entry must run in a worker thread');
const data = workerData as { config: AppConfig; pgSchema?: string };

// On Linux the nice value is per thread (pid 0 = the calling thread). EDUCAI_PROCESSING_NICE > 0 lets the HTTP
// thread's acks go first when CPU is short, at the price of losing to every other process on the host; measured
// with a separate load generator, acks did not need it (docs/ARCHITECTURE.md), so the default is 0.
try {
  if (data.config.processingNice > 0) setPriority(data.config.processingNice);
} catch {
  // Not permitted or not supported: the thread runs at normal priority.
}

await hostProcessing(port, (refreshHttpIndex) => buildApplication(data.config, { role: 'processing', pgSchema: data.pgSchema, refreshHttpIndex }));
