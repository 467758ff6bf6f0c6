// Kysely's SQLite driver prepares every statement on every call; preparing costs as much as
// running most of our queries. This wrapper hands it cached statements instead.
import type BetterSqlite3 from 'better-sqlite3';

/** What Kysely's SqliteDialect calls on its `database`. */
export interface SqliteDialectDatabase {
  prepare(sql: string): BetterSqlite3.Statement;
  close(): unknown;
}

/**
 * Wraps a connection so that `prepare` returns a cached statement for SQL it has seen
 * (least recently used first out beyond `max`). A statement still iterating (a streamed
 * select) is busy and cannot run twice, so a fresh one is prepared for that call. SQLite
 * re-prepares a cached statement by itself after a schema change.
 */
export function withStatementCache(db: BetterSqlite3.Database, max = 512): SqliteDialectDatabase {
  if (!Number.isInteger(max) || max < 1) throw new RangeError('statement cache size must be a positive whole number');
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    prepare(sql: string): BetterSqlite3.Statement {
      const hit = cache.get(sql);
      if (hit !== undefined) {
        if (hit.busy) return db.prepare(sql);
        // Re-inserting keeps the Map's order as recency order.
        cache.delete(sql);
        cache.set(sql, hit);
        return hit;
      }
      const statement = db.prepare(sql);
      cache.set(sql, statement);
      if (cache.size > max) cache.delete(cache.keys().next().value as string);
      return statement;
    },
    close(): void {
      cache.clear();
      db.close();
    },
  };
}
