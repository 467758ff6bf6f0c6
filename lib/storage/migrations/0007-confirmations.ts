import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Actions waiting for the user's confirmation (S7), kept after use so a repeated or late
  // "yes <code>" can be answered with the reason it does nothing.
  await db.schema
    .createTable('pending_confirmations')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('user_uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('bot_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('room_token', 'varchar(64)', (c) => c.notNull())
    .addColumn('provider_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('tool_name', 'varchar(64)', (c) => c.notNull())
    .addColumn('args', 'text', (c) => c.notNull())
    .addColumn('binding', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('action_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('code', 'varchar(8)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .addColumn('consumed_message_id', 'varchar(32)')
    .addColumn('result', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // At most one pending action per (user, bot, room), enforced by the database itself.
  await db.schema
    .createIndex('pending_confirmations_one_pending')
    .on('pending_confirmations')
    .columns(['user_uid', 'bot_id', 'room_token'])
    .unique()
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema.createIndex('pending_confirmations_room').on('pending_confirmations').columns(['room_token', 'status']).execute();
  await db.schema.createIndex('pending_confirmations_user').on('pending_confirmations').columns(['user_uid', 'created_at']).execute();
  await db.schema.createIndex('pending_confirmations_age').on('pending_confirmations').column('expires_at').execute();
}
