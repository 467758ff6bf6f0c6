import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkText, chunkOptionsProblem, ChunkOptionsError, normalizeWhitespace } from '../../lib/knowledge/chunker.ts';

test('overlap equal to or above the size is refused, as are tiny sizes', () => {
  assert.equal(chunkOptionsProblem({ chunkSizeChars: 500, overlapChars: 500 }), 'overlap must be smaller than the chunk size');
  assert.equal(chunkOptionsProblem({ chunkSizeChars: 500, overlapChars: 900 }), 'overlap must be smaller than the chunk size');
  assert.match(chunkOptionsProblem({ chunkSizeChars: 10, overlapChars: 0 }) ?? '', /between 100/);
  assert.match(chunkOptionsProblem({ chunkSizeChars: 500, overlapChars: -1 }) ?? '', /at least 0/);
  assert.equal(chunkOptionsProblem({ chunkSizeChars: 500, overlapChars: 499 }), null);
  assert.throws(() => chunkText('x', { chunkSizeChars: 200, overlapChars: 200 }), ChunkOptionsError);
});

test('chunks respect the size, overlap and cover the whole text', () => {
  const sentences = Array.from({ length: 200 }, (_, i) => `Sentence number ${i} talks about topic ${i % 7}.`);
  const text = sentences.join(' ');
  const chunks = chunkText(text, { chunkSizeChars: 300, overlapChars: 60 });
  assert.ok(chunks.length > 10);
  for (const c of chunks) assert.ok(Array.from(c.text).length <= 300, `chunk ${c.index} too long`);
  chunks.forEach((c, i) => assert.equal(c.index, i));
  for (const s of sentences)
    assert.ok(
      chunks.some((c) => c.text.includes(s)),
      `"${s}" is in some chunk whole`,
    );
  for (let i = 1; i < chunks.length; i++) {
    const prev = chunks[i - 1]!;
    const cur = chunks[i]!;
    assert.ok(cur.start > prev.start, 'every step advances');
    assert.ok(cur.start < prev.start + Array.from(prev.text).length, 'consecutive chunks overlap');
  }
});

test('an overlap of size − 1 still terminates, and sizes count code points', () => {
  const text = '😀'.repeat(1000);
  const chunks = chunkText(text, { chunkSizeChars: 100, overlapChars: 99 });
  assert.equal(chunks.length, 901);
  assert.ok(chunks.every((c) => Array.from(c.text).length <= 100));
});

test('whitespace is normalised and empty input gives no chunks', () => {
  assert.equal(normalizeWhitespace('a\r\n\r\n\r\n\tb  c\u0000'), 'a\n\nb c');
  assert.deepEqual(chunkText('   \n\n  '), []);
  const short = chunkText('Short text.');
  assert.equal(short.length, 1);
  assert.equal(short[0]!.text, 'Short text.');
});
