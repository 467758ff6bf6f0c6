import type { Kysely } from 'kysely';

/**
 * A tool server may name an agent profile credential to present in agent mode (issue 10). Only the
 * name is stored here; the value stays in the vault with its profile and is opened per call.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mcp_servers').addColumn('agent_credential', 'varchar(64)').execute();
}
