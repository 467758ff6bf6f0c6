import type { Kysely } from 'kysely';

/**
 * Scale-out (web and worker processes on one PostgreSQL): a claimed inbox row carries a lease (owner and
 * expiry, renewed while its turn runs), so a dead worker's turns pass to another one; `leader_leases` lets
 * one process at a time run each housekeeping timer. Both dialects get the columns; SQLite never sets them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('inbox_progress').addColumn('lease_owner', 'varchar(64)').execute();
  await db.schema.alterTable('inbox_progress').addColumn('lease_until', 'bigint').execute();
  await db.schema
    .createTable('leader_leases')
    .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('owner', 'varchar(64)', (c) => c.notNull())
    .addColumn('until', 'bigint', (c) => c.notNull())
    .execute();
}
