// Finds app-level bot mentions (`@tutor`, `/tutor`) in a message's RAW text, i.e. with
// Talk's {mention-user1} placeholders still in place: a person whose display name is
// "tutor" is a placeholder there and never triggers a bot.

export interface MentionMatch {
  /** lowercase, no prefix */
  mention: string;
  /** index of the `@` or `/` in the raw text */
  index: number;
  /** prefix plus name, without trailing punctuation */
  length: number;
}

const MAX_MENTION_LENGTH = 100;
const VALID_MENTION = /^[a-z0-9_-]{1,100}$/;

export function isValidMention(s: string): boolean {
  return VALID_MENTION.test(s.toLowerCase());
}

const TOKEN = /[@/]([A-Za-z0-9_-]+)/g;
const WHITESPACE = /\s/;
// What may open a bracketed or emphasised `@tutor`; `/tutor` needs plain whitespace or the start.
const AT_OPENERS = new Set(['(', '[', '{', '"', "'", '«', '“', '‘', '*', '<']);
// Punctuation that may follow a mention before whitespace or the end: `@tutor,` `@tutor?!` `(@tutor).`
// A dot, colon or apostrophe followed by more text (`@tutor.org`, `/tutor:8080`) is not a mention.
const TRAILING = new Set(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', "'", '*', '»', '”', '’', '…', '–', '—', '>']);

interface Token {
  name: string;
  index: number;
  length: number;
}

function precededOk(text: string, index: number, prefix: string): boolean {
  if (index === 0) return true;
  const before = text[index - 1] ?? '';
  if (WHITESPACE.test(before)) return true;
  return prefix === '@' && AT_OPENERS.has(before);
}

function followedOk(text: string, from: number): boolean {
  let i = from;
  while (i < text.length && TRAILING.has(text[i] ?? '')) i += 1;
  return i === text.length || WHITESPACE.test(text[i] ?? '');
}

// Every well-formed `@name` / `/name` token, whether or not it names a known bot.
function* scanTokens(text: string): Generator<Token> {
  for (const m of text.matchAll(TOKEN)) {
    const index = m.index;
    const name = m[1] ?? '';
    const prefix = text[index] ?? '';
    const length = 1 + name.length;
    if (name.length > MAX_MENTION_LENGTH || !precededOk(text, index, prefix)) continue;
    if (!followedOk(text, index + length)) continue;
    yield { name: name.toLowerCase(), index, length };
  }
}

/** Every well-formed `@name` / `/name` token, known or not, repeats included. */
export function listMentionTokens(rawText: string): MentionMatch[] {
  return [...scanTokens(rawText)].map((t) => ({ mention: t.name, index: t.index, length: t.length }));
}

/** Known bot mentions in order of first appearance, each once. */
export function findBotMentions(rawText: string, knownMentions: ReadonlySet<string>): MentionMatch[] {
  const found: MentionMatch[] = [];
  const seen = new Set<string>();
  for (const t of scanTokens(rawText)) {
    if (!knownMentions.has(t.name) || seen.has(t.name)) continue;
    seen.add(t.name);
    found.push({ mention: t.name, index: t.index, length: t.length });
  }
  return found;
}

const LEADING_PUNCT = new Set([',', ':', ';']);

function isHorizontalSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t';
}

/**
 * Removes every `@mention` / `/mention` token of that bot and tidies the spaces around it:
 * "@tutor, explain" → "explain", "Hey @tutor, explain" → "Hey, explain", "why @tutor?" → "why?".
 */
export function stripMention(rawText: string, mention: string): string {
  const target = mention.toLowerCase();
  const tokens = [...scanTokens(rawText)].filter((t) => t.name === target);
  let text = rawText;
  // Right to left, so earlier indexes stay valid.
  for (let k = tokens.length - 1; k >= 0; k -= 1) {
    const t = tokens[k];
    if (t === undefined) continue;
    let start = t.index;
    let end = t.index + t.length;
    const atLineStart = start === 0 || text[start - 1] === '\n';
    if (atLineStart && LEADING_PUNCT.has(text[end] ?? '')) end += 1;
    if (isHorizontalSpace(text[end])) {
      while (isHorizontalSpace(text[end])) end += 1;
    } else {
      while (start > 0 && isHorizontalSpace(text[start - 1])) start -= 1;
    }
    text = text.slice(0, start) + text.slice(end);
  }
  return text.trim();
}
