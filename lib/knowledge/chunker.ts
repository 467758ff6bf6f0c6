// Splits extracted text into overlapping chunks. Sizes are counted in
// characters (Unicode code points), and named so: upstream's UI said "tokens"
// for the same numbers.

export interface ChunkOptions {
  /** Maximum characters per chunk. */
  chunkSizeChars: number;
  /** Characters repeated from the end of one chunk at the start of the next; must be smaller than the size. */
  overlapChars: number;
}

export interface TextChunk {
  /** 0-based position in the document. */
  index: number;
  text: string;
  /** Code-point offset of the chunk's start in the normalised text. */
  start: number;
}

export const DEFAULT_CHUNK_OPTIONS: Readonly<ChunkOptions> = Object.freeze({ chunkSizeChars: 750, overlapChars: 50 });
export const MIN_CHUNK_SIZE_CHARS = 100;
export const MAX_CHUNK_SIZE_CHARS = 20_000;

export class ChunkOptionsError extends Error {
  override name = 'ChunkOptionsError';
}

/** Why the options are refused, or null. Overlap ≥ size would never advance. */
export function chunkOptionsProblem(o: ChunkOptions): string | null {
  if (!Number.isInteger(o.chunkSizeChars) || o.chunkSizeChars < MIN_CHUNK_SIZE_CHARS || o.chunkSizeChars > MAX_CHUNK_SIZE_CHARS) {
    return `chunk size must be a whole number of characters between ${MIN_CHUNK_SIZE_CHARS} and ${MAX_CHUNK_SIZE_CHARS}`;
  }
  if (!Number.isInteger(o.overlapChars) || o.overlapChars < 0) return 'overlap must be a whole number of characters, at least 0';
  if (o.overlapChars >= o.chunkSizeChars) return 'overlap must be smaller than the chunk size';
  return null;
}

/** Collapses runs of blank space but keeps paragraph breaks, so chunk boundaries can find them. */
export function normalizeWhitespace(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+/g, ' ')
    .replace(/[\u0000-\u0008\u000e-\u001f\u007f]/g, '')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/ {2,}/g, ' ')
    .trim();
}

// Prefer to end a chunk at a paragraph, then a line, then a sentence, then a word.
const BREAKS: ReadonlyArray<RegExp> = [/\n\n/g, /\n/g, /[.!?。！？](?=\s)/g, /\s/g];

/** Code-point view of the text; plain string indexing when there are no surrogate pairs (the common case). */
interface Units {
  length: number;
  slice(a: number, b: number): string;
  /** Code points in a string produced by slice(). */
  count(s: string): number;
}

function units(text: string): Units {
  if (!/[\uD800-\uDFFF]/.test(text)) return { length: text.length, slice: (a, b) => text.slice(a, b), count: (s) => s.length };
  const cps = Array.from(text);
  return { length: cps.length, slice: (a, b) => cps.slice(a, b).join(''), count: (s) => Array.from(s).length };
}

function cutPoint(u: Units, start: number, end: number): number {
  if (end >= u.length) return u.length;
  // Look back at most 20 % of the window for a natural boundary.
  const floor = start + Math.floor((end - start) * 0.8);
  const window = u.slice(floor, end);
  for (const re of BREAKS) {
    re.lastIndex = 0;
    let last = -1;
    let m: RegExpExecArray | null;
    while ((m = re.exec(window)) !== null) last = m.index + m[0].length;
    if (last > 0) return floor + u.count(window.slice(0, last));
  }
  return end;
}

/**
 * Character-based chunking with overlap. Each chunk holds at most
 * `chunkSizeChars` code points; the next starts `overlapChars` before the
 * previous end, so every step advances by at least size − overlap ≥ 1.
 */
export function chunkText(text: string, options: ChunkOptions = DEFAULT_CHUNK_OPTIONS): TextChunk[] {
  const problem = chunkOptionsProblem(options);
  if (problem) throw new ChunkOptionsError(problem);
  const normalized = normalizeWhitespace(text);
  if (normalized === '') return [];
  const u = units(normalized);
  const chunks: TextChunk[] = [];
  let start = 0;
  while (start < u.length) {
    const hardEnd = Math.min(u.length, start + options.chunkSizeChars);
    let end = cutPoint(u, start, hardEnd);
    if (end - start <= options.overlapChars) end = hardEnd;
    const piece = u.slice(start, end).trim();
    if (piece !== '') chunks.push({ index: chunks.length, text: piece, start });
    if (end >= u.length) break;
    start = Math.max(start + 1, end - options.overlapChars);
  }
  return chunks;
}
