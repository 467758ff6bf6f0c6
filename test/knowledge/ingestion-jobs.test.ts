import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../lib/log/logger.ts';
import { JobWorker, KnowledgeJobQueue, RetryableJobError, type Job } from '../../lib/knowledge/ingestion-jobs.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

for (const dialect of DIALECTS) {
  describe(`knowledge job queue on ${dialect}`, () => {
    test('one waiting job per thing; force sticks', async () => {
      const tdb = await createTestDatabase(dialect);
      try {
        const q = new KnowledgeJobQueue(tdb.db, { now: () => 1000 });
        const a = await q.enqueue('source', 7);
        assert.equal(await q.enqueue('source', 7, { force: true }), a);
        assert.notEqual(await q.enqueue('room-doc', 7), a);
        const job = (await q.claim('w1'))!;
        assert.deepEqual([job.id, job.kind, job.refId, job.force, job.attempts], [a, 'source', 7, true, 1]);
        assert.notEqual(await q.enqueue('source', 7), a, 'a running job gets a follow-up');
      } finally {
        await tdb.drop();
      }
    });

    test('concurrent claims never hand out the same job; expired leases are taken over', async () => {
      const tdb = await createTestDatabase(dialect);
      const other = tdb.reopen();
      try {
        let now = 5_000;
        const q1 = new KnowledgeJobQueue(tdb.db, { now: () => now, leaseMs: 1_000 });
        const q2 = new KnowledgeJobQueue(other.db, { now: () => now, leaseMs: 1_000 });
        for (let i = 0; i < 20; i++) await q1.enqueue('source', i);
        const claimed = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? q1 : q2).claim(`w${i}`)));
        const ids = claimed.filter((j): j is Job => j !== null).map((j) => j.id);
        assert.equal(ids.length, 20);
        assert.equal(new Set(ids).size, 20, 'no job claimed twice');
        const first = claimed.find((j) => j !== null)!;
        const owner = `w${claimed.indexOf(first)}`;
        now += 2_000;
        const again = await q2.claim('w-new');
        assert.ok(again, 'a job whose lease ran out is due again');
        assert.equal(again.attempts, 2);
        assert.equal(
          await (claimed.indexOf(again) % 2 ? q1 : q2).heartbeat(again.id, `w${claimed.findIndex((j) => j?.id === again.id)}`),
          false,
          'the old worker learns it lost the job',
        );
        assert.ok(owner);
      } finally {
        await other.close();
        await tdb.drop();
      }
    });

    test('the worker retries retryable failures later and fails the others at once', async () => {
      const tdb = await createTestDatabase(dialect);
      try {
        let now = 10_000;
        const q = new KnowledgeJobQueue(tdb.db, { now: () => now, maxAttempts: 3 });
        const seen: string[] = [];
        const worker = new JobWorker({
          queue: q,
          logger: createLogger({ level: 'silent' }),
          handlers: {
            source: async (job) => {
              seen.push(`source ${job.attempts}`);
              throw new RetryableJobError('provider down');
            },
            'room-doc': async () => {
              seen.push('doc');
              throw new Error('broken');
            },
            'room-image': async () => void seen.push('image'),
          },
        });
        await q.enqueue('source', 1);
        await q.enqueue('room-doc', 2);
        await q.enqueue('room-image', 3);
        await worker.drain();
        assert.deepEqual(seen, ['source 1', 'doc', 'image']);
        now += 15_000;
        await worker.drain();
        now += 30_000;
        await worker.drain();
        now += 3_600_000;
        await worker.drain();
        assert.deepEqual(
          seen.filter((s) => s.startsWith('source')),
          ['source 1', 'source 2', 'source 3'],
          'three attempts, then failed for good',
        );
        const rows = await tdb.db.selectFrom('knowledge_jobs').select(['kind', 'status', 'last_error']).orderBy('id').execute();
        assert.deepEqual(
          rows.map((r) => [r.kind, r.status]),
          [
            ['source', 'failed'],
            ['room-doc', 'failed'],
            ['room-image', 'done'],
          ],
        );
        assert.equal(rows[0]!.last_error, 'provider down');
      } finally {
        await tdb.drop();
      }
    });
  });
}
