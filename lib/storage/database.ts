import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { CurrentSchemaPostgresDialect } from './scoped-introspector.ts';
import pg from 'pg';
import type { Database } from './schema.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** postgres:// URL; when absent the embedded SQLite file is used. */
  databaseUrl?: string | null;
  sqlitePath?: string;
  /** PostgreSQL schema to use (tests isolate themselves this way). */
  pgSchema?: string;
  pgPoolSize?: number;
}

/**
 * SQLite runs in WAL mode with synchronous=NORMAL: a commit survives a process
 * crash, and only an OS crash or power loss may lose the last transactions.
 * That keeps a webhook insert in the microseconds (issue: ack p99 ≤ 5 ms).
 */
function openSqlite(path: string): DatabaseHandle {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    // Conversations and encrypted secrets live here: owner-only, and SQLite gives -wal/-shm the same mode.
    closeSync(openSync(path, 'a', 0o600));
  }
  const sqlite = new BetterSqlite3(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

function openPostgres(url: string, schema: string | undefined, poolSize: number): DatabaseHandle {
  // int8 (timestamps in ms, ids) as numbers: all our values stay below 2^53.
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text'),
  };
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types,
    // With a schema per tenant, catalog queries scan every schema; parallel workers there race with schemas being dropped.
    ...(schema ? { options: `-c search_path=${schema} -c max_parallel_workers_per_gather=0` } : {}),
  });
  const db = new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
  return { db, dialect: 'postgres', close: () => db.destroy() };
}

export function openDatabase(options: OpenOptions): DatabaseHandle {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.pgSchema, options.pgPoolSize ?? 10);
  if (!options.sqlitePath) throw new Error('sqlitePath is required without a DATABASE_URL');
  return openSqlite(options.sqlitePath);
}
