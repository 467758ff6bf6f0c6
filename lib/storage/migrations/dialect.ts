import { PostgresAdapter, type CreateTableBuilder, type Kysely } from 'kysely';

export function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** An auto-incrementing integer primary key on either dialect. */
export function withAutoId<T extends string>(db: Kysely<unknown>, table: CreateTableBuilder<T, never>, name = 'id'): CreateTableBuilder<T, never> {
  return isPostgres(db)
    ? (table.addColumn(name, 'serial', (c) => c.primaryKey()) as CreateTableBuilder<T, never>)
    : (table.addColumn(name, 'integer', (c) => c.primaryKey().autoIncrement()) as CreateTableBuilder<T, never>);
}
