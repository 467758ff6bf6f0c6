import type { Kysely } from 'kysely';
import { withAutoId } from './dialect.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Visibility, review state and switches of each bot. Existing bots become personal: nobody else used them under a scope yet.
  const columns: Array<[string, 'varchar(16)' | 'varchar(64)' | 'text' | 'integer' | 'bigint', string | number | null]> = [
    ['visibility', 'varchar(16)', 'personal'],
    ['allowed_groups', 'text', '[]'],
    ['allowed_teams', 'text', '[]'],
    ['approval_status', 'varchar(16)', 'personal'],
    ['knowledge_enabled', 'integer', 0],
    ['guests_allowed', 'integer', 0],
    ['team_members', 'varchar(16)', 'direct'],
    ['approved_version_id', 'integer', null],
    ['pending_version_id', 'integer', null],
    ['submitted_at', 'bigint', null],
    ['approved_by', 'varchar(64)', null],
    ['approved_at', 'bigint', null],
    ['rejection_reason', 'text', null],
    ['tester_uid', 'varchar(64)', null],
    ['questionnaire', 'text', null],
  ];
  for (const [name, type, fallback] of columns) {
    await db.schema
      .alterTable('bots')
      .addColumn(name, type, (c) => (fallback === null ? c : c.notNull().defaultTo(fallback)))
      .execute();
  }
  await db.schema.createIndex('bots_approval').on('bots').column('approval_status').execute();

  // Immutable snapshots of a bot's whole configuration (S10): the approved one serves, a pending one waits for review.
  await withAutoId(db, db.schema.createTable('bot_versions'))
    .addColumn('bot_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('created_by', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('bot_versions_bot').on('bot_versions').column('bot_id').execute();
}
