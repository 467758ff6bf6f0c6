// Reads a short confirmation reply ("yes 4821", "@tutor ok 4821", "no") from the RAW text (S7):
// Talk's {mention-user1} placeholders are still in place, so a person named "yes" confirms nothing.
import { listMentionTokens } from '../talk/mention-detector.ts';

export const DEFAULT_AFFIRMATIVES: readonly string[] = [
  'yes',
  'yeah',
  'yep',
  'ok',
  'okay',
  'confirm',
  'confirmed',
  'ja',
  'jawohl',
  'bestätigen',
  'bestätige',
  'oui',
  'confirmer',
  'confirme',
  'sí',
  'si',
  'sì',
  'vale',
  'confirmar',
  'conferma',
  'confermo',
];

export const DEFAULT_NEGATIVES: readonly string[] = ['no', 'nope', 'cancel', 'abort', 'stop', 'nein', 'abbrechen', 'non', 'annuler', 'cancelar', 'annulla'];

export interface ConfirmationOptions {
  affirmatives: readonly string[];
  negatives: readonly string[];
}

export interface ConfirmationReply {
  answer: 'yes' | 'no';
  code: string | null;
}

const MAX_REPLY_LENGTH = 200;
const MAX_MENTION_TOKENS = 3;
const CODE = /^[0-9]{4,8}$/;
const PLACEHOLDER = /\{[A-Za-z0-9][A-Za-z0-9_-]{0,63}\}/;
const LEADING_DECORATION = /^[#*_~"'“‘([]+/;
const TRAILING_DECORATION = /[.,;:!?*_~"'”’)\]]+$/;

// Case- and accent-insensitive: "Sí" = "si", "BESTATIGEN" = "bestätigen".
function fold(word: string): string {
  return word.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

// Every chat message is read as a possible reply: the folded word lists are kept per list.
const wordSets = new WeakMap<readonly string[], Set<string>>();

function wordSet(words: readonly string[]): Set<string> {
  const cached = wordSets.get(words);
  if (cached) return cached;
  const set = new Set<string>();
  for (const w of words) {
    const trimmed = w.trim();
    if (trimmed !== '' && !/\s/.test(trimmed)) set.add(fold(trimmed));
  }
  wordSets.set(words, set);
  return set;
}

function isMentionToken(token: string): boolean {
  const first = listMentionTokens(token)[0];
  return first !== undefined && first.index === 0;
}

/** null unless the whole text is: optional bot mentions, one yes/no word, and (for yes, required) a 4–8 digit code. */
export function parseConfirmationReply(rawText: string, opts: ConfirmationOptions): ConfirmationReply | null {
  const text = rawText.trim();
  if (text === '' || text.length > MAX_REPLY_LENGTH) return null;
  // A placeholder is someone else's name; it is never part of the answer.
  if (PLACEHOLDER.test(text)) return null;

  const yes = wordSet(opts.affirmatives);
  const no = wordSet(opts.negatives);
  let answer: 'yes' | 'no' | null = null;
  let code: string | null = null;
  let mentions = 0;

  for (const token of text.split(/\s+/)) {
    if (isMentionToken(token)) {
      mentions += 1;
      if (mentions > MAX_MENTION_TOKENS) return null;
      continue;
    }
    const bare = token.normalize('NFKC').replace(LEADING_DECORATION, '').replace(TRAILING_DECORATION, '');
    if (CODE.test(bare)) {
      if (code !== null) return null;
      code = bare;
      continue;
    }
    const word = fold(bare);
    const isYes = yes.has(word);
    const isNo = no.has(word);
    if (isYes === isNo || answer !== null) return null;
    answer = isYes ? 'yes' : 'no';
  }

  if (answer === null) return null;
  if (answer === 'yes' && code === null) return null;
  return { answer, code };
}
