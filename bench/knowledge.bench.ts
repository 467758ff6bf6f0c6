/**
 * Knowledge benchmarks on the embedded backend (SQLite file + sqlite-vec + bit matrix), 768-d clustered vectors:
 *   rag_search_p95_ms_10k / _100k / _1m   search p95 (query vector given), partition resident
 *   rag_recall10_100k / _1m               recall@10 against exact search
 *   rag_upstream_method_p95_ms_100k       upstream's method: JSON vectors decoded per query + linear cosine (≤ 20 queries)
 *   ingest_chunks_per_s                   sources pipeline with a zero-latency embedding server in another process
 * EDUCAI_BENCH_SKIP_1M=1 skips the 1M run (3+ GB on disk, minutes to build).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { issueForStoredPrincipal } from '../lib/nextcloud/identity.ts';
import { openDatabase } from '../lib/storage/database.ts';
import { migrateToLatest } from '../lib/storage/migrate.ts';
import type { NewItem, PartitionScope } from '../lib/knowledge/vector-index.ts';
import { SqliteVectorIndex } from '../lib/knowledge/vector-index-sqlite.ts';
import { ClusteredVectors } from '../test/knowledge/helpers/clustered-vectors.ts';
import { knowledgeOn } from '../test/knowledge/helpers/knowledge-harness.ts';
import { MemoryFiles } from '../test/knowledge/helpers/memory-files.ts';
import type { FakeKnowledgeEndpoints } from '../test/fakes/openai/fake-knowledge-endpoints.ts';
import { percentile, report } from './report.ts';

const DIMS = 768;
const scope: PartitionScope = { kind: 'bot', botId: 'bench' };

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

/** Exact top-k over a flat Float32Array of unit vectors. */
function exactTop(data: Float32Array, n: number, q: Float32Array, k: number): number[] {
  const best: Array<{ i: number; s: number }> = [];
  let floor = -Infinity;
  for (let i = 0; i < n; i++) {
    let s = 0;
    const off = i * DIMS;
    for (let j = 0; j < DIMS; j++) s += data[off + j]! * q[j]!;
    if (best.length < k || s > floor) {
      best.push({ i, s });
      best.sort((a, b) => b.s - a.s);
      if (best.length > k) best.pop();
      floor = best[best.length - 1]!.s;
    }
  }
  return best.map((b) => b.i);
}

async function searchBench(n: number, label: string, opts: { queries: number; recallQueries: number; upstream: boolean }): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'educai-rag-bench-'));
  try {
    const index = new SqliteVectorIndex(join(dir, 'vectors.sqlite'), { memoryBudgetBytes: 1024 * 1024 * 1024 });
    const gen = new ClusteredVectors({ dims: DIMS, clusters: Math.max(50, Math.round(n / 200)), seed: 42 });
    const data = new Float32Array(n * DIMS);
    const started = performance.now();
    const batch = 5_000;
    for (let start = 0; start < n; start += batch) {
      const items: NewItem[] = [];
      for (let i = start; i < Math.min(n, start + batch); i++) {
        const v = gen.point();
        data.set(v, i * DIMS);
        items.push({ seq: i, text: `chunk ${i}`, meta: {}, vector: v });
      }
      await index.replaceItems(scope, 'bench-model', 'bench', `part-${start / batch}`, items);
      if ((start / batch) % 20 === 0) log(`${label}: ${Math.min(n, start + batch)} vectors stored (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
    await index.warm(scope, 'bench-model');
    const times: number[] = [];
    for (let i = 0; i < 10; i++) await index.search(scope, 'bench-model', gen.query(), { limit: 10 });
    for (let i = 0; i < opts.queries; i++) {
      const q = gen.query();
      const t = performance.now();
      const r = await index.search(scope, 'bench-model', q, { limit: 10 });
      times.push(performance.now() - t);
      if (r.method !== 'matrix' && n > 2000) throw new Error(`unexpected search method ${r.method}`);
    }
    report(`rag_search_p95_ms_${label}`, percentile(times, 95), 'ms');
    if (opts.recallQueries > 0) {
      let hit = 0;
      for (let i = 0; i < opts.recallQueries; i++) {
        const q = gen.query();
        const truth = new Set(exactTop(data, n, q, 10));
        const r = await index.search(scope, 'bench-model', q, { limit: 10 });
        hit += r.hits.filter((h) => truth.has(h.seq)).length;
      }
      report(`rag_recall10_${label}`, hit / (opts.recallQueries * 10), 'ratio');
    }
    await index.close();
    if (opts.upstream) upstreamBench(dir, data, n, gen);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Upstream's RAG search: every chunk's JSON vector is loaded and decoded per query, then a cosine loop. */
function upstreamBench(dir: string, data: Float32Array, n: number, gen: ClusteredVectors): void {
  const db = new BetterSqlite3(join(dir, 'upstream.sqlite'));
  db.exec('create table educai_embeddings (id integer primary key, bot_id integer, chunk_text text, embedding text, embedding_model text)');
  const ins = db.prepare('insert into educai_embeddings (bot_id, chunk_text, embedding, embedding_model) values (1, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < n; i++) ins.run(`chunk ${i}`, JSON.stringify(Array.from(data.subarray(i * DIMS, (i + 1) * DIMS))), 'bench-model');
  })();
  const times: number[] = [];
  for (let qn = 0; qn < 10; qn++) {
    const q = gen.query();
    const t = performance.now();
    const rows = db.prepare('select id, chunk_text, embedding from educai_embeddings where bot_id = 1 and embedding_model = ?').all('bench-model') as Array<{
      id: number;
      chunk_text: string;
      embedding: string;
    }>;
    const scored: Array<{ id: number; s: number }> = [];
    for (const r of rows) {
      const v = JSON.parse(r.embedding) as number[];
      let dotp = 0;
      let na = 0;
      let nb = 0;
      for (let j = 0; j < v.length; j++) {
        dotp += v[j]! * q[j]!;
        na += v[j]! * v[j]!;
        nb += q[j]! * q[j]!;
      }
      const s = dotp / (Math.sqrt(na) * Math.sqrt(nb));
      if (s >= 0.3) scored.push({ id: r.id, s });
    }
    scored.sort((a, b) => b.s - a.s);
    scored.slice(0, 10);
    times.push(performance.now() - t);
  }
  db.close();
  report('rag_upstream_method_p95_ms_100k', percentile(times, 95), 'ms');
}

async function startFake(): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [new URL('../test/fakes/openai/fake-knowledge-process.ts', import.meta.url).pathname], {
    env: { PATH: process.env.PATH ?? '', DIMENSIONS: String(DIMS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /listening (\d+)/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error('fake embedding server exited')));
  });
  return { url: `http://127.0.0.1:${port}/v1`, stop: () => child.kill('SIGTERM') };
}

async function ingestBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'educai-ingest-bench-'));
  const fake = await startFake();
  try {
    const handle = openDatabase({ sqlitePath: join(dir, 'educai.sqlite') });
    await migrateToLatest(handle);
    const files = new MemoryFiles();
    const folder = files.folder('alice', 'Bench');
    const words = ['photosynthesis', 'energy', 'river', 'mountain', 'treaty', 'history', 'cell', 'membrane', 'ocean', 'climate', 'algebra', 'poetry'];
    for (let f = 0; f < 100; f++) {
      const paras: string[] = [];
      for (let p = 0; p < 120; p++) paras.push(Array.from({ length: 40 }, (_, i) => words[(f * 7 + p * 3 + i) % words.length]).join(' ') + '.');
      files.file('alice', `Bench/doc-${f}.txt`, paras.join('\n\n'), 'text/plain');
    }
    const k = await knowledgeOn({ ...handle, dataDir: dir }, { url: fake.url } as FakeKnowledgeEndpoints, files);
    await k.settings.update({ embeddingBatchSize: 128, embeddingConcurrency: 2 });
    const src = await k.sources.addNode('bench-bot', issueForStoredPrincipal('alice'), folder);
    const t = performance.now();
    await k.worker.drain();
    const seconds = (performance.now() - t) / 1000;
    const done = (await k.sources.get(src.id))!;
    if (done.status !== 'ready') throw new Error(`ingestion ended as ${done.status}: ${done.message}`);
    report('ingest_chunks_per_s', done.chunks / seconds, 'chunks/s');
    log(`ingested ${done.chunks} chunks from ${done.files} files in ${seconds.toFixed(1)} s`);
    await k.close();
    await handle.close();
  } finally {
    fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await ingestBench();
await searchBench(10_000, '10k', { queries: 200, recallQueries: 0, upstream: false });
await searchBench(100_000, '100k', { queries: 200, recallQueries: 100, upstream: true });
if (process.env.EDUCAI_BENCH_SKIP_1M === '1') log('rag_search_p95_ms_1m and rag_recall10_1m skipped (EDUCAI_BENCH_SKIP_1M=1)');
else await searchBench(1_000_000, '1m', { queries: 200, recallQueries: 50, upstream: false });
