import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Issue 23: a 👍/👎 on the request answers it. Talk's bot post returns no message id, so the
  // request carries our referenceId, and the message id is stored once found in the chat.
  await db.schema.alterTable('pending_confirmations').addColumn('talk_reference_id', 'varchar(64)').execute();
  await db.schema.alterTable('pending_confirmations').addColumn('talk_message_id', 'varchar(20)').execute();
}
