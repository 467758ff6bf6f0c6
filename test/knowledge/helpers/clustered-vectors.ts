// Clustered test vectors (seeded): points around random centres, queries near
// the data. Uniform noise would make an exact top-10 meaningless.

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

export function unit(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s) || 1;
  for (let i = 0; i < v.length; i++) v[i] = v[i]! / n;
  return v;
}

export class ClusteredVectors {
  readonly dims: number;
  readonly #rand: () => number;
  readonly #centres: Float32Array[];
  readonly #spread: number;

  constructor(options: { dims: number; clusters: number; seed: number; spread?: number }) {
    this.dims = options.dims;
    this.#rand = mulberry32(options.seed);
    this.#spread = options.spread ?? 0.6;
    this.#centres = Array.from({ length: options.clusters }, () => unit(Float32Array.from({ length: options.dims }, () => gaussian(this.#rand))));
  }

  /** A data point: its cluster's centre plus noise (noise per dimension scaled so |noise| ≈ spread). */
  point(): Float32Array {
    const c = this.#centres[Math.floor(this.#rand() * this.#centres.length)]!;
    const scale = this.#spread / Math.sqrt(this.dims);
    const v = new Float32Array(this.dims);
    for (let i = 0; i < this.dims; i++) v[i] = c[i]! + gaussian(this.#rand) * scale;
    return unit(v);
  }

  /** A query near some data: a point of the same distribution. */
  query(): Float32Array {
    return this.point();
  }
}

/** Exact top-k ids by dot product (unit vectors: cosine). */
export function exactTopK(data: Float32Array[], ids: number[], q: Float32Array, k: number): number[] {
  const scored = data.map((v, i) => {
    let s = 0;
    for (let j = 0; j < v.length; j++) s += v[j]! * q[j]!;
    return { id: ids[i]!, s };
  });
  scored.sort((a, b) => b.s - a.s);
  return scored.slice(0, k).map((x) => x.id);
}
