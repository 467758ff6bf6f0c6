import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import { PreparedQuery } from './prepared-query.ts';

// Read on every turn (limits, model settings): prepared once.
const VALUE = new PreparedQuery((db, p: { key: string }) => db.selectFrom('settings').select('value').where('key', '=', p.key));

/** Non-secret instance settings as JSON values under string keys. */
export class SettingsStore {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const row = await VALUE.first(this.#db, { key });
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async getMany(keys: string[]): Promise<Map<string, unknown>> {
    if (keys.length === 0) return new Map();
    const rows = await this.#db.selectFrom('settings').select(['key', 'value']).where('key', 'in', keys).execute();
    return new Map(rows.map((r) => [r.key, JSON.parse(r.value) as unknown]));
  }

  async set(key: string, value: unknown): Promise<void> {
    const text = JSON.stringify(value);
    const now = this.#now();
    await this.#db
      .insertInto('settings')
      .values({ key, value: text, updated_at: now })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: text, updated_at: now }))
      .execute();
  }

  async delete(key: string): Promise<void> {
    await this.#db.deleteFrom('settings').where('key', '=', key).execute();
  }
}
