import type { Kysely } from 'kysely';
import type { DatabaseHandle } from '../storage/database.ts';
import type { OpenVectorIndexOptions, VectorIndex } from './vector-index.ts';
import { PostgresVectorIndex } from './vector-index-postgres.ts';
import { SqliteVectorIndex } from './vector-index-sqlite.ts';

/** The vector index beside the main database: a sqlite-vec file on SQLite, tables of the same database on PostgreSQL. */
export function openVectorIndex(handle: DatabaseHandle, options: OpenVectorIndexOptions = {}): VectorIndex {
  if (handle.dialect === 'postgres') return new PostgresVectorIndex(handle.db as unknown as Kysely<unknown>, options);
  if (!options.sqlitePath) throw new Error('the SQLite vector index needs a file path (sqlitePath)');
  return new SqliteVectorIndex(options.sqlitePath, options);
}
