// Kysely's PostgreSQL introspector reads every column of every schema on the server. On a
// shared server that is slow, and it fails when another schema's column is dropped at that
// moment ("column … of relation … does not exist"). Our migrations only ask which tables
// exist, so this dialect answers for the connection's own schema only.
import { PostgresDialect, sql, type DatabaseIntrospector, type Kysely, type SchemaMetadata, type TableMetadata } from 'kysely';

class CurrentSchemaIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>;

  constructor(db: Kysely<unknown>) {
    this.#db = db;
  }

  async getSchemas(): Promise<SchemaMetadata[]> {
    const r = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace where nspname = current_schema()`.execute(this.#db);
    return r.rows.map((row) => ({ name: row.name }));
  }

  async getTables(): Promise<TableMetadata[]> {
    const r = await sql<{ name: string; schema: string; kind: string }>`
      select c.relname as name, n.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p', 'f')`.execute(this.#db);
    return r.rows.map((row) => ({ name: row.name, schema: row.schema, isView: row.kind === 'v', isForeign: row.kind === 'f', columns: [] }));
  }

  async getMetadata(): Promise<{ tables: TableMetadata[] }> {
    return { tables: await this.getTables() };
  }
}

export class CurrentSchemaPostgresDialect extends PostgresDialect {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the signature of kysely's Dialect
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}
