// Vector search scoped to a partition: (bot) for a bot's knowledge, (bot, room)
// for room documents and room images, always together with the embedding model.
// The scope is part of every query (partition key / partition matrix), never a
// filter applied after a top-k.
//
// Small partitions are searched exactly. Above a size threshold: a binary
// prefilter (sign bits, Hamming distance) picks candidates, and a float rerank
// from a plain id → vector table orders them. The prefilter runs on an
// in-memory bit matrix (WebAssembly popcount scan) when the partition fits the
// memory budget; the SQLite backend also keeps a sqlite-vec `bit[]` index with
// the partition as partition key, used while a matrix is not (yet) resident.
import { BitMatrix, quantize } from './bit-matrix.ts';

export type ScopeKind = 'bot' | 'room-doc' | 'room-image';

export type PartitionScope = { kind: 'bot'; botId: string } | { kind: 'room-doc' | 'room-image'; botId: string; roomToken: string };

export interface NewItem {
  seq: number;
  text: string;
  meta: Record<string, unknown>;
  /** Unit length. */
  vector: Float32Array;
}

export interface SearchHit {
  id: number;
  group: string;
  itemKey: string;
  seq: number;
  text: string;
  meta: Record<string, unknown>;
  /** Cosine similarity, -1…1. */
  score: number;
}

export interface SearchOptions {
  limit: number;
  minScore?: number;
  /** Only these groups of the partition (e.g. this turn's uploads); searched exactly. */
  groups?: readonly string[];
}

export interface SearchResult {
  hits: SearchHit[];
  /** Further candidates at or above minScore that did not fit the limit. */
  moreAvailable: number;
  /** How the partition was searched. */
  method: 'empty' | 'exact' | 'matrix' | 'vec0';
}

export interface ModelCount {
  model: string;
  count: number;
}

export interface VectorIndexOptions {
  /** Partitions up to this many vectors are searched exactly. */
  exactThreshold?: number;
  /** Bytes of bit matrices kept in memory across partitions. */
  memoryBudgetBytes?: number;
  /** Candidates the prefilter passes to the rerank: max(minCandidates, limit × candidateFactor). */
  minCandidates?: number;
  candidateFactor?: number;
}

export interface VectorIndex {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Atomically replaces the items of (group, itemKey) in this scope, whatever
   * model they were stored under, with `items` under `model`. Running it
   * twice leaves one copy: re-ingestion after a crash adds no duplicates.
   */
  replaceItems(scope: PartitionScope, model: string, group: string, itemKey: string, items: NewItem[]): Promise<void>;
  /** Deletes one item (itemKey given) or a whole group of this scope; returns the number of vectors removed. */
  deleteItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number>;
  /** Everything of a bot, or of a bot in one room (room documents and images). */
  deleteScope(botId: string, roomToken?: string): Promise<number>;
  search(scope: PartitionScope, model: string, query: Float32Array, options: SearchOptions): Promise<SearchResult>;
  /** Vectors per model in this scope (to tell "indexed with another model"). */
  counts(scope: PartitionScope): Promise<ModelCount[]>;
  countItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number>;
  /** Loads the partition's bit matrix now (benchmarks, or after start-up). */
  warm(scope: PartitionScope, model: string): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_INDEX_OPTIONS: Required<VectorIndexOptions> = {
  exactThreshold: 2_000,
  memoryBudgetBytes: 512 * 1024 * 1024,
  minCandidates: 400,
  candidateFactor: 40,
};

export function scopeColumns(scope: PartitionScope): { kind: ScopeKind; botId: string; roomToken: string } {
  return { kind: scope.kind, botId: scope.botId, roomToken: scope.kind === 'bot' ? '' : scope.roomToken };
}

export function vectorToBytes(v: Float32Array): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

export function bytesToVector(bytes: Uint8Array): Float32Array {
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  // Unaligned driver buffers are copied.
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
  return s;
}

export { quantize };

export interface PartitionRow {
  id: number;
  dims: number;
  count: number;
  generation: number;
  deletions: number;
}

interface Resident {
  matrix: BitMatrix;
  generation: number;
  deletions: number;
  lastUsed: number;
}

/** Bit matrices of recently searched partitions, evicted least recently used first. */
export class ResidentCache {
  readonly #budget: number;
  readonly #entries = new Map<number, Resident>();
  #clock = 0;

  constructor(budgetBytes: number) {
    this.#budget = budgetBytes;
  }

  get(id: number): Resident | undefined {
    const r = this.#entries.get(id);
    if (r) r.lastUsed = ++this.#clock;
    return r;
  }

  fits(bytes: number): boolean {
    return bytes <= this.#budget;
  }

  set(id: number, r: Omit<Resident, 'lastUsed'>): void {
    this.#entries.set(id, { ...r, lastUsed: ++this.#clock });
    this.#evict(id);
  }

  delete(id: number): void {
    this.#entries.delete(id);
  }

  clear(): void {
    this.#entries.clear();
  }

  #evict(keep: number): void {
    let total = 0;
    for (const r of this.#entries.values()) total += r.matrix.byteSize;
    const order = [...this.#entries.entries()].filter(([id]) => id !== keep).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [id, r] of order) {
      if (total <= this.#budget) break;
      this.#entries.delete(id);
      total -= r.matrix.byteSize;
    }
  }
}

export interface ItemRow {
  id: number;
  group: string;
  itemKey: string;
  seq: number;
  text: string;
  meta: string;
}

/**
 * Search logic shared by both backends; subclasses provide storage. Scores
 * are cosine similarities of unit vectors, so a dot product.
 */
export abstract class BaseVectorIndex implements VectorIndex {
  abstract readonly dialect: 'sqlite' | 'postgres';
  protected readonly options: Required<VectorIndexOptions>;
  protected readonly cache: ResidentCache;

  constructor(options: VectorIndexOptions = {}) {
    this.options = { ...DEFAULT_INDEX_OPTIONS, ...options };
    this.cache = new ResidentCache(this.options.memoryBudgetBytes);
  }

  abstract replaceItems(scope: PartitionScope, model: string, group: string, itemKey: string, items: NewItem[]): Promise<void>;
  abstract deleteItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number>;
  abstract deleteScope(botId: string, roomToken?: string): Promise<number>;
  abstract counts(scope: PartitionScope): Promise<ModelCount[]>;
  abstract countItems(scope: PartitionScope, group: string, itemKey?: string): Promise<number>;
  abstract close(): Promise<void>;

  protected abstract partition(scope: PartitionScope, model: string): Promise<PartitionRow | null>;
  /** Ids and bits of the partition's rows with id > afterId, in id order, at most `limit`. */
  protected abstract loadBits(partitionId: number, afterId: number, limit: number): Promise<{ ids: number[]; bits: Uint8Array }>;
  protected abstract vectors(ids: readonly number[]): Promise<Map<number, Float32Array>>;
  protected abstract items(ids: readonly number[]): Promise<Map<number, ItemRow>>;
  /** Exact top-k of a small partition, or of some of its groups. */
  protected abstract exact(
    partitionId: number,
    query: Float32Array,
    k: number,
    groups: readonly string[] | null,
  ): Promise<Array<{ id: number; score: number }>>;
  /** The prefilter when no matrix is resident; null when the backend has none (then the matrix is loaded now). */
  protected abstract fallbackCandidates(p: PartitionRow, queryBits: Uint8Array, k: number): Promise<number[] | null>;
  /** Called when a large partition's matrix is missing or stale; may load in the background. */
  protected abstract scheduleLoad(p: PartitionRow): void;

  async search(scope: PartitionScope, model: string, query: Float32Array, options: SearchOptions): Promise<SearchResult> {
    const limit = Math.max(1, Math.floor(options.limit));
    const minScore = options.minScore ?? -1;
    const p = await this.partition(scope, model);
    if (!p || p.count === 0) return { hits: [], moreAvailable: 0, method: 'empty' };
    if (query.length !== p.dims)
      throw new Error(`the query has ${query.length} dimensions but the index has ${p.dims}: reindex with the current embedding model`);
    let scored: Array<{ id: number; score: number }>;
    let method: SearchResult['method'];
    const want = limit + 50; // a margin so "more available" can be counted
    if (options.groups || p.count <= this.options.exactThreshold) {
      scored = await this.exact(p.id, query, want, options.groups ?? null);
      method = 'exact';
    } else {
      // Fewer bits separate worse: short vectors pass more candidates to the rerank.
      const coarse = Math.max(1, Math.ceil(512 / p.dims));
      const k = Math.min(p.count, Math.max(this.options.minCandidates, limit * this.options.candidateFactor) * coarse);
      const bits = quantize(query, Math.ceil(p.dims / 64) * 8);
      let candidates: number[] | null;
      const resident = await this.#resident(p, false);
      if (resident) {
        candidates = resident.nearest(bits, k).ids;
        method = 'matrix';
      } else {
        candidates = await this.fallbackCandidates(p, bits, k);
        method = 'vec0';
        if (candidates === null) {
          const loaded = await this.#resident(p, true);
          candidates = loaded ? loaded.nearest(bits, k).ids : [];
          method = 'matrix';
        } else {
          this.scheduleLoad(p);
        }
      }
      const vecs = await this.vectors(candidates);
      scored = [];
      for (const [id, v] of vecs) scored.push({ id, score: dot(query, v) });
      scored.sort((a, b) => b.score - a.score);
    }
    const passing = scored.filter((s) => s.score >= minScore);
    const top = passing.slice(0, limit);
    const rows = await this.items(top.map((t) => t.id));
    const hits: SearchHit[] = [];
    for (const t of top) {
      const r = rows.get(t.id);
      if (!r) continue;
      let meta: Record<string, unknown>;
      try {
        meta = JSON.parse(r.meta) as Record<string, unknown>;
      } catch {
        meta = {};
      }
      hits.push({ id: t.id, group: r.group, itemKey: r.itemKey, seq: r.seq, text: r.text, meta, score: t.score });
    }
    return { hits, moreAvailable: Math.max(0, passing.length - top.length), method };
  }

  async warm(scope: PartitionScope, model: string): Promise<void> {
    const p = await this.partition(scope, model);
    if (p && p.count > this.options.exactThreshold) await this.#resident(p, true);
  }

  /** The fresh matrix of `p`, updating it by appended rows when only inserts happened; null if absent and `load` is false. */
  async #resident(p: PartitionRow, load: boolean): Promise<BitMatrix | null> {
    const cached = this.cache.get(p.id);
    if (cached && cached.generation === p.generation && cached.matrix.dimensions === p.dims) return cached.matrix;
    if (cached && cached.deletions === p.deletions && cached.matrix.dimensions === p.dims) {
      await this.#appendFrom(cached.matrix, p.id);
      if (cached.matrix.count === p.count) {
        this.cache.set(p.id, { matrix: cached.matrix, generation: p.generation, deletions: p.deletions });
        return cached.matrix;
      }
    }
    if (!load) return null;
    return this.loadMatrix(p);
  }

  protected async loadMatrix(p: PartitionRow): Promise<BitMatrix> {
    const matrix = new BitMatrix(p.dims, Math.max(1024, p.count));
    await this.#appendFrom(matrix, p.id);
    // A write that raced the load: use the matrix now, reload next time.
    const generation = matrix.count === p.count ? p.generation : -1;
    if (this.cache.fits(matrix.byteSize)) this.cache.set(p.id, { matrix, generation, deletions: p.deletions });
    return matrix;
  }

  async #appendFrom(matrix: BitMatrix, partitionId: number): Promise<void> {
    const page = 50_000;
    for (;;) {
      const { ids, bits } = await this.loadBits(partitionId, matrix.maxId, page);
      if (ids.length === 0) return;
      matrix.append(ids, bits);
      if (ids.length < page) return;
    }
  }
}

export interface OpenVectorIndexOptions extends VectorIndexOptions {
  /** SQLite file for the vectors (beside the main database); required on SQLite. */
  sqlitePath?: string;
}
