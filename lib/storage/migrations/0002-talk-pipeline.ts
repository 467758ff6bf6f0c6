import type { Kysely } from 'kysely';
import { withAutoId } from './dialect.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('bots')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('owner_uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('display_name', 'varchar(200)', (c) => c.notNull())
    .addColumn('mention', 'varchar(100)', (c) => c.notNull().unique())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('system_prompt', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('model', 'varchar(255)')
    .addColumn('temperature', 'real')
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('onboarding_questions', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('bots_owner').on('bots').column('owner_uid').execute();

  // One row per Talk bot of ours registered through AppAPI (the shared "Talk AI", later dedicated ones).
  await db.schema
    .createTable('talk_identities')
    .addColumn('route', 'varchar(191)', (c) => c.primaryKey())
    .addColumn('bot_id', 'varchar(36)')
    .addColumn('talk_name', 'varchar(64)', (c) => c.notNull())
    .addColumn('appapi_bot_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('registered_at', 'bigint', (c) => c.notNull())
    .execute();

  // Which of our Talk identities a room delivers to (learned from deliveries), so replies use one it has enabled.
  await db.schema
    .createTable('room_identities')
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('route', 'varchar(191)', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('room_identities_pk', ['room_token', 'route'])
    .execute();

  // Durable inbox: written before the webhook is acknowledged, deleted once handled (S19).
  await withAutoId(db, db.schema.createTable('inbox'))
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('message_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('actor_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('route', 'varchar(191)', (c) => c.notNull())
    .addColumn('kind', 'varchar(32)', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('not_before', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addUniqueConstraint('inbox_event', ['room_token', 'message_id', 'actor_id'])
    .execute();
  await db.schema.createIndex('inbox_status').on('inbox').columns(['status', 'room_token', 'id']).execute();

  // Messages whose authenticity Talk confirmed and which we handled; the dedupe key written after verification (S3).
  await db.schema
    .createTable('handled_messages')
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('message_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('inbox_id', 'integer', (c) => c.notNull())
    .addColumn('handled_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('handled_messages_pk', ['room_token', 'message_id'])
    .execute();
  await db.schema.createIndex('handled_messages_age').on('handled_messages').column('handled_at').execute();

  // Every chunk of a reply, recorded before it is posted and marked once Talk accepted it.
  await db.schema
    .createTable('reply_chunks')
    .addColumn('inbox_id', 'integer', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('reference_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('posted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('reply_chunks_pk', ['inbox_id', 'seq'])
    .execute();

  await db.schema
    .createTable('room_states')
    .addColumn('bot_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('response_mode', 'varchar(16)')
    .addColumn('onboarding_status', 'varchar(32)', (c) => c.notNull())
    .addColumn('current_question_id', 'varchar(64)')
    .addColumn('onboarding_answers', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('deferred_message', 'text')
    .addColumn('activated_by', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('room_states_pk', ['bot_id', 'room_token'])
    .execute();
  await db.schema.createIndex('room_states_room').on('room_states').column('room_token').execute();

  await withAutoId(db, db.schema.createTable('conversation_messages'))
    .addColumn('bot_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('thread_id', 'varchar(32)', (c) => c.notNull().defaultTo(''))
    .addColumn('invoker_uid', 'varchar(64)', (c) => c.notNull().defaultTo(''))
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('author_uid', 'varchar(255)', (c) => c.notNull().defaultTo(''))
    .addColumn('message_id', 'varchar(32)')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('conversation_scope').on('conversation_messages').columns(['bot_id', 'room_token', 'thread_id', 'invoker_uid', 'id']).execute();
  await db.schema.createIndex('conversation_age').on('conversation_messages').column('created_at').execute();
  await db.schema.createIndex('conversation_message').on('conversation_messages').columns(['room_token', 'message_id']).execute();
}
