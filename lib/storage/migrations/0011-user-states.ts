import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Accounts as Nextcloud last reported them (S21): disabled or deleted owners' bots stop.
  await db.schema
    .createTable('user_states')
    .addColumn('uid', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('admin_seen_at', 'bigint')
    .addColumn('checked_at', 'bigint', (c) => c.notNull())
    .addColumn('changed_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('user_states_status').on('user_states').column('status').execute();
}
