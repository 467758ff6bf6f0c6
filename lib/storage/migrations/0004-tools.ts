import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Per-bot tool assignments, by tool name (core, first-party, MCP and companion tools alike).
  await db.schema
    .createTable('bot_tools')
    .addColumn('bot_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('tool_name', 'varchar(64)', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('bot_tools_pk', ['bot_id', 'tool_name'])
    .execute();

  // Admin-registered MCP servers and companion providers; header values are in the vault.
  await db.schema
    .createTable('mcp_servers')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(100)', (c) => c.notNull().unique())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('tool_policies', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('approved_tools', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('approved_tools_hash', 'varchar(64)')
    .addColumn('header_names', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}
