import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { PreparedQuery, PreparedQueryError } from '../../lib/storage/prepared-query.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const put = new PreparedQuery<{ key: string; value: string; at: number }, never>((db, p) =>
  db
    .insertInto('settings')
    .values({ key: p.key, value: p.value, updated_at: p.at })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: p.value, updated_at: p.at })),
);
const read = new PreparedQuery<{ key: string }, { value: string; updated_at: number }>((db, p) =>
  db.selectFrom('settings').select(['value', 'updated_at']).where('key', '=', p.key),
);
const newer = new PreparedQuery<{ since: number; limit: number }, { key: string }>((db, p) =>
  db.selectFrom('settings').select('key').where('updated_at', '>', p.since).where('key', 'like', 'pq.%').orderBy('key').limit(p.limit),
);
const bump = new PreparedQuery<{ key: string; by: number }, never>((db, p) =>
  db
    .updateTable('settings')
    .set({ updated_at: sql`updated_at + ${p.by}` })
    .where('key', '=', p.key),
);

for (const dialect of DIALECTS) {
  describe(`prepared queries on ${dialect}`, () => {
    let tdb: TestDatabase;
    before(async () => {
      tdb = await createTestDatabase(dialect);
    });
    after(async () => tdb.drop());

    it('runs one compiled statement with fresh parameters on every call', async () => {
      await put.execute(tdb.db, { key: 'pq.a', value: '"one"', at: 10 });
      await put.execute(tdb.db, { key: 'pq.b', value: '"two"', at: 20 });
      await put.execute(tdb.db, { key: 'pq.a', value: '"uno"', at: 30 });
      assert.deepEqual(await read.first(tdb.db, { key: 'pq.a' }), { value: '"uno"', updated_at: 30 });
      assert.deepEqual(await read.first(tdb.db, { key: 'pq.b' }), { value: '"two"', updated_at: 20 });
      assert.equal(await read.first(tdb.db, { key: 'pq.none' }), undefined);
      assert.deepEqual(await newer.rows(tdb.db, { since: 15, limit: 10 }), [{ key: 'pq.a' }, { key: 'pq.b' }]);
      assert.deepEqual(await newer.rows(tdb.db, { since: 25, limit: 10 }), [{ key: 'pq.a' }]);
      assert.deepEqual(await newer.rows(tdb.db, { since: 0, limit: 1 }), [{ key: 'pq.a' }]);
    });

    it('reports affected rows and works inside a transaction, whose rollback it obeys', async () => {
      assert.equal(await bump.affected(tdb.db, { key: 'pq.b', by: 5 }), 1);
      assert.equal(await bump.affected(tdb.db, { key: 'pq.none', by: 5 }), 0);
      await assert.rejects(
        tdb.db.transaction().execute(async (trx) => {
          assert.equal(await bump.affected(trx, { key: 'pq.b', by: 100 }), 1);
          assert.equal((await read.first(trx, { key: 'pq.b' }))?.updated_at, 125);
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.equal((await read.first(tdb.db, { key: 'pq.b' }))?.updated_at, 25);
    });

    it('keeps values out of the SQL text: a value that looks like SQL is just a value', async () => {
      const hostile = "x'; drop table settings; --";
      await put.execute(tdb.db, { key: hostile, value: '"v"', at: 1 });
      assert.deepEqual(await read.first(tdb.db, { key: hostile }), { value: '"v"', updated_at: 1 });
    });

    it('refuses a missing parameter and a parameter used inside a larger value', async () => {
      await assert.rejects(read.first(tdb.db, {} as { key: string }), PreparedQueryError);
      const glued = new PreparedQuery<{ key: string }, { key: string }>((db, p) => db.selectFrom('settings').select('key').where('key', 'like', `${p.key}%`));
      await assert.rejects(glued.rows(tdb.db, { key: 'pq' }), PreparedQueryError);
    });
  });
}
