import { sql } from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import type { DatabaseHandle } from './database.ts';
import { migrations } from './migrations/index.ts';

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export interface MigrationProgress {
  done: number;
  total: number;
  name: string;
}

/**
 * On a PostgreSQL server shared by several schemas, Kysely's table listing can
 * trip over another schema being dropped at that moment (SQLSTATE 3F000);
 * that says nothing about ours, so the attempt is repeated.
 */
export async function migrateToLatest(handle: DatabaseHandle, onStep?: (p: MigrationProgress) => void | Promise<void>): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(handle, onStep);
    } catch (err) {
      const foreignSchemaGone = /schema "[^"]+" does not exist/.test(err instanceof Error ? err.message : '') && attempt < 5;
      if (!foreignSchemaGone || handle.dialect !== 'postgres') throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

/** Runs pending migrations one by one so init can report real progress. */
async function migrateOnce(handle: DatabaseHandle, onStep?: (p: MigrationProgress) => void | Promise<void>): Promise<string[]> {
  // Kysely looks for its table in every schema unless told which; on a shared PostgreSQL server that is wrong.
  const schema = handle.dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(handle.db)).rows[0]?.s : undefined;
  const migrator = new Migrator({
    db: handle.db,
    ...(schema ? { migrationTableSchema: schema } : {}),
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'educai_migrations',
    migrationLockTableName: 'educai_migrations_lock',
  });
  const pending = (await migrator.getMigrations()).filter((m) => !m.executedAt);
  const applied: string[] = [];
  let done = 0;
  for (const m of pending) {
    const result: MigrationResultSet = await migrator.migrateUp();
    if (result.error) {
      const msg = result.error instanceof Error ? result.error.message : String(result.error);
      throw new MigrationError(`migration ${m.name} failed: ${msg}`);
    }
    for (const r of result.results ?? []) if (r.status === 'Success') applied.push(r.migrationName);
    done++;
    await onStep?.({ done, total: pending.length, name: m.name });
  }
  return applied;
}
