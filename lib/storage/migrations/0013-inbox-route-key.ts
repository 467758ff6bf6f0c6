import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.ts';

/**
 * One inbox row per delivery route: a message kept by a bot's own Talk identity must not swallow the
 * shared Talk bot's delivery of it. On SQLite the inbox lives in the intake file (storage/database.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter table inbox drop constraint inbox_event`.execute(db);
  await sql`alter table inbox add constraint inbox_event unique (room_token, message_id, actor_id, route)`.execute(db);
}
