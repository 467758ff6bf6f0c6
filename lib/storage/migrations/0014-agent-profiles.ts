import type { Kysely } from 'kysely';
import { withAutoId } from './dialect.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Agent profiles (admin only): an unprivileged service account a bot's tools may act as (S13).
  await db.schema
    .createTable('agent_profiles')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('label', 'varchar(200)', (c) => c.notNull())
    .addColumn('account_uid', 'varchar(64)', (c) => c.notNull())
    .addColumn('scope_description', 'text', (c) => c.notNull())
    .addColumn('tool_families', 'text', (c) => c.notNull())
    .addColumn('trigger_groups', 'text', (c) => c.notNull())
    .addColumn('confirm_groups', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_by', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Which bots (or which owners' bots) may use a profile, within which scope.
  await db.schema
    .createTable('agent_profile_grants')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('profile_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('bot_id', 'varchar(36)')
    .addColumn('owner_uid', 'varchar(64)')
    .addColumn('max_scope', 'text', (c) => c.notNull())
    .addColumn('approved_by', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_profile_grants_profile').on('agent_profile_grants').column('profile_id').execute();
  // Credentials for what AppAPI cannot reach; the values live in the vault.
  await db.schema
    .createTable('agent_profile_credentials')
    .addColumn('profile_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    .addColumn('vault_name', 'varchar(200)', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('agent_profile_credentials_pk', ['profile_id', 'name'])
    .execute();
  // Every tool call: mode, profile, invoker, acting account, bot, room, tool, argument hash, outcome.
  await withAutoId(db, db.schema.createTable('tool_audit'))
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('mode', 'varchar(8)', (c) => c.notNull())
    .addColumn('profile_id', 'varchar(36)')
    .addColumn('invoker_uid', 'varchar(64)')
    .addColumn('acting_uid', 'varchar(64)')
    .addColumn('bot_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('room_token', 'varchar(64)')
    .addColumn('tool', 'varchar(64)', (c) => c.notNull())
    .addColumn('args_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('outcome', 'varchar(32)', (c) => c.notNull())
    .addColumn('detail', 'varchar(300)', (c) => c.notNull())
    .addColumn('trace_id', 'varchar(64)')
    .execute();
  await db.schema.createIndex('tool_audit_at').on('tool_audit').column('at').execute();
  // A stored confirmation remembers how it was requested (mode, profile, scope), so it runs as the same identity.
  await db.schema.alterTable('pending_confirmations').addColumn('execution', 'text').execute();
}
