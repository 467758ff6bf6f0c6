// Kysely builds an operation tree and compiles it to SQL on every call; for the statements a Talk turn
// runs every time that cost more than SQLite running them. A prepared query is built and compiled once
// per database and dialect; each call only fills in its parameters.
import { createQueryId, type Compilable, type CompiledQuery, type DialectAdapter, type Kysely, type QueryResult } from 'kysely';
import type { Database } from './schema.ts';

const MARK = '\u0000educai-param:';

type Slot = { name: string } | { value: unknown };

interface Compiled {
  query: CompiledQuery;
  slots: Slot[];
}

/** Thrown when a query cannot be prepared (its shape would depend on a parameter's value). */
export class PreparedQueryError extends Error {
  override name = 'PreparedQueryError';
}

/**
 * A statement of fixed shape: `build` receives placeholders for its named
 * parameters and must use each one only as a whole value (a column value, a
 * comparison operand, a limit). The SQL must not depend on the values: no
 * `in (...)` lists, no `null` tests, no building text from a parameter.
 *
 * Compiled once per dialect (keyed by its adapter, which a transaction shares
 * with its database), so one PreparedQuery serves SQLite and PostgreSQL.
 */
export class PreparedQuery<P extends Record<string, unknown>, R, DB = Database> {
  readonly #build: (db: Kysely<DB>, params: P) => Compilable<R>;
  readonly #compiled = new WeakMap<DialectAdapter, Compiled>();

  constructor(build: (db: Kysely<DB>, params: P) => Compilable<R>) {
    this.#build = build;
  }

  async execute(db: Kysely<DB>, params: P): Promise<QueryResult<R>> {
    const compiled = this.#compiled.get(db.getExecutor().adapter) ?? this.#compile(db);
    const parameters = compiled.slots.map((slot) => {
      if (!('name' in slot)) return slot.value;
      const value = params[slot.name];
      if (value === undefined) throw new PreparedQueryError(`parameter ${slot.name} is missing`);
      return value;
    });
    return db.executeQuery<R>({ ...compiled.query, parameters, queryId: createQueryId() } as CompiledQuery<R>);
  }

  /** The rows of a select (or of a statement with `returning`). */
  async rows(db: Kysely<DB>, params: P): Promise<R[]> {
    return (await this.execute(db, params)).rows;
  }

  async first(db: Kysely<DB>, params: P): Promise<R | undefined> {
    return (await this.execute(db, params)).rows[0];
  }

  /** Rows inserted, updated or deleted. */
  async affected(db: Kysely<DB>, params: P): Promise<number> {
    return Number((await this.execute(db, params)).numAffectedRows ?? 0n);
  }

  #compile(db: Kysely<DB>): Compiled {
    const placeholders = new Proxy({} as P, { get: (_t, name) => (typeof name === 'string' ? `${MARK}${name}` : undefined) });
    const query = this.#build(db, placeholders).compile();
    const slots: Slot[] = query.parameters.map((value) => {
      if (typeof value !== 'string' || !value.includes(MARK)) return { value };
      if (!value.startsWith(MARK) || value.indexOf(MARK, 1) !== -1) throw new PreparedQueryError('a parameter must be used as a whole value');
      return { name: value.slice(MARK.length) };
    });
    if (query.sql.includes(MARK)) throw new PreparedQueryError('a parameter ended up in the SQL text');
    const compiled = { query, slots };
    this.#compiled.set(db.getExecutor().adapter, compiled);
    return compiled;
  }
}
