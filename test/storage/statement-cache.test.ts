import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { withStatementCache } from '../../lib/storage/statement-cache.ts';

function counting(db: BetterSqlite3.Database): { db: BetterSqlite3.Database; prepared: () => number } {
  let n = 0;
  const original = db.prepare.bind(db);
  (db as { prepare: typeof db.prepare }).prepare = ((text: string) => {
    n++;
    return original(text);
  }) as typeof db.prepare;
  return { db, prepared: () => n };
}

describe('SQLite statement cache', () => {
  it('prepares each SQL text once and reuses the statement', () => {
    const { db, prepared } = counting(new BetterSqlite3(':memory:'));
    const cached = withStatementCache(db);
    const a = cached.prepare('select 1 as one');
    const b = cached.prepare('select 1 as one');
    assert.equal(a, b);
    assert.equal(prepared(), 1);
    assert.deepEqual(b.all(), [{ one: 1 }]);
    cached.close();
    assert.equal(db.open, false);
  });

  it('drops the least recently used statement beyond its size', () => {
    const { db, prepared } = counting(new BetterSqlite3(':memory:'));
    const cached = withStatementCache(db, 2);
    cached.prepare('select 1');
    cached.prepare('select 2');
    cached.prepare('select 1'); // 1 is now the most recent
    cached.prepare('select 3'); // evicts 2
    assert.equal(prepared(), 3);
    cached.prepare('select 1');
    assert.equal(prepared(), 3, 'select 1 stayed cached');
    cached.prepare('select 2');
    assert.equal(prepared(), 4, 'select 2 was evicted and is prepared again');
    cached.close();
  });

  it('gives a busy (iterating) statement a fresh twin instead of failing', () => {
    const db = new BetterSqlite3(':memory:');
    db.exec('create table t (a int); insert into t values (1), (2)');
    const cached = withStatementCache(db);
    const outer = cached.prepare('select a from t order by a');
    const seen: number[] = [];
    for (const row of outer.iterate() as Iterable<{ a: number }>) {
      const inner = cached.prepare('select a from t order by a');
      assert.notEqual(inner, outer);
      seen.push(row.a, (inner.all() as Array<{ a: number }>).length);
    }
    assert.deepEqual(seen, [1, 2, 2, 2]);
    cached.close();
  });

  it('sees schema changes through Kysely (columns added after the statement was cached)', async () => {
    const raw = new BetterSqlite3(':memory:');
    const db = new Kysely<{ t: { a: number; b?: number } }>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
    await sql`create table t (a int)`.execute(db);
    await db.insertInto('t').values({ a: 1 }).execute();
    assert.deepEqual(await db.selectFrom('t').selectAll().execute(), [{ a: 1 }]);
    await sql`alter table t add column b int default 7`.execute(db);
    assert.deepEqual(await db.selectFrom('t').selectAll().execute(), [{ a: 1, b: 7 }]);
    await db.destroy();
    assert.equal(raw.open, false);
  });

  it('refuses a nonsensical size', () => {
    assert.throws(() => withStatementCache(new BetterSqlite3(':memory:'), 0), /positive whole number/);
  });
});
