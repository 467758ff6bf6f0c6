import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

export interface LoggedChunk {
  seq: number;
  referenceId: string;
  text: string;
  posted: boolean;
}

/**
 * Every message of a reply is recorded before it is posted and marked once
 * Talk accepted it, so a reply resumed after a restart never repeats one.
 */
export class ReplyLog {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async list(inboxId: number): Promise<LoggedChunk[]> {
    const rows = await this.#db.selectFrom('reply_chunks').selectAll().where('inbox_id', '=', inboxId).orderBy('seq').execute();
    return rows.map((r) => ({ seq: r.seq, referenceId: r.reference_id, text: r.text, posted: r.posted === 1 }));
  }

  async intend(inboxId: number, seq: number, referenceId: string, text: string): Promise<void> {
    await this.#db.insertInto('reply_chunks').values({ inbox_id: inboxId, seq, reference_id: referenceId, text, posted: 0, created_at: this.#now() }).execute();
  }

  async posted(inboxId: number, seq: number): Promise<void> {
    await this.#db.updateTable('reply_chunks').set({ posted: 1 }).where('inbox_id', '=', inboxId).where('seq', '=', seq).execute();
  }

  async drop(inboxId: number, seq: number): Promise<void> {
    await this.#db.deleteFrom('reply_chunks').where('inbox_id', '=', inboxId).where('seq', '=', seq).execute();
  }
}
