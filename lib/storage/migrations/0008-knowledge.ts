import type { Kysely } from 'kysely';
import { isPostgres, withAutoId } from './dialect.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  // A bot's knowledge sources: a Nextcloud file or folder (resolved as the owner), or a URL.
  await withAutoId(db, db.schema.createTable('knowledge_sources'))
    .addColumn('bot_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('owner_uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('kind', 'varchar(8)', (c) => c.notNull())
    // 'node:<file id>' or 'url:<sha256 of the URL>': one source per thing per bot.
    .addColumn('source_key', 'varchar(100)', (c) => c.notNull())
    .addColumn('file_id', 'varchar(32)')
    .addColumn('url', 'text')
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('stage', 'varchar(16)')
    .addColumn('progress_current', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('progress_total', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('message', 'text')
    .addColumn('file_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('chunk_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('checksum', 'varchar(64)')
    .addColumn('embedding_model', 'varchar(255)')
    .addColumn('last_indexed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('knowledge_sources_key', ['bot_id', 'source_key'])
    .execute();
  await db.schema.createIndex('knowledge_sources_status').on('knowledge_sources').columns(['status', 'updated_at']).execute();

  // What each file of a source looked like when it was indexed (change detection) and its error.
  await db.schema
    .createTable('knowledge_source_files')
    .addColumn('source_id', 'integer', (c) => c.notNull())
    .addColumn('file_key', 'varchar(64)', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('etag', 'varchar(128)')
    .addColumn('content_hash', 'varchar(64)')
    .addColumn('embedding_model', 'varchar(255)')
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('chunk_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('knowledge_source_files_pk', ['source_id', 'file_key'])
    .execute();

  // Durable background jobs (never run inside a webhook). Claimed with a lease; on PostgreSQL with SKIP LOCKED.
  await withAutoId(db, db.schema.createTable('knowledge_jobs'))
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('ref_id', 'integer', (c) => c.notNull())
    .addColumn('force', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_until', 'bigint')
    .addColumn('worker_id', 'varchar(64)')
    .addColumn('not_before', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('knowledge_jobs_claim').on('knowledge_jobs').columns(['status', 'not_before', 'id']).execute();
  await db.schema.createIndex('knowledge_jobs_ref').on('knowledge_jobs').columns(['kind', 'ref_id', 'status']).execute();

  // Documents and images posted in a room, per (bot, room); kept 30 days, removed by RESET.
  for (const table of ['room_documents', 'room_images'] as const) {
    let t = withAutoId(db, db.schema.createTable(table))
      .addColumn('bot_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
      .addColumn('message_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('actor_uid', 'varchar(64)', (c) => c.notNull())
      .addColumn('file_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('mime_type', 'varchar(255)', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('checksum', 'varchar(64)')
      .addColumn('status', 'varchar(16)', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('chunk_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('embedding_model', 'varchar(255)');
    if (table === 'room_images') t = t.addColumn('vision_model', 'varchar(255)').addColumn('description', 'text');
    await t
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint(`${table}_file`, ['bot_id', 'room_token', 'file_id'])
      .execute();
    await db.schema.createIndex(`${table}_age`).on(table).column('updated_at').execute();
    await db.schema.createIndex(`${table}_message`).on(table).columns(['room_token', 'message_id']).execute();
  }

  // Vectors: on SQLite they live in their own file with sqlite-vec (lib/knowledge/vector-index-sqlite.ts).
  if (!isPostgres(db)) return;
  await withAutoId(db, db.schema.createTable('knowledge_partitions'))
    .addColumn('scope_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('bot_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull().defaultTo(''))
    .addColumn('model', 'varchar(255)', (c) => c.notNull())
    .addColumn('dims', 'integer', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('generation', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('deletions', 'bigint', (c) => c.notNull().defaultTo(0))
    .addUniqueConstraint('knowledge_partitions_scope', ['scope_kind', 'bot_id', 'room_token', 'model'])
    .execute();
  await db.schema.createIndex('knowledge_partitions_bot').on('knowledge_partitions').columns(['bot_id', 'room_token']).execute();
  await db.schema
    .createTable('knowledge_items')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('partition_id', 'integer', (c) => c.notNull())
    .addColumn('grp', 'varchar(64)', (c) => c.notNull())
    .addColumn('item_key', 'varchar(64)', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('bits', 'bytea', (c) => c.notNull())
    .addColumn('emb', 'bytea', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('meta', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('knowledge_items_partition').on('knowledge_items').columns(['partition_id', 'id']).execute();
  await db.schema.createIndex('knowledge_items_group').on('knowledge_items').columns(['grp', 'item_key']).execute();
}
