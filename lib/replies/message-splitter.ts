// Splits a reply into messages Talk accepts. Talk rejects a message longer than
// 32000 characters with 413, counting with PHP mb_strlen (Unicode code points),
// not UTF-16 units, so an emoji counts once and a surrogate pair is never split.

export const TALK_MAX_CHARS = 32000;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Number of Unicode code points, as mb_strlen counts them. */
export function countCodePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

// UTF-16 offset just after the first `max` code points (text.length if shorter).
function offsetAfter(text: string, max: number): number {
  let offset = 0;
  for (let count = 0; count < max && offset < text.length; count++) {
    const code = text.codePointAt(offset) ?? 0;
    offset += code > 0xffff ? 2 : 1;
  }
  return offset;
}

function lastMatchEnd(text: string, pattern: RegExp, limit: number): number {
  let best = -1;
  for (const match of text.slice(0, limit + 1).matchAll(pattern)) {
    const end = match.index + (match[1]?.length ?? 0);
    if (end <= limit) best = end;
  }
  return best;
}

// Best cut at or before `limit`: paragraph, sentence, line, word, then hard cut.
// A boundary in the first half of the window would leave a tiny message, so it
// only counts when it is late enough.
function findCut(text: string, limit: number): number {
  const earliest = Math.max(1, Math.floor(limit / 2));
  const candidates = [
    text.lastIndexOf('\n\n', limit),
    lastMatchEnd(text, /([.!?])\s/g, limit),
    text.lastIndexOf('\n', limit),
    lastMatchEnd(text, /()\s/g, limit),
  ];
  for (const cut of candidates) {
    if (cut >= earliest && cut <= limit) return cut;
  }
  // Hard cut: step back to the start of a grapheme (ZWJ emoji, flags) if it fits.
  const segment = graphemes.segment(text).containing(limit);
  if (segment && segment.index > 0 && segment.index < limit) return segment.index;
  return limit;
}

/** Splits `text` into non-blank pieces of at most `maxChars` code points each. */
export function splitForTalk(text: string, maxChars = TALK_MAX_CHARS): string[] {
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError('maxChars must be a positive integer');
  if (text.trim() === '') return [];
  const pieces: string[] = [];
  let rest = text.replace(/^\s*\n/, '');
  while (rest.trim() !== '') {
    const limit = offsetAfter(rest, maxChars);
    if (limit >= rest.length) {
      pieces.push(rest.trimEnd());
      break;
    }
    const cut = findCut(rest, limit);
    const piece = rest.slice(0, cut).trimEnd();
    if (piece.trim() !== '') pieces.push(piece);
    // Drop the boundary's blank lines but keep the next line's indentation.
    rest = rest.slice(cut).replace(/^\s*\n|^[ \t]+/, '');
  }
  return pieces;
}
