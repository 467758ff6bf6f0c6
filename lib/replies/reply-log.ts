import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';

export interface LoggedChunk {
  seq: number;
  referenceId: string;
  text: string;
  posted: boolean;
}

// Every reply message passes through these: prepared once (storage/prepared-query.ts).
const LIST = new PreparedQuery((db, p: { inboxId: number }) => db.selectFrom('reply_chunks').selectAll().where('inbox_id', '=', p.inboxId).orderBy('seq'));
const INTEND = new PreparedQuery((db, p: { inboxId: number; seq: number; referenceId: string; text: string; now: number }) =>
  db.insertInto('reply_chunks').values({ inbox_id: p.inboxId, seq: p.seq, reference_id: p.referenceId, text: p.text, posted: 0, created_at: p.now }),
);
const POSTED = new PreparedQuery((db, p: { inboxId: number; seq: number }) =>
  db.updateTable('reply_chunks').set({ posted: 1 }).where('inbox_id', '=', p.inboxId).where('seq', '=', p.seq),
);

/** What a reply stream needs of the log (the terminal playground keeps one in memory). */
export type ReplyRecord = Pick<ReplyLog, 'list' | 'intend' | 'posted' | 'drop'>;

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
    const rows = await LIST.rows(this.#db, { inboxId });
    return rows.map((r) => ({ seq: r.seq, referenceId: r.reference_id, text: r.text, posted: r.posted === 1 }));
  }

  async intend(inboxId: number, seq: number, referenceId: string, text: string): Promise<void> {
    await INTEND.execute(this.#db, { inboxId, seq, referenceId, text, now: this.#now() });
  }

  async posted(inboxId: number, seq: number): Promise<void> {
    await POSTED.execute(this.#db, { inboxId, seq });
  }

  async drop(inboxId: number, seq: number): Promise<void> {
    await this.#db.deleteFrom('reply_chunks').where('inbox_id', '=', inboxId).where('seq', '=', seq).execute();
  }
}
