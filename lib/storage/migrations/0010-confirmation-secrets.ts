import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Secret arguments of a pending action (a link password) wait sealed by the vault, never in `args`.
  await db.schema.alterTable('pending_confirmations').addColumn('sealed_secrets', 'text').execute();
}
