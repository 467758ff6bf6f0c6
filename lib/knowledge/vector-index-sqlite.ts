// The embedded vector store: its own SQLite file beside the main database, with
// sqlite-vec loaded. The main database's connection (kysely) cannot load
// extensions, and a second writer on the same file would contend for its lock;
// a separate file keeps vectors (gigabytes at 1M) out of the main database too.
// Chunk text, vectors and partition counters change in one transaction.
import { chmodSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { BitMatrix } from './bit-matrix.ts';
import {
  BaseVectorIndex,
  bytesToVector,
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

type Db = BetterSqlite3.Database;

const SCHEMA = `
create table if not exists kv_partitions (
  id integer primary key autoincrement,
  scope_kind text not null,
  bot_id text not null,
  room_token text not null default '',
  model text not null,
  dims integer not null,
  count integer not null default 0,
  generation integer not null default 0,
  deletions integer not null default 0,
  unique (scope_kind, bot_id, room_token, model)
);
create index if not exists kv_partitions_bot on kv_partitions (bot_id, room_token);
-- bits before emb: loading the prefilter reads only the first page of each row.
create table if not exists kv_items (
  id integer primary key autoincrement,
  partition_id integer not null,
  grp text not null,
  item_key text not null,
  seq integer not null,
  bits blob not null,
  emb blob not null,
  text text not null,
  meta text not null
);
create index if not exists kv_items_partition on kv_items (partition_id, id);
create index if not exists kv_items_group on kv_items (grp, item_key);
`;

export class SqliteVectorIndex extends BaseVectorIndex {
  readonly dialect = 'sqlite' as const;
  readonly #db: Db;
  readonly #vecTables = new Set<number>();
  readonly #loading = new Set<number>();
  readonly #statements = new Map<string, BetterSqlite3.Statement>();
  #closed = false;

  /** Prepared once per SQL text: searches run the same few statements many times. */
  #stmt(sql: string): BetterSqlite3.Statement {
    let st = this.#statements.get(sql);
    if (!st) {
      st = this.#db.prepare(sql);
      this.#statements.set(sql, st);
    }
    return st;
  }

  constructor(path: string, options: VectorIndexOptions = {}) {
    super(options);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.#db = new BetterSqlite3(path);
    if (path !== ':memory:') chmodSync(path, 0o600);
    sqliteVec.load(this.#db);
    // A 768-d row (3 KB vector + bits + text) fits an 8 KB page without overflow pages; only applies to a new file.
    this.#db.pragma('page_size = 8192');
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    // Reranking reads a few hundred random rows per query: map the file instead of copying pages.
    this.#db.pragma('mmap_size = 17179869184');
    this.#db.pragma('cache_size = -65536');
    this.#db.exec(SCHEMA);
    for (const r of this.#db.prepare(`select name from sqlite_master where type = 'table' and name like 'kv_bits_%'`).all() as Array<{ name: string }>) {
      const dims = Number(r.name.slice('kv_bits_'.length));
      if (Number.isInteger(dims)) this.#vecTables.add(dims);
    }
  }

  #vecTable(dims: number): string {
    if (!Number.isInteger(dims) || dims <= 0 || dims > 16384) throw new Error(`unsupported vector size ${dims}`);
    if (!this.#vecTables.has(dims)) {
      this.#db.exec(
        `create virtual table if not exists kv_bits_${dims} using vec0(id integer primary key, partition_id integer partition key, bits bit[${dims}])`,
      );
      this.#vecTables.add(dims);
    }
    return `kv_bits_${dims}`;
  }

  #scopePartitions(scope: PartitionScope): Array<{ id: number; dims: number }> {
    const s = scopeColumns(scope);
    return this.#db
      .prepare('select id, dims from kv_partitions where scope_kind = ? and bot_id = ? and room_token = ?')
      .all(s.kind, s.botId, s.roomToken) as Array<{ id: number; dims: number }>;
  }

  /** Deletes rows of the given partitions matching the group (and item); updates counters. */
  #deleteRows(parts: Array<{ id: number; dims: number }>, group: string, itemKey: string | undefined): number {
    let removed = 0;
    for (const p of parts) {
      const rows = (
        itemKey === undefined
          ? this.#db.prepare('select id from kv_items where grp = ? and partition_id = ?').all(group, p.id)
          : this.#db.prepare('select id from kv_items where grp = ? and item_key = ? and partition_id = ?').all(group, itemKey, p.id)
      ) as Array<{ id: number }>;
      if (rows.length === 0) continue;
      const table = this.#vecTable(p.dims);
      const delItem = this.#db.prepare('delete from kv_items where id = ?');
      const delBits = this.#db.prepare(`delete from ${table} where id = ?`);
      for (const r of rows) {
        delItem.run(r.id);
        delBits.run(BigInt(r.id));
      }
      this.#db
        .prepare('update kv_partitions set count = count - ?, generation = generation + 1, deletions = deletions + 1 where id = ?')
        .run(rows.length, p.id);
      removed += rows.length;
    }
    return removed;
  }

  async replaceItems(scope: PartitionScope, model: string, group: string, itemKey: string, items: NewItem[]): Promise<void> {
    const dims = items[0]?.vector.length ?? 0;
    if (items.some((i) => i.vector.length !== dims)) throw new Error('all vectors of one item must have the same size');
    const s = scopeColumns(scope);
    this.#db.transaction(() => {
      this.#deleteRows(this.#scopePartitions(scope), group, itemKey);
      if (items.length === 0) return;
      let p = this.#db
        .prepare('select id, dims from kv_partitions where scope_kind = ? and bot_id = ? and room_token = ? and model = ?')
        .get(s.kind, s.botId, s.roomToken, model) as { id: number; dims: number } | undefined;
      if (p && p.dims !== dims) {
        const left = (this.#db.prepare('select count(*) as n from kv_items where partition_id = ?').get(p.id) as { n: number }).n;
        if (left > 0) throw new Error(`the embedding model "${model}" now returns ${dims} dimensions instead of ${p.dims}: reindex all sources`);
        this.#db.prepare('delete from kv_partitions where id = ?').run(p.id);
        p = undefined;
      }
      if (!p) {
        const id = Number(
          this.#db
            .prepare('insert into kv_partitions (scope_kind, bot_id, room_token, model, dims) values (?, ?, ?, ?, ?)')
            .run(s.kind, s.botId, s.roomToken, model, dims).lastInsertRowid,
        );
        p = { id, dims };
      }
      const table = this.#vecTable(dims);
      const insItem = this.#db.prepare('insert into kv_items (partition_id, grp, item_key, seq, bits, emb, text, meta) values (?, ?, ?, ?, ?, ?, ?, ?)');
      const insBits = this.#db.prepare(`insert into ${table} (id, partition_id, bits) values (?, ?, vec_bit(?))`);
      const bytesPerVector = Math.ceil(dims / 64) * 8;
      for (const it of items) {
        const bits = quantize(it.vector, bytesPerVector);
        const id = insItem.run(p.id, group, itemKey, it.seq, bits, vectorToBytes(it.vector), it.text, JSON.stringify(it.meta)).lastInsertRowid;
        // vec0's bit column holds exactly dims/8 bytes.
        insBits.run(BigInt(id), BigInt(p.id), bits.subarray(0, Math.ceil(dims / 8)));
      }
      this.#db.prepare('update kv_partitions set count = count + ?, generation = generation + 1 where id = ?').run(items.length, p.id);
    })();
  }

  async deleteItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number> {
    return this.#db.transaction(() => this.#deleteRows(this.#scopePartitions(scope), group, itemKey))();
  }

  async deleteScope(botId: string, roomToken?: string): Promise<number> {
    return this.#db.transaction(() => {
      const parts = (
        roomToken === undefined
          ? this.#db.prepare('select id, dims from kv_partitions where bot_id = ?').all(botId)
          : this.#db.prepare(`select id, dims from kv_partitions where bot_id = ? and room_token = ? and scope_kind <> 'bot'`).all(botId, roomToken)
      ) as Array<{ id: number; dims: number }>;
      let removed = 0;
      for (const p of parts) {
        const table = this.#vecTable(p.dims);
        removed += this.#db.prepare('delete from kv_items where partition_id = ?').run(p.id).changes;
        this.#db.prepare(`delete from ${table} where partition_id = ?`).run(BigInt(p.id));
        this.#db.prepare('delete from kv_partitions where id = ?').run(p.id);
        this.cache.delete(p.id);
      }
      return removed;
    })();
  }

  async counts(scope: PartitionScope): Promise<ModelCount[]> {
    const s = scopeColumns(scope);
    return this.#db
      .prepare('select model, count from kv_partitions where scope_kind = ? and bot_id = ? and room_token = ? and count > 0 order by model')
      .all(s.kind, s.botId, s.roomToken) as ModelCount[];
  }

  async countItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number> {
    const ids = this.#scopePartitions(scope).map((p) => p.id);
    if (ids.length === 0) return 0;
    const inList = ids.map(() => '?').join(',');
    const row = (
      itemKey === undefined
        ? this.#db.prepare(`select count(*) as n from kv_items where grp = ? and partition_id in (${inList})`).get(group, ...ids)
        : this.#db.prepare(`select count(*) as n from kv_items where grp = ? and item_key = ? and partition_id in (${inList})`).get(group, itemKey, ...ids)
    ) as { n: number };
    return row.n;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.cache.clear();
    this.#db.close();
  }

  protected async partition(scope: PartitionScope, model: string): Promise<PartitionRow | null> {
    const s = scopeColumns(scope);
    const row = this.#stmt(
      'select id, dims, count, generation, deletions from kv_partitions where scope_kind = ? and bot_id = ? and room_token = ? and model = ?',
    ).get(s.kind, s.botId, s.roomToken, model) as PartitionRow | undefined;
    return row ?? null;
  }

  protected async loadBits(partitionId: number, afterId: number, limit: number): Promise<{ ids: number[]; bits: Uint8Array }> {
    const rows = this.#stmt('select id, bits from kv_items where partition_id = ? and id > ? order by id limit ?')
      .raw(true)
      .all(partitionId, afterId, limit) as Array<[number, Buffer]>;
    if (rows.length === 0) return { ids: [], bits: new Uint8Array(0) };
    const width = rows[0]![1].length;
    const bits = new Uint8Array(rows.length * width);
    const ids = new Array<number>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      ids[i] = rows[i]![0];
      bits.set(rows[i]![1], i * width);
    }
    return { ids, bits };
  }

  protected async vectors(ids: readonly number[]): Promise<Map<number, Float32Array>> {
    const out = new Map<number, Float32Array>();
    if (ids.length === 0) return out;
    // A plain id → blob table; reranking through vec0 with `rowid in (…)` scans everything.
    const rows = this.#stmt('select id, emb from kv_items where id in (select value from json_each(?))').raw(true).all(JSON.stringify(ids)) as Array<
      [number, Buffer]
    >;
    for (const [id, emb] of rows) out.set(id, bytesToVector(emb));
    return out;
  }

  protected async items(ids: readonly number[]): Promise<Map<number, ItemRow>> {
    const out = new Map<number, ItemRow>();
    if (ids.length === 0) return out;
    const rows = this.#stmt('select id, grp as "group", item_key as itemKey, seq, text, meta from kv_items where id in (select value from json_each(?))').all(
      JSON.stringify(ids),
    ) as ItemRow[];
    for (const r of rows) out.set(r.id, r);
    return out;
  }

  protected async exact(partitionId: number, query: Float32Array, k: number, groups: readonly string[] | null): Promise<Array<{ id: number; score: number }>> {
    const q = vectorToBytes(query);
    const rows = (
      groups === null
        ? this.#db.prepare('select id, vec_distance_cosine(emb, ?) as d from kv_items where partition_id = ? order by d limit ?').raw().all(q, partitionId, k)
        : this.#db
            .prepare(
              'select id, vec_distance_cosine(emb, ?) as d from kv_items where partition_id = ? and grp in (select value from json_each(?)) order by d limit ?',
            )
            .raw()
            .all(q, partitionId, JSON.stringify(groups), k)
    ) as Array<[number, number]>;
    return rows.map(([id, d]) => ({ id, score: 1 - d }));
  }

  protected async fallbackCandidates(p: PartitionRow, queryBits: Uint8Array, k: number): Promise<number[] | null> {
    const table = this.#vecTable(p.dims);
    const rows = this.#db
      .prepare(`select id from ${table} where bits match vec_bit(?) and k = ? and partition_id = ?`)
      .raw()
      .all(queryBits.subarray(0, Math.ceil(p.dims / 8)), k, BigInt(p.id)) as Array<[number]>;
    return rows.map((r) => Number(r[0]));
  }

  /** Loads the matrix in pages between event-loop turns, so a large partition does not stall other work. */
  protected scheduleLoad(p: PartitionRow): void {
    if (this.#loading.has(p.id) || !this.cache.fits(p.count * Math.ceil(p.dims / 64) * 8 * 1.2)) return;
    this.#loading.add(p.id);
    const matrix = new BitMatrix(p.dims, Math.max(1024, p.count));
    const step = () => {
      if (this.#closed) return;
      void this.loadBits(p.id, matrix.maxId, 20_000).then(({ ids, bits }) => {
        if (this.#closed) return;
        if (ids.length > 0) matrix.append(ids, bits);
        if (ids.length === 20_000) return void setImmediate(step);
        this.#loading.delete(p.id);
        const now = this.#db.prepare('select count, generation, deletions from kv_partitions where id = ?').get(p.id) as PartitionRow | undefined;
        if (now && now.count === matrix.count && now.deletions === p.deletions) {
          this.cache.set(p.id, { matrix, generation: now.generation, deletions: now.deletions });
        }
      });
    };
    setImmediate(step);
  }
}
