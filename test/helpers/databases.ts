import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, type DatabaseHandle, type Dialect } from '../../lib/storage/database.ts';
import { migrateToLatest } from '../../lib/storage/migrate.ts';

export const DIALECTS: Dialect[] = ['sqlite', 'postgres'];

export function testDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
}

export interface TestDatabase extends DatabaseHandle {
  /** Options to open the same database again (e.g. after a simulated restart). */
  reopen(): DatabaseHandle;
  /** Settings for buildApplication: a data folder and, for PostgreSQL, the URL and schema. */
  dataDir: string;
  databaseUrl: string | null;
  pgSchema: string | undefined;
  drop(): Promise<void>;
}

/**
 * A fresh, empty database of the given dialect: a temporary SQLite file, or a
 * new PostgreSQL schema on the real server. Schemas are not dropped at the
 * end: a DROP SCHEMA racing with another test's catalog query makes that query
 * fail, so scripts/ensure-postgres.sh drops the leftovers before each run.
 */
export async function createTestDatabase(dialect: Dialect, options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'educai-test-'));
  let schema: string | undefined;
  let reopen: () => DatabaseHandle;
  if (dialect === 'sqlite') {
    const path = join(dataDir, 'educai.sqlite');
    reopen = () => openDatabase({ sqlitePath: path });
  } else {
    schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    const s = schema;
    reopen = () => openDatabase({ databaseUrl: testDatabaseUrl(), pgSchema: s, pgPoolSize: 5 });
  }
  const handle = reopen();
  if (options.migrate !== false) await migrateToLatest(handle);
  return {
    ...handle,
    reopen,
    dataDir,
    databaseUrl: dialect === 'postgres' ? testDatabaseUrl() : null,
    pgSchema: schema,
    async drop() {
      await handle.close().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
