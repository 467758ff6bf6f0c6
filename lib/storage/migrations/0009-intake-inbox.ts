import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.ts';

/**
 * The worker's progress on inbox rows moves to `inbox_progress`, so the intake
 * only ever inserts into `inbox` and the worker only ever writes the main
 * database. On SQLite `inbox` moves to its own file (attached as `intake`,
 * see storage/database.ts); rows waiting at upgrade time are carried over.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('inbox_progress')
    .addColumn('inbox_id', 'bigint', (c) => c.primaryKey())
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    // 'processing' | 'pending' (waiting for a retry) | 'done' (the intake prunes the inbox row, then this one goes)
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('not_before', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('inbox_progress_status').on('inbox_progress').columns(['status', 'inbox_id']).execute();

  if (isPostgres(db)) {
    await sql`insert into inbox_progress (inbox_id, room_token, status, attempts, not_before, started_at)
      select id, room_token, 'pending', attempts, not_before, started_at from inbox where attempts > 0 or status <> 'pending'`.execute(db);
    await db.schema.dropIndex('inbox_status').execute();
    // status, attempts, not_before and started_at stay (unused, with defaults): dropping columns races with
    // Kysely's catalogue introspection of other schemas on a shared server (pg_get_serial_sequence).
    await db.schema.createIndex('inbox_room').on('inbox').columns(['room_token', 'id']).execute();
    return;
  }
  const attached = await sql<{ name: string }>`select name from pragma_database_list where name = 'intake'`.execute(db);
  if (attached.rows.length === 0) throw new Error('the intake database is not attached (open SQLite through storage/database.ts)');
  await sql`insert or ignore into intake.inbox (id, room_token, message_id, actor_id, route, kind, payload, received_at)
    select id, room_token, message_id, actor_id, route, kind, payload, received_at from main.inbox`.execute(db);
  await sql`insert into inbox_progress (inbox_id, room_token, status, attempts, not_before, started_at)
    select id, room_token, 'pending', attempts, not_before, started_at from main.inbox where attempts > 0 or status <> 'pending'`.execute(db);
  // Explicit ids move intake.sqlite_sequence past them: progress and reply chunks never meet a reused id.
  await sql`drop table main.inbox`.execute(db);
}
