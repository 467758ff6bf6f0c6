import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReplyChunker } from '../../lib/replies/reply-chunker.ts';

function clock(start = 0): { now: () => number; advance: (ms: number) => void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

const visible = (text: string): string => text.replace(/\s+/g, '');

describe('ReplyChunker paragraph flush', () => {
  it('sends a complete paragraph and keeps the remainder', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('First paragraph.'), []);
    assert.deepEqual(c.push('\n\nSecond'), ['First paragraph.']);
    assert.deepEqual(c.push(' part'), []);
    assert.deepEqual(c.finish(), ['Second part']);
  });

  it('sends every complete paragraph of one delta as its own chunk', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('One.\n\nTwo.\n\n\nThree.\n\nrest'), ['One.', 'Two.', 'Three.']);
    assert.deepEqual(c.finish(), ['rest']);
  });

  it('detects a boundary split across deltas', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('Hello\n'), []);
    assert.deepEqual(c.push('\nWorld'), ['Hello']);
  });

  it('never emits empty or whitespace-only chunks', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('\n\n  \n\n'), []);
    assert.deepEqual(c.push('   '), []);
    assert.deepEqual(c.finish(), []);
  });

  it('trims chunk edges but keeps inner formatting', () => {
    const c = new ReplyChunker({ now: clock().now });
    const out = c.push('\n  - item **bold**\n    - nested\n\n');
    assert.deepEqual(out, ['- item **bold**\n    - nested']);
  });
});

describe('ReplyChunker time-based flush', () => {
  const sentence = 'This is a sentence that is long enough. ';

  it('waits for more than idleFlushMs and more than minBufferedChars', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    const text = sentence.repeat(3) + 'And an unfinished';
    assert.deepEqual(c.push(text), []);
    t.advance(3000);
    assert.deepEqual(c.tick(), [], 'exactly idleFlushMs is not more than idleFlushMs');
    t.advance(1);
    assert.deepEqual(c.tick(), [sentence.repeat(3).trim()]);
    assert.deepEqual(c.finish(), ['And an unfinished']);
  });

  it('does not flush when too little is buffered', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now, minBufferedChars: 100 });
    const text = 'Short sentence number one. Short sentence number two. Short three.'; // < 100 chars
    assert.ok(text.length <= 100);
    c.push(text);
    t.advance(10_000);
    assert.deepEqual(c.tick(), []);
  });

  it('flushes on push once the idle time has passed', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    c.push(sentence.repeat(2));
    t.advance(3500);
    assert.deepEqual(c.push(sentence + 'tail'), [sentence.repeat(3).trim()]);
  });

  it('finds a cut that arrives after searches that found none, also one split across deltas', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    c.push('word '.repeat(30));
    t.advance(3001);
    assert.deepEqual(c.tick(), [], 'no sentence end yet');
    for (let i = 0; i < 20; i++) assert.deepEqual(c.push('more '), [], 'still none');
    // The sentence end is "." then " ": the dot ends one delta, the space starts the next.
    assert.deepEqual(c.push('end.'), [('word '.repeat(30) + 'more '.repeat(20) + 'end.').trim()], 'a buffer ending in "." is cut whole');
    c.push('again '.repeat(30) + 'stop.');
    t.advance(3001);
    assert.deepEqual(c.push(' tail'), [('again '.repeat(30) + 'stop.').trim()]);
    c.push('x '.repeat(60));
    t.advance(3001);
    assert.deepEqual(c.tick(), []);
    assert.deepEqual(c.push('\nnext line'), [('tail' + 'x '.repeat(60)).trim()], 'a late newline is a cut point too');
  });

  it('cuts the whole buffer when it ends with . ! or ?', () => {
    for (const end of ['.', '!', '?']) {
      const t = clock();
      const c = new ReplyChunker({ now: t.now });
      const text = 'word '.repeat(25) + 'end' + end;
      c.push(text);
      t.advance(3001);
      assert.deepEqual(c.tick(), [text.trim()]);
      assert.deepEqual(c.finish(), []);
    }
  });

  it('accepts a sentence end followed by a newline', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    const first = 'word '.repeat(14) + 'done!';
    c.push(`${first}\nmore words without any sentence end at all here and here`);
    t.advance(3001);
    assert.deepEqual(c.tick(), [first]);
  });

  it('falls back to the last newline after position 30', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    const line1 = 'a heading without punctuation';
    const line2 = 'second line without punctuation, still going on';
    c.push(`${line1}\n${line2}\nthird line still being written by the model`);
    t.advance(3001);
    assert.deepEqual(c.tick(), [`${line1}\n${line2}`]);
  });

  it('ignores a newline at or before position 30 and cut points not beyond minCutIndex', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    c.push('Short intro. then' + ' x'.repeat(60)); // sentence end at 13, no newline
    t.advance(3001);
    assert.deepEqual(c.tick(), []);

    const d = new ReplyChunker({ now: t.now });
    d.push('short heading\n' + 'y'.repeat(120)); // newline at 13
    t.advance(3001);
    assert.deepEqual(d.tick(), []);
  });

  it('respects custom thresholds', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now, idleFlushMs: 100, minBufferedChars: 10, minCutIndex: 5 });
    c.push('Hello there. More');
    t.advance(101);
    assert.deepEqual(c.tick(), ['Hello there.']);
  });

  it('does not treat an ordered-list marker as a sentence end', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    const intro = 'Here are the steps you asked for, in order:';
    c.push(`${intro}\n1. open the settings page and look for the sharing section\n2. `);
    t.advance(3001);
    assert.deepEqual(c.tick(), [`${intro}\n1. open the settings page and look for the sharing section`]);
  });

  it('restarts the idle timer after every flush', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    t.advance(2500);
    assert.deepEqual(c.push('Para.\n\n'), ['Para.']);
    c.push(sentence.repeat(3));
    t.advance(2000); // 4500 since start, 2000 since the paragraph flush
    assert.deepEqual(c.tick(), []);
    t.advance(1001);
    assert.deepEqual(c.tick(), [sentence.repeat(3).trim()]);
  });
});

describe('ReplyChunker code fences', () => {
  it('does not flush on a paragraph boundary inside an open fence', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('Intro:\n\n```js\nconst a = 1;\n\nconst b = 2;\n'), ['Intro:']);
    assert.deepEqual(c.push('\n\nconst c = 3;\n'), []);
    assert.deepEqual(c.push('```\n\nAfter'), ['```js\nconst a = 1;\n\nconst b = 2;\n\n\nconst c = 3;\n```']);
    assert.deepEqual(c.finish(), ['After']);
  });

  it('handles a fence opener split across deltas', () => {
    const c = new ReplyChunker({ now: clock().now });
    const out = ['``', '`py\nx = 1\n', '\ny = 2\n``', '`\n\nDone'].flatMap((d) => c.push(d));
    assert.deepEqual(out, ['```py\nx = 1\n\ny = 2\n```']);
  });

  it('supports ~~~ fences and needs a long enough closer', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('~~~~\na\n\n~~~\nb\n\n'), []);
    assert.deepEqual(c.push('~~~~\n\nz'), ['~~~~\na\n\n~~~\nb\n\n~~~~']);
  });

  it('does not take inline code with backticks for a fence', () => {
    const c = new ReplyChunker({ now: clock().now });
    assert.deepEqual(c.push('```inline``` text\n\nnext'), ['```inline``` text']);
  });

  it('never cuts inside a fence on a time-based flush', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    const intro = 'Here is the code you asked for, it does exactly this.';
    c.push(`${intro}\n\`\`\`\nline one. line two. line three.\nmore. more. more. more. more. more.\n`);
    t.advance(3001);
    assert.deepEqual(c.tick(), [intro]);
    t.advance(3001);
    c.push('even more. even more. even more. even more. even more.\n');
    assert.deepEqual(c.tick(), [], 'the whole remainder is an open fence');
    assert.deepEqual(c.finish(), [
      '```\nline one. line two. line three.\nmore. more. more. more. more. more.\neven more. even more. even more. even more. even more.',
    ]);
  });

  it('does not cut into a partial line that may become a fence', () => {
    const t = clock();
    const c = new ReplyChunker({ now: t.now });
    const intro = 'word '.repeat(20) + 'end.';
    c.push(`${intro}\n\`\`\`js a. b. c`);
    t.advance(3001);
    assert.deepEqual(c.tick(), [intro]);
  });

  it('sends an unclosed fence at finish', () => {
    const c = new ReplyChunker({ now: clock().now });
    c.push('```\nnever closed\n\nstill code');
    assert.deepEqual(c.finish(), ['```\nnever closed\n\nstill code']);
  });
});

describe('ReplyChunker keeps all text', () => {
  const text = [
    'Intro sentence. Another one! A question? ',
    'Line after.\n\n',
    '```ts\nconst x = 1;\n\nconst y = 2;\n```\n\n',
    'Final words without an end',
  ].join('');

  for (const size of [1, 2, 3, 7, 16, text.length]) {
    it(`loses nothing with deltas of ${size} chars and a fast clock`, () => {
      const t = clock();
      const c = new ReplyChunker({ now: t.now, idleFlushMs: 0, minBufferedChars: 10, minCutIndex: 5 });
      const chunks: string[] = [];
      for (let i = 0; i < text.length; i += size) {
        t.advance(1);
        chunks.push(...c.push(text.slice(i, i + size)));
      }
      chunks.push(...c.finish());
      assert.equal(visible(chunks.join('')), visible(text));
      for (const chunk of chunks) assert.equal(chunk, chunk.trim());
      const fenced = chunks.find((chunk) => chunk.includes('const x'));
      assert.ok(fenced?.startsWith('```ts') && fenced.includes('const y = 2;\n```'), 'code block stays whole');
    });
  }
});
