import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseDecoder, type SseEvent } from '../../lib/llm/sse-decoder.ts';

const bytes = (s: string) => new TextEncoder().encode(s);

/** Feeds the text in pieces of `size` bytes (splitting multi-byte characters too) and collects every event. */
function decodeInPieces(text: string, size: number): SseEvent[] {
  const all = bytes(text);
  const decoder = new SseDecoder();
  const out: SseEvent[] = [];
  for (let i = 0; i < all.length; i += size) out.push(...decoder.push(all.subarray(i, i + size)));
  out.push(...decoder.finish());
  return out;
}

describe('SSE decoder', () => {
  const stream = 'data: {"a":1}\n\n: keep-alive\n\nevent: error\ndata: {"error":{"message":"ü € 😀"}}\n\ndata: first\ndata: second\n\ndata:[DONE]\n\n';
  const expected: SseEvent[] = [
    { event: null, data: '{"a":1}' },
    { event: 'error', data: '{"error":{"message":"ü € 😀"}}' },
    { event: null, data: 'first\nsecond' },
    { event: null, data: '[DONE]' },
  ];

  it('decodes data, event names and multi-line data, skipping comments', () => {
    assert.deepEqual(decodeInPieces(stream, 1 << 20), expected);
  });

  it('gives the same events however the body is cut, even inside a UTF-8 character', () => {
    for (const size of [1, 2, 3, 5, 7, 13]) assert.deepEqual(decodeInPieces(stream, size), expected, `pieces of ${size}`);
  });

  it('accepts CRLF and CR line ends, also when CR and LF arrive in different reads', () => {
    for (const eol of ['\r\n', '\r']) {
      const text = stream.replaceAll('\n', eol);
      for (const size of [1, 4, 1 << 20]) assert.deepEqual(decodeInPieces(text, size), expected, `${JSON.stringify(eol)} in pieces of ${size}`);
    }
  });

  it('drops an event whose closing blank line never came', () => {
    assert.deepEqual(decodeInPieces('data: complete\n\ndata: cut off', 4), [{ event: null, data: 'complete' }]);
    assert.deepEqual(decodeInPieces('data: cut off\n', 4), []);
  });

  it('takes a field without a colon as empty, and only one leading space off a value', () => {
    assert.deepEqual(decodeInPieces('data\n\ndata:  two spaces\n\n', 3), [
      { event: null, data: '' },
      { event: null, data: ' two spaces' },
    ]);
  });

  it('returns events one read at a time', () => {
    const decoder = new SseDecoder();
    assert.deepEqual(decoder.push(bytes('data: a\n')), []);
    assert.deepEqual(decoder.push(bytes('\ndata: b\n\ndata: c\n\n')), [
      { event: null, data: 'a' },
      { event: null, data: 'b' },
      { event: null, data: 'c' },
    ]);
  });
});
