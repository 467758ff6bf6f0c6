import type { Kysely } from 'kysely';
import { withAutoId } from './dialect.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Fixed-window counters: one row per (scope, level, subject, window). `win`, because WINDOW is reserved in SQL.
  await db.schema
    .createTable('rate_limit_counters')
    .addColumn('scope', 'varchar(16)', (c) => c.notNull())
    .addColumn('level', 'varchar(16)', (c) => c.notNull())
    .addColumn('subject', 'varchar(255)', (c) => c.notNull())
    .addColumn('win', 'varchar(8)', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('used', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limit_counters_pk', ['scope', 'level', 'subject', 'win'])
    .execute();
  await db.schema.createIndex('rate_limit_counters_age').on('rate_limit_counters').column('updated_at').execute();

  // What the provider last said about its own limits, per scope.
  await db.schema
    .createTable('rate_limit_provider_state')
    .addColumn('scope', 'varchar(16)', (c) => c.primaryKey())
    .addColumn('remaining', 'integer')
    .addColumn('blocked_until', 'bigint')
    .addColumn('observed_at', 'bigint', (c) => c.notNull())
    .execute();

  // Turns that hit a limit, resumed once capacity is available.
  await withAutoId(db, db.schema.createTable('request_queue'))
    .addColumn('bot_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('route', 'varchar(191)', (c) => c.notNull())
    .addColumn('uid', 'varchar(64)')
    .addColumn('reply_to', 'varchar(32)')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('request_queue_status').on('request_queue').columns(['status', 'id']).execute();
  await db.schema.createIndex('request_queue_room').on('request_queue').columns(['room_token', 'status', 'id']).execute();
  await db.schema.createIndex('request_queue_bot').on('request_queue').column('bot_id').execute();

  await db.schema
    .createTable('trace_runs')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('bot_id', 'varchar(36)')
    .addColumn('bot_mention', 'varchar(100)', (c) => c.notNull().defaultTo(''))
    .addColumn('room_token', 'varchar(64)')
    .addColumn('message_id', 'varchar(32)')
    .addColumn('source', 'varchar(16)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('preview', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('error_summary', 'text')
    .addColumn('store_tool_content', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .addColumn('duration_ms', 'bigint')
    .addColumn('tool_call_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('event_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('total_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('trace_runs_user').on('trace_runs').columns(['uid', 'started_at']).execute();
  await db.schema.createIndex('trace_runs_user_status').on('trace_runs').columns(['uid', 'status', 'started_at']).execute();
  await db.schema.createIndex('trace_runs_bot').on('trace_runs').column('bot_id').execute();
  await db.schema.createIndex('trace_runs_age').on('trace_runs').column('started_at').execute();

  await withAutoId(db, db.schema.createTable('trace_events'))
    .addColumn('run_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('type', 'varchar(32)', (c) => c.notNull())
    .addColumn('tool_name', 'varchar(128)')
    .addColumn('status', 'varchar(16)')
    .addColumn('duration_ms', 'integer')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('preview', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('trace_events_seq', ['run_id', 'seq'])
    .execute();

  // Who read which run's content as an admin (S20); kept when the run is pruned.
  await withAutoId(db, db.schema.createTable('trace_audit'))
    .addColumn('admin_uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('run_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('owner_uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('trace_audit_at').on('trace_audit').column('at').execute();
}
