// The checkpointer's thread: its own connections to the SQLite files, so that copying the WAL
// into the database and its fsync never run on an event loop that serves webhooks or streams.
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';

const port = parentPort;
if (!port) throw new Error('checkpoint-thread must run in a worker thread');
const { files, intervalMs } = workerData as { files: string[]; intervalMs: number };

const connections = files.map((file) => {
  const db = new BetterSqlite3(file, { fileMustExist: true });
  // PASSIVE never waits for readers or writers; a busy database is simply tried again next time.
  db.pragma('busy_timeout = 0');
  return db;
});

function checkpointAll(): void {
  for (const db of connections) {
    try {
      const [row] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
      port!.postMessage({ type: 'checkpointed', file: db.name, log: row?.log ?? 0, checkpointed: row?.checkpointed ?? 0 });
    } catch (err) {
      port!.postMessage({ type: 'failed', file: db.name, message: err instanceof Error ? err.message : String(err) });
    }
  }
}

const timer = setInterval(checkpointAll, intervalMs);
port.on('message', (m: unknown) => {
  if ((m as { type?: string })?.type !== 'stop') return;
  clearInterval(timer);
  checkpointAll();
  for (const db of connections) db.close();
  port.close();
});
port.postMessage({ type: 'ready' });
