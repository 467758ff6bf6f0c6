import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TALK_MAX_CHARS, countCodePoints, splitForTalk } from '../../lib/replies/message-splitter.ts';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const visible = (text: string): string => text.replace(/\s+/g, '');

function assertValid(pieces: string[], max: number, original: string): void {
  for (const piece of pieces) {
    assert.ok(countCodePoints(piece) <= max, `piece of ${countCodePoints(piece)} > ${max}`);
    assert.ok(piece.trim() !== '', 'no blank piece');
    assert.ok(!LONE_SURROGATE.test(piece), 'no split surrogate pair');
  }
  assert.equal(visible(pieces.join('')), visible(original), 'no text lost');
}

// The capture's text: "Long message for the bot. " repeated to exactly N characters.
function longMessage(chars: number): string {
  return 'Long message for the bot. '.repeat(Math.ceil(chars / 26) + 1).slice(0, chars);
}

describe('splitForTalk at Talk limits', () => {
  it('uses 32000 as the default limit', () => {
    assert.equal(TALK_MAX_CHARS, 32000);
  });

  it('keeps a 32000-character message whole (Talk answers 201)', () => {
    const text = longMessage(32000);
    assert.notEqual(text.at(-1), ' ');
    assert.deepEqual(splitForTalk(text), [text]);
  });

  it('splits a 32001-character message (Talk answers 413) at a sentence end', () => {
    const text = longMessage(32001);
    const pieces = splitForTalk(text);
    assert.equal(pieces.length, 2);
    assertValid(pieces, 32000, text);
    assert.ok(pieces[0]?.endsWith('bot.'));
  });

  it('counts an emoji as one character, as mb_strlen does', () => {
    const text = '😀'.repeat(32000);
    assert.equal(text.length, 64000);
    assert.deepEqual(splitForTalk(text), [text]);
  });

  it('never splits a surrogate pair on a hard cut', () => {
    const text = '😀'.repeat(32001);
    const pieces = splitForTalk(text);
    assert.equal(pieces.length, 2);
    assertValid(pieces, 32000, text);
    assert.equal(countCodePoints(pieces[0] ?? ''), 32000);
  });

  it('cuts odd mixtures of emoji and ASCII at code point counts', () => {
    const text = 'a😀bc😀😀d'.repeat(7);
    for (let max = 1; max <= 9; max++) assertValid(splitForTalk(text, max), max, text);
  });
});

describe('splitForTalk boundaries', () => {
  it('prefers a paragraph boundary', () => {
    const text = 'First sentence. Second sentence.\n\nThird paragraph here.';
    assert.deepEqual(splitForTalk(text, 40), ['First sentence. Second sentence.', 'Third paragraph here.']);
  });

  it('falls back to a sentence boundary', () => {
    const text = 'One two three four. Five six seven eight nine';
    assert.deepEqual(splitForTalk(text, 30), ['One two three four.', 'Five six seven eight nine']);
  });

  it('falls back to a line break', () => {
    const text = 'alpha beta gamma delta\nepsilon zeta eta theta';
    assert.deepEqual(splitForTalk(text, 30), ['alpha beta gamma delta', 'epsilon zeta eta theta']);
  });

  it('falls back to a word boundary before a hard cut', () => {
    assert.deepEqual(splitForTalk('alpha beta gamma delta epsilon', 20), ['alpha beta gamma', 'delta epsilon']);
  });

  it('hard-cuts text without any boundary', () => {
    assert.deepEqual(splitForTalk('abcdefghij', 4), ['abcd', 'efgh', 'ij']);
  });

  it('ignores a boundary so early that the piece would be tiny', () => {
    const text = 'Hi.\n\n' + 'x'.repeat(30);
    const pieces = splitForTalk(text, 20);
    assert.equal(countCodePoints(pieces[0] ?? ''), 20);
    assertValid(pieces, 20, text);
  });

  it('keeps a ZWJ emoji sequence together when it can', () => {
    const family = '👨‍👩‍👧';
    assert.equal(countCodePoints(family), 5);
    const pieces = splitForTalk('ab' + family + 'cd', 4);
    assert.deepEqual(pieces.slice(0, 1), ['ab']);
    assertValid(pieces, 4, 'ab' + family + 'cd');
  });

  it('keeps indentation of the line after a boundary', () => {
    const text = 'Intro text line.\n\n    indented code line';
    assert.deepEqual(splitForTalk(text, 25), ['Intro text line.', '    indented code line']);
  });

  it('returns nothing for blank text and rejects a bad limit', () => {
    assert.deepEqual(splitForTalk(''), []);
    assert.deepEqual(splitForTalk(' \n\n\t'), []);
    assert.throws(() => splitForTalk('x', 0), RangeError);
    assert.throws(() => splitForTalk('x', 1.5), RangeError);
  });

  it('counts code points like spreading the string', () => {
    for (const text of ['', 'abc', '😀x😀', 'é', '👨‍👩‍👧', '\uD800x']) {
      assert.equal(countCodePoints(text), [...text].length);
    }
  });
});
