import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openVectorIndex } from '../../lib/knowledge/open-vector-index.ts';
import type { NewItem, PartitionScope, VectorIndex } from '../../lib/knowledge/vector-index.ts';
import { SqliteVectorIndex } from '../../lib/knowledge/vector-index-sqlite.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { ClusteredVectors, exactTopK, unit } from './helpers/clustered-vectors.ts';

const DIMS = 64;
const botA: PartitionScope = { kind: 'bot', botId: 'bot-a' };
const botB: PartitionScope = { kind: 'bot', botId: 'bot-b' };
const roomX: PartitionScope = { kind: 'room-doc', botId: 'bot-a', roomToken: 'roomx' };
const roomY: PartitionScope = { kind: 'room-doc', botId: 'bot-a', roomToken: 'roomy' };

function items(vectors: Float32Array[], label: string): NewItem[] {
  return vectors.map((vector, seq) => ({ seq, text: `${label} ${seq}`, meta: { label }, vector }));
}

function near(v: Float32Array, amount: number, seed: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! + amount * Math.sin(seed * 31 + i * 7);
  return unit(out);
}

for (const dialect of DIALECTS) {
  describe(`vector index on ${dialect}`, () => {
    let tdb: TestDatabase;
    let index: VectorIndex;
    const open = (opts: { exactThreshold?: number } = {}) => openVectorIndex(tdb, { sqlitePath: join(tdb.dataDir, 'knowledge-vectors.sqlite'), ...opts });

    before(async () => {
      tdb = await createTestDatabase(dialect);
      index = open({ exactThreshold: 10 });
    });
    after(async () => {
      await index.close();
      await tdb.drop();
    });

    test('bot A never sees bot B, room X never room Y, even when the others are closer', async () => {
      const gen = new ClusteredVectors({ dims: DIMS, clusters: 4, seed: 7 });
      const query = gen.query();
      // Bot B holds 300 vectors almost identical to the query; bot A holds 30 ordinary ones.
      await index.replaceItems(
        botB,
        'm1',
        'src:b',
        'f1',
        items(
          Array.from({ length: 300 }, (_, i) => near(query, 0.05, i)),
          'B',
        ),
      );
      await index.replaceItems(
        botA,
        'm1',
        'src:a',
        'f1',
        items(
          Array.from({ length: 30 }, () => gen.point()),
          'A',
        ),
      );
      const a = await index.search(botA, 'm1', query, { limit: 5 });
      assert.equal(a.hits.length, 5, 'the scope is applied before the top-k, not after');
      assert.ok(a.hits.every((h) => h.group === 'src:a' && h.text.startsWith('A ')));
      assert.ok(a.method === 'matrix' || a.method === 'vec0', 'the prefilter path ran');
      const b = await index.search(botB, 'm1', query, { limit: 5 });
      assert.ok(b.hits.every((h) => h.group === 'src:b'));

      await index.replaceItems(
        roomY,
        'm1',
        'doc:y',
        'f',
        items(
          Array.from({ length: 50 }, (_, i) => near(query, 0.02, i)),
          'Y',
        ),
      );
      await index.replaceItems(roomX, 'm1', 'doc:x', 'f', items([gen.point(), gen.point()], 'X'));
      const x = await index.search(roomX, 'm1', query, { limit: 10 });
      assert.deepEqual(
        x.hits.map((h) => h.group),
        ['doc:x', 'doc:x'],
      );
      const botOnly = await index.search(botA, 'm1', query, { limit: 50 });
      assert.ok(
        botOnly.hits.every((h) => h.group === 'src:a'),
        'room documents are not part of the bot scope',
      );
      assert.equal((await index.search(botA, 'other-model', query, { limit: 5 })).hits.length, 0);
    });

    test('binary prefilter + rerank finds what exact search finds', async () => {
      const gen = new ClusteredVectors({ dims: DIMS, clusters: 20, seed: 11 });
      const data = Array.from({ length: 3000 }, () => gen.point());
      const scope: PartitionScope = { kind: 'bot', botId: 'recall' };
      await index.replaceItems(scope, 'm1', 'src:r', 'f', items(data, 'R'));
      const idsBySeq = new Map<number, number>();
      const exactIndex = open({ exactThreshold: 1_000_000 });
      try {
        let agree = 0;
        for (let q = 0; q < 20; q++) {
          const query = gen.query();
          const approx = await index.search(scope, 'm1', query, { limit: 10 });
          const exact = await exactIndex.search(scope, 'm1', query, { limit: 10 });
          assert.equal(exact.method, 'exact');
          for (const h of exact.hits) idsBySeq.set(h.seq, h.id);
          const truth = exactTopK(
            data,
            data.map((_, i) => i),
            query,
            10,
          );
          assert.deepEqual(
            exact.hits.map((h) => h.seq),
            truth,
            'exact search is exact',
          );
          agree += approx.hits.filter((h) => truth.includes(h.seq)).length;
          for (let i = 1; i < approx.hits.length; i++) assert.ok(approx.hits[i - 1]!.score >= approx.hits[i]!.score, 'ordered by relevance');
        }
        assert.ok(agree / 200 >= 0.95, `recall@10 ${agree / 200}`);
      } finally {
        await exactIndex.close();
      }
    });

    test('replacing an item twice leaves one copy; another model moves it', async () => {
      const gen = new ClusteredVectors({ dims: DIMS, clusters: 3, seed: 3 });
      const scope: PartitionScope = { kind: 'bot', botId: 'dup' };
      const vs = Array.from({ length: 12 }, () => gen.point());
      await index.replaceItems(scope, 'm1', 'src:1', 'node:5', items(vs, 'D'));
      await index.replaceItems(scope, 'm1', 'src:1', 'node:5', items(vs, 'D'));
      await index.replaceItems(scope, 'm1', 'src:1', 'node:6', items(vs.slice(0, 3), 'E'));
      assert.equal(await index.countItems(scope, 'src:1', 'node:5'), 12);
      assert.equal(await index.countItems(scope, 'src:1'), 15);
      assert.deepEqual(await index.counts(scope), [{ model: 'm1', count: 15 }]);
      const res = await index.search(scope, 'm1', vs[0]!, { limit: 20, minScore: -1 });
      assert.equal(res.hits.length, 15);
      await index.replaceItems(scope, 'm2', 'src:1', 'node:5', items(vs, 'D2'));
      assert.deepEqual(await index.counts(scope), [
        { model: 'm1', count: 3 },
        { model: 'm2', count: 12 },
      ]);
      assert.equal(await index.deleteItems(scope, 'src:1'), 15);
      assert.deepEqual(await index.counts(scope), []);
    });

    test('a resident matrix follows inserts and deletes', async () => {
      const gen = new ClusteredVectors({ dims: DIMS, clusters: 5, seed: 5 });
      const scope: PartitionScope = { kind: 'bot', botId: 'live' };
      await index.replaceItems(
        scope,
        'm1',
        'g',
        'a',
        items(
          Array.from({ length: 40 }, () => gen.point()),
          'a',
        ),
      );
      const target = gen.point();
      await index.warm(scope, 'm1');
      assert.equal((await index.search(scope, 'm1', target, { limit: 1 })).method, 'matrix');
      await index.replaceItems(scope, 'm1', 'g', 'b', items([target], 'b'));
      const found = await index.search(scope, 'm1', target, { limit: 1 });
      assert.equal(found.hits[0]?.itemKey, 'b', 'the appended row is searched');
      assert.ok(found.hits[0]!.score > 0.999);
      await index.deleteItems(scope, 'g', 'b');
      const gone = await index.search(scope, 'm1', target, { limit: 50 });
      assert.ok(gone.hits.every((h) => h.itemKey === 'a'));
      assert.equal(gone.hits.length, 40);
    });

    test('minScore filters and reports what else is available', async () => {
      const scope: PartitionScope = { kind: 'room-image', botId: 'ms', roomToken: 'r1' };
      const base = unit(Float32Array.from({ length: DIMS }, (_, i) => (i % 3) - 1));
      const vs = [near(base, 0.01, 1), near(base, 0.02, 2), near(base, 0.03, 3), unit(Float32Array.from({ length: DIMS }, (_, i) => (i % 2 ? 1 : -1)))];
      await index.replaceItems(scope, 'm1', 'img:1', 'f', items(vs, 'I'));
      const r = await index.search(scope, 'm1', base, { limit: 2, minScore: 0.9 });
      assert.equal(r.hits.length, 2);
      assert.equal(r.moreAvailable, 1);
      assert.ok(r.hits.every((h) => h.score >= 0.9));
      const restricted = await index.search(scope, 'm1', base, { limit: 5, groups: ['img:other'] });
      assert.equal(restricted.hits.length, 0);
    });

    test('deleting a room removes its documents and images, not the bot knowledge', async () => {
      const gen = new ClusteredVectors({ dims: DIMS, clusters: 2, seed: 9 });
      const bot: PartitionScope = { kind: 'bot', botId: 'reset' };
      const docs: PartitionScope = { kind: 'room-doc', botId: 'reset', roomToken: 'r' };
      const imgs: PartitionScope = { kind: 'room-image', botId: 'reset', roomToken: 'r' };
      const other: PartitionScope = { kind: 'room-doc', botId: 'reset', roomToken: 'other' };
      for (const s of [bot, docs, imgs, other]) await index.replaceItems(s, 'm1', 'g', 'k', items([gen.point(), gen.point()], 'x'));
      assert.equal(await index.deleteScope('reset', 'r'), 4);
      assert.equal((await index.counts(bot))[0]?.count, 2);
      assert.equal((await index.counts(other))[0]?.count, 2);
      assert.deepEqual(await index.counts(docs), []);
      assert.equal(await index.deleteScope('reset'), 4);
    });

    if (dialect === 'sqlite') {
      test('a cold partition is searched through sqlite-vec while its matrix loads', async () => {
        const gen = new ClusteredVectors({ dims: DIMS, clusters: 8, seed: 21 });
        const scope: PartitionScope = { kind: 'bot', botId: 'cold' };
        const data = Array.from({ length: 500 }, () => gen.point());
        await index.replaceItems(scope, 'm1', 'g', 'k', items(data, 'c'));
        const cold = new SqliteVectorIndex(join(tdb.dataDir, 'knowledge-vectors.sqlite'), { exactThreshold: 10 });
        try {
          const query = gen.query();
          const first = await cold.search(scope, 'm1', query, { limit: 10 });
          assert.equal(first.method, 'vec0');
          await cold.warm(scope, 'm1');
          const second = await cold.search(scope, 'm1', query, { limit: 10 });
          assert.equal(second.method, 'matrix');
          assert.deepEqual(
            second.hits.map((h) => h.seq),
            first.hits.map((h) => h.seq),
          );
        } finally {
          await cold.close();
        }
      });
    }
  });
}
