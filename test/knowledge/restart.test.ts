// Kill-and-restart in the middle of an ingestion: a real worker process is SIGKILLed while
// it waits for an embedding answer; a new worker completes the job without duplicate chunks
// and without embedding the files the dead one had already stored.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueForStoredPrincipal } from '../../lib/nextcloud/identity.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';
import { FakeKnowledgeEndpoints } from '../fakes/openai/fake-knowledge-endpoints.ts';
import { knowledgeOn } from './helpers/knowledge-harness.ts';
import { MemoryFiles } from './helpers/memory-files.ts';

const alice = issueForStoredPrincipal('alice');
const CHILD = new URL('./helpers/ingest-child.ts', import.meta.url).pathname;

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

for (const dialect of DIALECTS) {
  describe(`ingestion restart on ${dialect}`, () => {
    let fake: FakeKnowledgeEndpoints;
    before(async () => {
      fake = await FakeKnowledgeEndpoints.start({ dimensions: 64 });
    });
    after(() => fake.close());

    test('a job killed mid-way completes after a restart without duplicate chunks', async () => {
      const tdb = await createTestDatabase(dialect);
      const files = new MemoryFiles();
      const folder = files.folder('alice', 'Notes');
      const topics = ['rivers', 'mountains', 'deserts', 'glaciers', 'forests', 'oceans'];
      topics.forEach((t) => files.file('alice', `Notes/${t}.txt`, `A short note about ${t} and their role in geography.`, 'text/plain'));
      const manifest = join(tdb.dataDir, 'files.json');
      writeFileSync(manifest, files.toJSON());

      const setupModule = await knowledgeOn(tdb, fake, files);
      const src = await setupModule.sources.addNode('bot-k', alice, folder);
      await setupModule.close();

      // One file per embedding request; the fourth request never gets an answer.
      const base = fake.embeddingRequests;
      fake.holdEmbeddingsAfter(base + 3);
      const child = spawn(process.execPath, [CHILD], {
        env: {
          PATH: process.env.PATH ?? '',
          KNOWLEDGE_CHILD: JSON.stringify({ dialect, dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl, pgSchema: tdb.pgSchema, manifest, fakeUrl: fake.url }),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      try {
        await until(() => fake.embeddingRequests >= base + 4, 'the child to reach the fourth file');
        child.kill('SIGKILL');
        await exited;
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      fake.release();

      // The new process: on SQLite it resumes what was left running; on PostgreSQL it waits out the lease.
      const later = Date.now() + 10 * 60_000;
      const k = await knowledgeOn(tdb, fake, files, dialect === 'postgres' ? { now: () => later } : {});
      try {
        const stuck = (await k.sources.get(src.id))!;
        assert.equal(stuck.status, 'indexing', 'the killed worker left the source mid-way');
        // The fourth request went out after the third answer; whether the third file's chunks were stored
        // before the kill depends on timing, so what counts is that every stored file stays and is not redone.
        const storedBeforeKill = (await k.sources.files(src.id)).length;
        assert.ok(storedBeforeKill >= 1 && storedBeforeKill <= 3, `some but not all files were stored before the kill (${storedBeforeKill})`);
        if (dialect === 'sqlite') assert.equal(await k.queue.releaseAllRunning(), 1);
        const requestsBefore = fake.embeddingRequests;
        await k.worker.drain();

        const done = (await k.sources.get(src.id))!;
        assert.equal(done.status, 'ready');
        assert.equal(done.files, 6);
        assert.equal(done.chunks, 6);
        assert.equal(fake.embeddingRequests - requestsBefore, 6 - storedBeforeKill, 'only the unfinished files were embedded again');
        const scope = { kind: 'bot' as const, botId: 'bot-k' };
        for (const f of await k.sources.files(src.id))
          assert.equal(await k.index.countItems(scope, `src:${src.id}`, f.fileKey), f.chunks, `${f.path} has no duplicate chunks`);
        assert.deepEqual(await k.index.counts(scope), [{ model: 'fake-embed', count: 6 }]);
      } finally {
        await k.close();
        await tdb.drop();
      }
    });
  });
}
