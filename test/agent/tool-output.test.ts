import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TOOL_OUTPUT_MAX_CHARS, sanitizeAssistantText, toolResultText, truncateUtf8Chars } from '../../lib/tools/tool-output.ts';

// ---------------------------------------------------------------- truncateUtf8Chars

test('the default limit is 4000 code points', () => {
  assert.equal(TOOL_OUTPUT_MAX_CHARS, 4000);
  const exact = 'a'.repeat(4000);
  assert.equal(truncateUtf8Chars(exact), exact);
  const over = 'a'.repeat(4001);
  assert.equal(truncateUtf8Chars(over), 'a'.repeat(4000) + '...');
});

test('code points are counted, not UTF-16 units or bytes', () => {
  const emoji = '😀'.repeat(4000);
  assert.equal(truncateUtf8Chars(emoji), emoji);
  const umlauts = 'ä'.repeat(4001);
  assert.equal(truncateUtf8Chars(umlauts), 'ä'.repeat(4000) + '...');
});

test('a surrogate pair is never split', () => {
  const text = 'ab😀cd';
  assert.equal(truncateUtf8Chars(text, 3), 'ab😀...');
  assert.equal(truncateUtf8Chars(text, 2), 'ab...');
  const mixed = 'x' + '😀'.repeat(10);
  for (let max = 0; max <= 11; max++) {
    const out = truncateUtf8Chars(mixed, max);
    assert.equal(out.isWellFormed(), true, String(max));
    const body = out.endsWith('...') ? out.slice(0, -3) : out;
    assert.equal([...body].length, Math.min(max, 11), String(max));
  }
});

test('lone surrogates are replaced so the result is valid UTF-8', () => {
  const broken = 'a\uD800b\uDC00c';
  const out = truncateUtf8Chars(broken, 10);
  assert.equal(out.isWellFormed(), true);
  assert.equal(out, 'a\uFFFDb\uFFFDc');
  assert.equal(Buffer.from(out, 'utf8').toString('utf8'), out);
});

test('odd limits and inputs do not throw', () => {
  assert.equal(truncateUtf8Chars('abc', 0), '...');
  assert.equal(truncateUtf8Chars('abc', -5), '...');
  assert.equal(truncateUtf8Chars('abc', 2.9), 'ab...');
  assert.equal(truncateUtf8Chars('abc', Number.NaN), 'abc');
  assert.equal(truncateUtf8Chars('abc', Infinity), 'abc');
  assert.equal(truncateUtf8Chars('', 3), '');
  assert.equal(truncateUtf8Chars(undefined as unknown as string, 3), '');
  assert.equal(truncateUtf8Chars(12345 as unknown as string, 3), '123...');
});

// ---------------------------------------------------------------- toolResultText

test('text blocks are trimmed and joined with blank lines; other blocks are skipped', () => {
  const result = {
    content: [
      { type: 'text', text: '  first  ' },
      { type: 'image', data: 'xx' },
      { type: 'text', text: '' },
      { type: 'text', text: 'second' },
    ],
    isError: false,
  };
  assert.equal(toolResultText(result), 'first\n\nsecond');
});

test('string items in content count as text', () => {
  assert.equal(toolResultText({ content: ['a', { type: 'text', text: 'b' }] }), 'a\n\nb');
});

test('a top-level text field is used when there are no text blocks', () => {
  assert.equal(toolResultText({ content: [], text: ' fallback ' }), 'fallback');
  assert.equal(toolResultText({ text: 'only text' }), 'only text');
});

test('without text the result is pretty JSON', () => {
  const result = { content: [{ type: 'resource', resource: { uri: 'x' } }] };
  assert.equal(toolResultText(result), JSON.stringify(result, null, 2));
  assert.equal(toolResultText({ a: 1 }), '{\n  "a": 1\n}');
  assert.equal(toolResultText([1, 2]), '[\n  1,\n  2\n]');
  assert.equal(toolResultText(null), 'null');
  assert.equal(toolResultText(42), '42');
});

test('a plain string result is its own text', () => {
  assert.equal(toolResultText('done'), 'done');
});

test('error results are marked as errors once', () => {
  assert.equal(toolResultText({ content: [{ type: 'text', text: 'not found' }], isError: true }), 'ERROR: not found');
  assert.equal(toolResultText({ content: [{ type: 'text', text: 'Error: bad' }], isError: true }), 'Error: bad');
  assert.equal(toolResultText({ content: [{ type: 'text', text: 'fine' }], isError: 'yes' }), 'fine');
});

test('results are truncated to 4000 code points by default, or to the given limit', () => {
  const long = 'é'.repeat(5000);
  assert.equal(toolResultText({ content: [{ type: 'text', text: long }] }), 'é'.repeat(4000) + '...');
  assert.equal(toolResultText({ content: [{ type: 'text', text: 'abcdef' }] }, 3), 'abc...');
  assert.equal(toolResultText({ content: [{ type: 'text', text: long }] }, Infinity), long);
  const big = { rows: Array.from({ length: 1000 }, (_, i) => ({ i })) };
  assert.equal([...toolResultText(big)].length, 4003);
});

test('unserialisable results do not throw', () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic['self'] = cyclic;
  assert.match(toolResultText(cyclic), /"self": "\[unserializable\]"/);
  assert.match(toolResultText({ n: 10n }), /"n": "10"/);
  assert.equal(toolResultText(undefined), 'Received invalid tool response');
  assert.equal(
    toolResultText(() => 1),
    'Received invalid tool response',
  );
  const throwing = {
    toJSON(): never {
      throw new Error('boom');
    },
  };
  assert.equal(toolResultText(throwing), 'Received invalid tool response');
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 10000; i++) deep = { d: deep };
  assert.doesNotThrow(() => toolResultText(deep));
});

test('invalid UTF-16 in tool text is repaired', () => {
  assert.equal(toolResultText({ content: [{ type: 'text', text: 'a\uD800' }] }), 'a\uFFFD');
});

// ---------------------------------------------------------------- sanitizeAssistantText

test('think blocks are stripped: closed, unclosed and stray', () => {
  assert.equal(sanitizeAssistantText('<think>reasoning</think>Answer'), 'Answer');
  assert.equal(sanitizeAssistantText('<THINK>a\nb</Think>\nAnswer'), 'Answer');
  assert.equal(sanitizeAssistantText('Answer<think>never closed'), 'Answer');
  assert.equal(sanitizeAssistantText('leftover</think>Answer'), 'leftoverAnswer');
  assert.equal(sanitizeAssistantText('<think>only thinking</think>'), '');
});

test('tool-call markup is stripped, including namespaced and unclosed blocks', () => {
  assert.equal(sanitizeAssistantText('Hi <tool_call>{"name":"x"}</tool_call> there'), 'Hi there');
  assert.equal(sanitizeAssistantText('Hi <minimax:tool_call><invoke name="x"></invoke></minimax:tool_call>'), 'Hi');
  assert.equal(sanitizeAssistantText('Hi <function_call>x'), 'Hi');
  assert.equal(sanitizeAssistantText('Hi</tool_call> there</function_call>'), 'Hi there');
  assert.equal(sanitizeAssistantText('A <invoke name="x"><parameter name="q">1</parameter></invoke> B'), 'A B');
});

test('runs of spaces between words collapse; indentation and code blocks stay', () => {
  assert.equal(sanitizeAssistantText('a   b\t\tc'), 'a b c');
  assert.equal(sanitizeAssistantText('- item\n  - nested   item'), '- item\n  - nested item');
  const code = 'Run:\n```\nif  (x)  {\n    y();\n}\n\n\n\nz\n```';
  assert.equal(sanitizeAssistantText(code), code);
});

test('three or more newlines collapse to one blank line', () => {
  assert.equal(sanitizeAssistantText('a\n\n\nb'), 'a\n\nb');
  assert.equal(sanitizeAssistantText('a\n\n\n\n\n\nb\n\nc'), 'a\n\nb\n\nc');
  assert.equal(sanitizeAssistantText('a\n  \n \t \n\nb'), 'a\n\nb');
});

test('an answer repeated in full is kept once', () => {
  const answer = 'The library opens at nine on weekdays.';
  assert.equal(sanitizeAssistantText(`${answer}\n\n${answer}`), answer);
  assert.equal(sanitizeAssistantText(`${answer} ${answer}`), answer);
  assert.equal(sanitizeAssistantText(`${answer}${answer}`), answer);
  assert.equal(sanitizeAssistantText(`<think>x</think>${answer}\n\n\n\n${answer}`), answer);
});

test('short or partial repetitions are kept', () => {
  assert.equal(sanitizeAssistantText('Yes, yes. Yes, yes.'), 'Yes, yes. Yes, yes.');
  const answer = 'The library opens at nine on weekdays.';
  assert.equal(sanitizeAssistantText(`${answer} ${answer} ${answer}`), `${answer} ${answer} ${answer}`);
  assert.equal(sanitizeAssistantText(`${answer} Also: ${answer}`), `${answer} Also: ${answer}`);
});

test('ordinary text is only trimmed', () => {
  const text = 'Hello!\n\nHere are **two** points:\n1. one\n2. two';
  assert.equal(sanitizeAssistantText(`  ${text}  \n`), text);
});

test('malformed input does not throw', () => {
  assert.equal(sanitizeAssistantText(undefined as unknown as string), '');
  assert.equal(sanitizeAssistantText(null as unknown as string), '');
  assert.equal(sanitizeAssistantText(''), '');
  assert.doesNotThrow(() => sanitizeAssistantText('<think>'.repeat(5000) + '<tool_call>'.repeat(5000) + ' '.repeat(10000)));
});
