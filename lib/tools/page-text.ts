// Character paging of long texts (wiki and Collectives pages). Offsets count Unicode characters
// (code points), never bytes, so a page read in chunks never splits a character.

export const DEFAULT_READ_LIMIT = 3000;
export const MAX_READ_LIMIT = 3500;
export const MAX_PAGE_BYTES = 512 * 1024;

export interface PageChunk {
  offset: number;
  limit: number;
  returned_length: number;
  total_length: number;
  has_more: boolean;
  next_offset: number | null;
  content: string;
}

function clampInt(value: unknown, fallback: number, min: number, max: number): number {
  const n =
    typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : fallback;
  return Math.min(max, Math.max(min, n));
}

/** One chunk of `text`: `offset` and `limit` in characters; limit 1..3500 (default 3000). */
export function paginate(text: string, offsetArg: unknown, limitArg: unknown): PageChunk {
  const chars = Array.from(text);
  const total = chars.length;
  const limit = clampInt(limitArg, DEFAULT_READ_LIMIT, 1, MAX_READ_LIMIT);
  const offset = clampInt(offsetArg, 0, 0, total);
  const end = Math.min(total, offset + limit);
  const content = chars.slice(offset, end).join('');
  const hasMore = end < total;
  return { offset, limit, returned_length: end - offset, total_length: total, has_more: hasMore, next_offset: hasMore ? end : null, content };
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
