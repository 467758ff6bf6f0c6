/**
 * `make bench`: runs every bench/*.bench.ts in its own process, one after the
 * other, and passes through their `bench <name> <value> <unit>` lines.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('.', import.meta.url).pathname;
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let failed = 0;
for (const file of files) {
  process.stderr.write(`# ${file}\n`);
  const r = spawnSync(process.execPath, [join(dir, file)], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env, timeout: 30 * 60_000 });
  if (r.status !== 0) {
    failed++;
    process.stderr.write(`# ${file} failed (exit ${r.status ?? r.signal})\n`);
  }
}
process.exit(failed ? 1 : 0);
