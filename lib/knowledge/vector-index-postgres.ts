// Vectors on PostgreSQL without pgvector (not installable on our machines): the
// float vector and its sign bits are bytea columns, and the prefilter + rerank
// run in the app, on the same bit matrices as the embedded backend.
import { sql, type Kysely, type Transaction } from 'kysely';
import {
  BaseVectorIndex,
  bytesToVector,
  dot,
  quantize,
  scopeColumns,
  vectorToBytes,
  type ItemRow,
  type ModelCount,
  type NewItem,
  type PartitionRow,
  type PartitionScope,
  type VectorIndexOptions,
} from './vector-index.ts';

/** Created by migration 0008 on PostgreSQL only; on SQLite the vectors live in their own file. */
export interface KnowledgePgVectorTables {
  knowledge_partitions: {
    id: number;
    scope_kind: string;
    bot_id: string;
    room_token: string;
    model: string;
    dims: number;
    count: number;
    generation: number;
    deletions: number;
  };
  knowledge_items: {
    id: number;
    partition_id: number;
    grp: string;
    item_key: string;
    seq: number;
    bits: Uint8Array;
    emb: Uint8Array;
    text: string;
    meta: string;
  };
}

type Db = Kysely<KnowledgePgVectorTables>;
type Trx = Transaction<KnowledgePgVectorTables>;

const INSERT_PAGE = 500;

export class PostgresVectorIndex extends BaseVectorIndex {
  readonly dialect = 'postgres' as const;
  readonly #db: Db;

  constructor(db: Kysely<unknown>, options: VectorIndexOptions = {}) {
    super(options);
    this.#db = db as unknown as Db;
  }

  async #scopePartitions(q: Db | Trx, scope: PartitionScope, lock: boolean): Promise<Array<{ id: number; dims: number }>> {
    const s = scopeColumns(scope);
    let query = q
      .selectFrom('knowledge_partitions')
      .select(['id', 'dims'])
      .where('scope_kind', '=', s.kind)
      .where('bot_id', '=', s.botId)
      .where('room_token', '=', s.roomToken)
      .orderBy('id');
    if (lock) query = query.forUpdate();
    return query.execute();
  }

  async #deleteRows(trx: Trx, parts: Array<{ id: number }>, group: string, itemKey: string | undefined): Promise<number> {
    let removed = 0;
    for (const p of parts) {
      let del = trx.deleteFrom('knowledge_items').where('partition_id', '=', p.id).where('grp', '=', group);
      if (itemKey !== undefined) del = del.where('item_key', '=', itemKey);
      const n = Number((await del.executeTakeFirst()).numDeletedRows);
      if (n === 0) continue;
      await trx
        .updateTable('knowledge_partitions')
        .set((eb) => ({ count: eb('count', '-', n), generation: eb('generation', '+', 1), deletions: eb('deletions', '+', 1) }))
        .where('id', '=', p.id)
        .execute();
      removed += n;
    }
    return removed;
  }

  async replaceItems(scope: PartitionScope, model: string, group: string, itemKey: string, items: NewItem[]): Promise<void> {
    const dims = items[0]?.vector.length ?? 0;
    if (items.some((i) => i.vector.length !== dims)) throw new Error('all vectors of one item must have the same size');
    const s = scopeColumns(scope);
    await this.#db.transaction().execute(async (trx) => {
      if (items.length > 0) {
        await trx
          .insertInto('knowledge_partitions')
          .values({ scope_kind: s.kind, bot_id: s.botId, room_token: s.roomToken, model, dims, count: 0, generation: 0, deletions: 0 } as never)
          .onConflict((oc) => oc.columns(['scope_kind', 'bot_id', 'room_token', 'model']).doNothing())
          .execute();
      }
      // Locking the scope's partitions serialises writers of one scope, so counters stay exact.
      const parts = await this.#scopePartitions(trx, scope, true);
      await this.#deleteRows(trx, parts, group, itemKey);
      if (items.length === 0) return;
      let p = await trx
        .selectFrom('knowledge_partitions')
        .select(['id', 'dims'])
        .where('scope_kind', '=', s.kind)
        .where('bot_id', '=', s.botId)
        .where('room_token', '=', s.roomToken)
        .where('model', '=', model)
        .executeTakeFirstOrThrow();
      if (p.dims !== dims) {
        const left = await trx
          .selectFrom('knowledge_items')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('partition_id', '=', p.id)
          .executeTakeFirstOrThrow();
        if (Number(left.n) > 0) throw new Error(`the embedding model "${model}" now returns ${dims} dimensions instead of ${p.dims}: reindex all sources`);
        await trx
          .updateTable('knowledge_partitions')
          .set({ dims, generation: sql`generation + 1`, deletions: sql`deletions + 1` } as never)
          .where('id', '=', p.id)
          .execute();
        p = { id: p.id, dims };
      }
      const bytesPerVector = Math.ceil(dims / 64) * 8;
      for (let i = 0; i < items.length; i += INSERT_PAGE) {
        const page = items
          .slice(i, i + INSERT_PAGE)
          .map((it) => ({
            partition_id: p.id,
            grp: group,
            item_key: itemKey,
            seq: it.seq,
            bits: Buffer.from(quantize(it.vector, bytesPerVector)),
            emb: Buffer.from(vectorToBytes(it.vector)),
            text: it.text,
            meta: JSON.stringify(it.meta),
          }));
        await trx
          .insertInto('knowledge_items')
          .values(page as never)
          .execute();
      }
      await trx
        .updateTable('knowledge_partitions')
        .set((eb) => ({ count: eb('count', '+', items.length), generation: eb('generation', '+', 1) }))
        .where('id', '=', p.id)
        .execute();
    });
  }

  async deleteItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number> {
    return this.#db.transaction().execute(async (trx) => this.#deleteRows(trx, await this.#scopePartitions(trx, scope, true), group, itemKey));
  }

  async deleteScope(botId: string, roomToken?: string): Promise<number> {
    return this.#db.transaction().execute(async (trx) => {
      let q = trx.selectFrom('knowledge_partitions').select('id').where('bot_id', '=', botId);
      if (roomToken !== undefined) q = q.where('room_token', '=', roomToken).where('scope_kind', '<>', 'bot');
      const parts = await q.forUpdate().execute();
      let removed = 0;
      for (const p of parts) {
        removed += Number((await trx.deleteFrom('knowledge_items').where('partition_id', '=', p.id).executeTakeFirst()).numDeletedRows);
        await trx.deleteFrom('knowledge_partitions').where('id', '=', p.id).execute();
        this.cache.delete(p.id);
      }
      return removed;
    });
  }

  async counts(scope: PartitionScope): Promise<ModelCount[]> {
    const s = scopeColumns(scope);
    const rows = await this.#db
      .selectFrom('knowledge_partitions')
      .select(['model', 'count'])
      .where('scope_kind', '=', s.kind)
      .where('bot_id', '=', s.botId)
      .where('room_token', '=', s.roomToken)
      .where('count', '>', 0)
      .orderBy('model')
      .execute();
    return rows.map((r) => ({ model: r.model, count: Number(r.count) }));
  }

  async countItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number> {
    const ids = (await this.#scopePartitions(this.#db, scope, false)).map((p) => p.id);
    if (ids.length === 0) return 0;
    let q = this.#db
      .selectFrom('knowledge_items')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('partition_id', 'in', ids)
      .where('grp', '=', group);
    if (itemKey !== undefined) q = q.where('item_key', '=', itemKey);
    return Number((await q.executeTakeFirstOrThrow()).n);
  }

  async close(): Promise<void> {
    this.cache.clear();
  }

  protected async partition(scope: PartitionScope, model: string): Promise<PartitionRow | null> {
    const s = scopeColumns(scope);
    const row = await this.#db
      .selectFrom('knowledge_partitions')
      .select(['id', 'dims', 'count', 'generation', 'deletions'])
      .where('scope_kind', '=', s.kind)
      .where('bot_id', '=', s.botId)
      .where('room_token', '=', s.roomToken)
      .where('model', '=', model)
      .executeTakeFirst();
    return row ? { id: row.id, dims: row.dims, count: Number(row.count), generation: Number(row.generation), deletions: Number(row.deletions) } : null;
  }

  protected async loadBits(partitionId: number, afterId: number, limit: number): Promise<{ ids: number[]; bits: Uint8Array }> {
    const rows = await this.#db
      .selectFrom('knowledge_items')
      .select(['id', 'bits'])
      .where('partition_id', '=', partitionId)
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
    if (rows.length === 0) return { ids: [], bits: new Uint8Array(0) };
    const width = rows[0]!.bits.length;
    const bits = new Uint8Array(rows.length * width);
    const ids = new Array<number>(rows.length);
    rows.forEach((r, i) => {
      ids[i] = Number(r.id);
      bits.set(r.bits, i * width);
    });
    return { ids, bits };
  }

  protected async vectors(ids: readonly number[]): Promise<Map<number, Float32Array>> {
    const out = new Map<number, Float32Array>();
    if (ids.length === 0) return out;
    const rows = await this.#db
      .selectFrom('knowledge_items')
      .select(['id', 'emb'])
      .where('id', '=', sql<number>`any(${sql.val([...ids])}::bigint[])`)
      .execute();
    for (const r of rows) out.set(Number(r.id), bytesToVector(r.emb));
    return out;
  }

  protected async items(ids: readonly number[]): Promise<Map<number, ItemRow>> {
    const out = new Map<number, ItemRow>();
    if (ids.length === 0) return out;
    const rows = await this.#db
      .selectFrom('knowledge_items')
      .select(['id', 'grp', 'item_key', 'seq', 'text', 'meta'])
      .where('id', '=', sql<number>`any(${sql.val([...ids])}::bigint[])`)
      .execute();
    for (const r of rows) out.set(Number(r.id), { id: Number(r.id), group: r.grp, itemKey: r.item_key, seq: r.seq, text: r.text, meta: r.meta });
    return out;
  }

  protected async exact(partitionId: number, query: Float32Array, k: number, groups: readonly string[] | null): Promise<Array<{ id: number; score: number }>> {
    let q = this.#db.selectFrom('knowledge_items').select(['id', 'emb']).where('partition_id', '=', partitionId);
    if (groups !== null) {
      if (groups.length === 0) return [];
      q = q.where('grp', 'in', [...groups]);
    }
    const rows = await q.execute();
    return rows
      .map((r) => ({ id: Number(r.id), score: dot(query, bytesToVector(r.emb)) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
  }

  /** No disk index on PostgreSQL: the matrix is loaded now. */
  protected async fallbackCandidates(): Promise<number[] | null> {
    return null;
  }

  protected scheduleLoad(): void {}
}
