import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { THINKING_PLACEHOLDER, ThinkFilter, stripThinking } from '../../lib/llm/think-filter.ts';

function run(deltas: string[]): { text: string; started: number[]; sawThinking: boolean } {
  const filter = new ThinkFilter();
  let text = '';
  const started: number[] = [];
  deltas.forEach((delta, index) => {
    const out = filter.push(delta);
    text += out.text;
    if (out.thinkingStarted) started.push(index);
  });
  const end = filter.finish();
  return { text: text + end.text, started, sawThinking: end.sawThinking };
}

describe('ThinkFilter', () => {
  it('removes a think block and reports its start once', () => {
    const r = run(['Hello ', '<think>plan', ' more plan</think>', 'world']);
    assert.equal(r.text, 'Hello world');
    assert.deepEqual(r.started, [1]);
    assert.equal(r.sawThinking, true);
  });

  it('passes text without thinking through unchanged', () => {
    const r = run(['Plain ', 'answer with a < b and <b>bold</b> tags.']);
    assert.equal(r.text, 'Plain answer with a < b and <b>bold</b> tags.');
    assert.deepEqual(r.started, []);
    assert.equal(r.sawThinking, false);
  });

  it('handles tags split at every possible delta boundary', () => {
    const input = 'A<think>x y</think>B<thinking>z</thinking>C';
    for (let size = 1; size <= input.length; size++) {
      const deltas: string[] = [];
      for (let i = 0; i < input.length; i += size) deltas.push(input.slice(i, i + size));
      const r = run(deltas);
      assert.equal(r.text, 'ABC', `delta size ${size}`);
      assert.equal(r.started.length, 1, `delta size ${size}`);
    }
  });

  it('is case-insensitive', () => {
    assert.equal(run(['<THINK>x</Think>ok ', '<Thinking>y</THINKING>done']).text, 'ok done');
  });

  it('holds back only a possible tag prefix', () => {
    const filter = new ThinkFilter();
    assert.deepEqual(filter.push('a < b, c <t'), { text: 'a < b, c ', thinkingStarted: false });
    assert.deepEqual(filter.push('able>'), { text: '<table>', thinkingStarted: false });
    assert.deepEqual(filter.push('x </thin'), { text: 'x ', thinkingStarted: false });
    assert.deepEqual(filter.push('g'), { text: '</thing', thinkingStarted: false });
  });

  it('releases a held partial tag at finish', () => {
    const filter = new ThinkFilter();
    assert.equal(filter.push('ends with <thi').text, 'ends with ');
    assert.deepEqual(filter.finish(), { text: '<thi', sawThinking: false });
  });

  it('drops everything after an unclosed opener', () => {
    const filter = new ThinkFilter();
    assert.deepEqual(filter.push('Answer <think>never'), { text: 'Answer ', thinkingStarted: true });
    assert.deepEqual(filter.push(' closed </thi'), { text: '', thinkingStarted: false });
    assert.deepEqual(filter.finish(), { text: '', sawThinking: true });
  });

  it('treats text before a leading stray closer as thinking', () => {
    const r = run(['reasoning without opener</think>', '\n\nThe answer.']);
    assert.equal(r.text, '\n\nThe answer.');
    assert.equal(r.sawThinking, true);
    assert.deepEqual(r.started, [], 'no block begins, so no placeholder');
  });

  it('removes only the tag for a stray closer after a block', () => {
    assert.equal(run(['<think>a</think>B', ' and </think>C']).text, 'B and C');
  });

  it('reports thinkingStarted only for the first of several blocks', () => {
    const r = run(['<think>a</think>one ', '<think>b</think>two']);
    assert.equal(r.text, 'one two');
    assert.deepEqual(r.started, [0]);
  });

  it('can be reused after finish', () => {
    const filter = new ThinkFilter();
    filter.push('<think>x');
    filter.finish();
    assert.deepEqual(filter.push('<think>y</think>z'), { text: 'z', thinkingStarted: true });
  });
});

describe('stripThinking', () => {
  it('strips closed, unclosed and stray-closer blocks and trims', () => {
    assert.equal(stripThinking('<think>plan</think>\n\nAnswer'), 'Answer');
    assert.equal(stripThinking('Answer\n<thinking>half'), 'Answer');
    assert.equal(stripThinking('the model reasoned here</think>\nAnswer'), 'Answer');
    assert.equal(stripThinking('<think>only thinking</think>'), '');
    assert.equal(stripThinking('No thinking at all.'), 'No thinking at all.');
  });
});

describe('THINKING_PLACEHOLDER', () => {
  it('is the placeholder sent while the model thinks', () => {
    assert.equal(THINKING_PLACEHOLDER, '🤔 _(thinking… this may take a moment)_');
  });
});
