// RFC 8785 (JCS) through `canonicalize`: the one byte-exact JSON form for hashes and comparisons.
// It keeps an own "__proto__" key (the hand-written copy this replaced dropped it from action hashes),
// and refuses NaN, Infinity and lone surrogates instead of hashing them as something else.
import canonicalize from 'canonicalize';

export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('canonical JSON: the value has no JSON form');
  return text;
}
