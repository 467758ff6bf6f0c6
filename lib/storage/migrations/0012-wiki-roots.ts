import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Registered wiki roots (one per bot): the periodic scan re-syncs index.md when a root's etag moves.
  await db.schema
    .createTable('wiki_roots')
    .addColumn('bot_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('location', 'varchar(32)', (c) => c.notNull())
    .addColumn('root_path', 'varchar(1024)', (c) => c.notNull())
    .addColumn('root_file_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('root_etag', 'varchar(128)', (c) => c.notNull())
    .addColumn('synced_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('wiki_roots_uid').on('wiki_roots').column('uid').execute();
}
