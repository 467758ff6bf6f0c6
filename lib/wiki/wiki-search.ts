// Ranking for wiki_search: Okapi BM25 over the pages read for one query, with hits in the path
// boosted. The caller bounds the work (number of files, bytes per file and in total).

export interface SearchDocument {
  path: string;
  text: string;
  size: number;
}

export interface SearchHit {
  path: string;
  score: number;
  snippet: string;
  size: number;
}

const K1 = 1.2;
const B = 0.75;
const PATH_BOOST = 2.5;
const SNIPPET_CHARS = 240;
const SNIPPET_BEFORE = 80;
const MAX_QUERY_TERMS = 32;

/** Lowercase words of letters and digits in any script. */
export function tokenize(text: string): string[] {
  return (
    text
      .toLowerCase()
      .normalize('NFKC')
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

function counts(tokens: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of tokens) m.set(t, (m.get(t) ?? 0) + 1);
  return m;
}

function snippetAround(text: string, terms: string[]): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const t of terms) {
    const i = lower.indexOf(t);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  const chars = Array.from(text);
  // Character offset of the hit (the byte-free position in code points).
  const startChar = at < 0 ? 0 : Math.max(0, Array.from(text.slice(0, at)).length - SNIPPET_BEFORE);
  const out = chars
    .slice(startChar, startChar + SNIPPET_CHARS)
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
  return `${startChar > 0 ? '…' : ''}${out}${startChar + SNIPPET_CHARS < chars.length ? '…' : ''}`;
}

export function rankDocuments(query: string, docs: ReadonlyArray<SearchDocument>, limit: number): SearchHit[] {
  const terms = [...new Set(tokenize(query))].slice(0, MAX_QUERY_TERMS);
  if (terms.length === 0 || docs.length === 0) return [];
  const bodies = docs.map((d) => {
    const tokens = tokenize(d.text);
    return { doc: d, tf: counts(tokens), length: tokens.length, pathTokens: new Set(tokenize(d.path)) };
  });
  const avg = bodies.reduce((s, b) => s + b.length, 0) / bodies.length || 1;
  const df = new Map<string, number>();
  for (const t of terms) df.set(t, bodies.filter((b) => b.tf.has(t) || b.pathTokens.has(t)).length);
  const n = bodies.length;
  const hits: SearchHit[] = [];
  for (const b of bodies) {
    let score = 0;
    for (const t of terms) {
      const docFreq = df.get(t) ?? 0;
      if (docFreq === 0) continue;
      const idf = Math.log(1 + (n - docFreq + 0.5) / (docFreq + 0.5));
      const f = b.tf.get(t) ?? 0;
      if (f > 0) score += idf * ((f * (K1 + 1)) / (f + K1 * (1 - B + (B * b.length) / avg)));
      // A term in the page's path or file name says more than one in its text.
      if (b.pathTokens.has(t)) score += idf * PATH_BOOST;
    }
    if (score > 0) hits.push({ path: b.doc.path, score: Math.round(score * 1000) / 1000, snippet: snippetAround(b.doc.text, terms), size: b.doc.size });
  }
  hits.sort((a, c) => c.score - a.score || a.path.localeCompare(c.path));
  return hits.slice(0, limit);
}
