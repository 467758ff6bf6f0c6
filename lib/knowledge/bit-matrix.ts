// Binary-quantised vectors in WebAssembly memory, scanned with i64.popcnt: one
// pass computes every Hamming distance and a histogram of them, from which the
// closest candidates are picked without sorting. About 7 ms per million 768-bit
// vectors on one core, which is what makes the 1M target reachable.

/** Sign bits, LSB first within each byte, padded to whole 64-bit words. */
export function quantize(vector: Float32Array, bytesPerVector = bitBytes(vector.length)): Uint8Array {
  const out = new Uint8Array(bytesPerVector);
  for (let i = 0; i < vector.length; i++) if (vector[i]! > 0) out[i >> 3]! |= 1 << (i & 7);
  return out;
}

export function bitBytes(dimensions: number): number {
  return Math.ceil(dimensions / 64) * 8;
}

// WebAssembly is a Node global, but the project's TypeScript libs (no DOM) do not declare it.
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => WasmMemory;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
type ScanFn = (query: number, base: number, n: number, words: number, out: number, hist: number) => void;

// scan(query, base, n, words, out, hist): out[i] = popcount(query ^ row_i) as u16, hist[d] += 1.
function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function buildScanModule(): object {
  const I32 = 0x7f;
  const I64 = 0x7e;
  const section = (id: number, bytes: number[]) => [id, ...uleb(bytes.length), ...bytes];
  const name = (s: string) => [s.length, ...Array.from(s, (c) => c.charCodeAt(0))];
  // params: 0 query, 1 base, 2 n, 3 words, 4 out, 5 hist; locals: 6 i, 7 j, 8 p, 9 qp, 10 h (i32), 11 acc (i64)
  const [Q, BASE, N, W, OUT, HIST, I, J, P, QP, H, ACC] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
  const get = (x: number) => [0x20, x];
  const set = (x: number) => [0x21, x];
  const body = [
    2,
    5,
    I32,
    1,
    I64,
    ...get(BASE),
    ...set(P),
    0x02,
    0x40, // block
    0x03,
    0x40, // loop over rows
    ...get(I),
    ...get(N),
    0x4f,
    0x0d,
    1, // i >= n: done
    0x42,
    0,
    ...set(ACC),
    0x41,
    0,
    ...set(J),
    ...get(Q),
    ...set(QP),
    0x02,
    0x40,
    0x03,
    0x40, // loop over 64-bit words
    ...get(J),
    ...get(W),
    0x4f,
    0x0d,
    1,
    ...get(ACC),
    ...get(P),
    0x29,
    3,
    0, // i64.load
    ...get(QP),
    0x29,
    3,
    0,
    0x85,
    0x7b,
    0x7c, // i64.xor, i64.popcnt, i64.add
    ...set(ACC),
    ...get(P),
    0x41,
    8,
    0x6a,
    ...set(P),
    ...get(QP),
    0x41,
    8,
    0x6a,
    ...set(QP),
    ...get(J),
    0x41,
    1,
    0x6a,
    ...set(J),
    0x0c,
    0,
    0x0b,
    0x0b,
    // out[i] = acc (i32.store16)
    ...get(OUT),
    ...get(I),
    0x41,
    1,
    0x74,
    0x6a,
    ...get(ACC),
    0xa7,
    0x3b,
    1,
    0,
    // hist[acc] += 1
    ...get(HIST),
    ...get(ACC),
    0xa7,
    0x41,
    2,
    0x74,
    0x6a,
    ...set(H),
    ...get(H),
    ...get(H),
    0x28,
    2,
    0,
    0x41,
    1,
    0x6a,
    0x36,
    2,
    0,
    ...get(I),
    0x41,
    1,
    0x6a,
    ...set(I),
    0x0c,
    0,
    0x0b,
    0x0b,
    0x0b,
  ];
  const bytes = new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, [1, 0x60, 6, I32, I32, I32, I32, I32, I32, 0]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('scan'), 0x00, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
  return new wasm.Module(bytes);
}

let scanModule: object | null = null;
function module(): object {
  scanModule ??= buildScanModule();
  return scanModule;
}

const PAGE = 65536;

export interface Candidates {
  /** Item ids, closest first only roughly (ties and order inside a distance are arbitrary). */
  ids: number[];
  distances: number[];
}

/**
 * One partition's bit vectors, appended in id order. Not thread-safe; one
 * instance per partition.
 */
export class BitMatrix {
  readonly bytesPerVector: number;
  readonly dimensions: number;
  #memory: WasmMemory;
  #scan: ScanFn;
  #ids: Float64Array;
  #count = 0;
  #capacity: number;

  constructor(dimensions: number, initialCapacity = 1024) {
    this.dimensions = dimensions;
    this.bytesPerVector = bitBytes(dimensions);
    this.#capacity = Math.max(16, initialCapacity);
    this.#ids = new Float64Array(this.#capacity);
    this.#memory = new wasm.Memory({ initial: Math.ceil(this.#bytesFor(this.#capacity) / PAGE) });
    this.#scan = this.#instantiate();
  }

  get count(): number {
    return this.#count;
  }

  /** Bytes held (WebAssembly memory plus the id array). */
  get byteSize(): number {
    return this.#memory.buffer.byteLength + this.#ids.byteLength;
  }

  get maxId(): number {
    return this.#count === 0 ? 0 : this.#ids[this.#count - 1]!;
  }

  // Layout: [query][histogram][distances u16 × capacity][matrix capacity × bytesPerVector]
  #queryOffset(): number {
    return 0;
  }
  #histOffset(): number {
    return this.bytesPerVector;
  }
  #outOffset(): number {
    return this.bytesPerVector + (this.dimensions + 1) * 4 + 8;
  }
  #matrixOffset(capacity = this.#capacity): number {
    const end = this.#outOffset() + capacity * 2;
    return Math.ceil(end / 8) * 8;
  }
  #bytesFor(capacity: number): number {
    return this.#matrixOffset(capacity) + capacity * this.bytesPerVector;
  }

  #instantiate(): ScanFn {
    const instance = new wasm.Instance(module(), { env: { memory: this.#memory } });
    return instance.exports.scan as ScanFn;
  }

  #grow(needed: number): void {
    let capacity = this.#capacity;
    while (capacity < needed) capacity *= 2;
    if (capacity === this.#capacity) return;
    const oldMatrix = this.#matrixOffset();
    const used = this.#count * this.bytesPerVector;
    const needBytes = this.#bytesFor(capacity);
    const have = this.#memory.buffer.byteLength;
    if (needBytes > have) this.#memory.grow(Math.ceil((needBytes - have) / PAGE));
    const newMatrix = this.#matrixOffset(capacity);
    new Uint8Array(this.#memory.buffer).copyWithin(newMatrix, oldMatrix, oldMatrix + used);
    const ids = new Float64Array(capacity);
    ids.set(this.#ids.subarray(0, this.#count));
    this.#ids = ids;
    this.#capacity = capacity;
  }

  /** Appends rows; `bits` holds `ids.length` vectors of bytesPerVector bytes each. Ids must increase. */
  append(ids: ArrayLike<number>, bits: Uint8Array): void {
    const n = ids.length;
    if (bits.length !== n * this.bytesPerVector) throw new RangeError('bit rows do not match the ids');
    this.#grow(this.#count + n);
    new Uint8Array(this.#memory.buffer).set(bits, this.#matrixOffset() + this.#count * this.bytesPerVector);
    for (let i = 0; i < n; i++) this.#ids[this.#count + i] = ids[i]!;
    this.#count += n;
  }

  appendOne(id: number, bits: Uint8Array): void {
    if (bits.length !== this.bytesPerVector) throw new RangeError('bit row has the wrong size');
    this.append([id], bits);
  }

  /** The `k` rows closest in Hamming distance (more on a tie at the boundary is cut). */
  nearest(query: Uint8Array, k: number): Candidates {
    const n = this.#count;
    if (n === 0 || k <= 0) return { ids: [], distances: [] };
    if (query.length !== this.bytesPerVector) throw new RangeError('query has the wrong size');
    const buffer = this.#memory.buffer;
    new Uint8Array(buffer).set(query, this.#queryOffset());
    const hist = new Uint32Array(buffer, this.#histOffset(), this.dimensions + 1);
    hist.fill(0);
    this.#scan(this.#queryOffset(), this.#matrixOffset(), n, this.bytesPerVector / 8, this.#outOffset(), this.#histOffset());
    const want = Math.min(k, n);
    let threshold = 0;
    let below = 0;
    for (let t = 0; t <= this.dimensions; t++) {
      if (below + hist[t]! >= want) {
        threshold = t;
        break;
      }
      below += hist[t]!;
    }
    let atThreshold = want - below;
    const out = new Uint16Array(buffer, this.#outOffset(), n);
    const ids: number[] = [];
    const distances: number[] = [];
    for (let i = 0; i < n; i++) {
      const d = out[i]!;
      if (d < threshold || (d === threshold && atThreshold-- > 0)) {
        ids.push(this.#ids[i]!);
        distances.push(d);
      }
    }
    return { ids, distances };
  }
}
