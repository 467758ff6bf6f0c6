// The registry of wiki roots: which folder (by path and file id) holds each bot's wiki, for
// whom, and the root etag seen at the last index sync. The scan and file events only ever
// schedule a sync of a registered root (S16); they never name a user or a path themselves.
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

export interface WikiRoot {
  botId: string;
  uid: string;
  location: 'personal_files' | 'collective';
  rootPath: string;
  rootFileId: string;
  rootEtag: string;
  syncedAt: number | null;
}

export class WikiRootStore {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async get(botId: string): Promise<WikiRoot | null> {
    const row = await this.#db.selectFrom('wiki_roots').selectAll().where('bot_id', '=', botId).executeTakeFirst();
    return row ? toRoot(row) : null;
  }

  async list(limit = 10_000): Promise<WikiRoot[]> {
    const rows = await this.#db.selectFrom('wiki_roots').selectAll().orderBy('bot_id').limit(limit).execute();
    return rows.map(toRoot);
  }

  /** Registers (or moves) a bot's root; it starts without a recorded etag, so the next scan syncs it once. */
  async register(root: Omit<WikiRoot, 'rootEtag' | 'syncedAt'> & { rootEtag?: string }): Promise<void> {
    const now = this.#now();
    const values = {
      bot_id: root.botId,
      uid: root.uid,
      location: root.location,
      root_path: root.rootPath,
      root_file_id: root.rootFileId,
      root_etag: root.rootEtag ?? '',
      synced_at: null,
      updated_at: now,
    };
    await this.#db
      .insertInto('wiki_roots')
      .values(values)
      .onConflict((oc) =>
        oc
          .column('bot_id')
          .doUpdateSet({
            uid: values.uid,
            location: values.location,
            root_path: values.root_path,
            root_file_id: values.root_file_id,
            root_etag: values.root_etag,
            synced_at: null,
            updated_at: now,
          }),
      )
      .execute();
  }

  async markSynced(botId: string, rootEtag: string, rootPath?: string): Promise<void> {
    const now = this.#now();
    await this.#db
      .updateTable('wiki_roots')
      .set({ root_etag: rootEtag, synced_at: now, updated_at: now, ...(rootPath !== undefined ? { root_path: rootPath } : {}) })
      .where('bot_id', '=', botId)
      .execute();
  }

  async remove(botId: string): Promise<void> {
    await this.#db.deleteFrom('wiki_roots').where('bot_id', '=', botId).execute();
  }
}

function toRoot(row: {
  bot_id: string;
  uid: string;
  location: string;
  root_path: string;
  root_file_id: string;
  root_etag: string;
  synced_at: number | string | null;
}): WikiRoot {
  return {
    botId: row.bot_id,
    uid: row.uid,
    location: row.location === 'collective' ? 'collective' : 'personal_files',
    rootPath: row.root_path,
    rootFileId: row.root_file_id,
    rootEtag: row.root_etag,
    syncedAt: row.synced_at === null ? null : Number(row.synced_at),
  };
}
