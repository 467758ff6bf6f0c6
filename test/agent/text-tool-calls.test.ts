import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractTextToolCalls } from '../../lib/agent/text-tool-calls.ts';
import { balancedJsonEnd, decodeXmlEntities, stripThinkBlocks, stripToolCallMarkup } from '../../lib/llm/tool-markup.ts';
import { ToolMarkupStreamFilter } from '../../lib/agent/tool-markup-stream.ts';
import type { TextToolSpec } from '../../lib/agent/text-tool-calls.ts';

const rag: TextToolSpec = {
  name: 'rag_search_documents',
  schema: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' }, min_score: { type: 'number' } }, required: ['query'] },
};
const room: TextToolSpec = { name: 'room_search_documents', schema: rag.schema };
const writePage: TextToolSpec = {
  name: 'wiki_write_page',
  schema: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' }, mode: { type: 'string' }, reason: { type: 'string' } },
    required: ['path', 'content'],
  },
};
const image: TextToolSpec = {
  name: 'attachment_analyze_image',
  schema: { type: 'object', properties: { question: { type: 'string' }, attachment_name: { type: 'string' } } },
};
const flags: TextToolSpec = {
  name: 'set_flags',
  schema: { type: 'object', properties: { on: { type: 'boolean' }, tags: { type: 'array' }, meta: { type: 'object' }, label: { type: 'string' } } },
};
const tools = [rag, writePage, image, flags];

// ---------------------------------------------------------------- JSON

test('direct JSON with name + arguments object', () => {
  assert.deepEqual(extractTextToolCalls('{"name":"rag_search_documents","arguments":{"query":"cats"}}', tools), {
    calls: [{ name: 'rag_search_documents', args: { query: 'cats' } }],
    remainingText: '',
  });
});

test('name may come from name, tool or function.name; args from arguments, parameters or function.arguments', () => {
  const variants = [
    '{"name":"rag_search_documents","arguments":{"query":"q"}}',
    '{"name":"rag_search_documents","parameters":{"query":"q"}}',
    '{"tool":"rag_search_documents","arguments":{"query":"q"}}',
    '{"tool":"rag_search_documents","parameters":"{\\"query\\":\\"q\\"}"}',
    '{"function":{"name":"rag_search_documents","arguments":"{\\"query\\":\\"q\\"}"}}',
    '{"type":"function","function":{"name":"rag_search_documents","arguments":{"query":"q"}}}',
    '{"function":"rag_search_documents","arguments":{"query":"q"}}',
    '{"name":"rag_search_documents","query":"q"}',
    '{"id":"call_1","type":"function","name":"rag_search_documents","query":"q"}',
  ];
  for (const text of variants) {
    assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: { query: 'q' } }], text);
  }
});

test('arguments given as an empty string mean no arguments', () => {
  assert.deepEqual(extractTextToolCalls('{"name":"attachment_analyze_image","arguments":""}', tools).calls, [{ name: 'attachment_analyze_image', args: {} }]);
});

test('arguments that are not an object fall back to the remaining keys', () => {
  assert.deepEqual(extractTextToolCalls('{"name":"rag_search_documents","arguments":"not json","query":"q"}', tools).calls, [
    { name: 'rag_search_documents', args: { query: 'q' } },
  ]);
});

test('fenced ```json block, with text around it kept', () => {
  const text = 'I will search.\n```json\n{"name":"rag_search_documents","arguments":{"query":"x"}}\n```\nOne moment.';
  const result = extractTextToolCalls(text, tools);
  assert.deepEqual(result.calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
  assert.equal(result.remainingText, 'I will search.\n\nOne moment.');
});

test('plain ``` fences work too, and several fenced calls are all taken', () => {
  const text = '```\n{"name":"rag_search_documents","arguments":{"query":"a"}}\n```\n```json\n{"name":"rag_search_documents","arguments":{"query":"b"}}\n```';
  assert.deepEqual(
    extractTextToolCalls(text, tools).calls.map((c) => c.args['query']),
    ['a', 'b'],
  );
});

test('first {…} embedded in prose', () => {
  const text = 'Let me look: {"name": "rag_search_documents", "arguments": {"query": "brace } in \\"string\\""}} done';
  const result = extractTextToolCalls(text, tools);
  assert.deepEqual(result.calls, [{ name: 'rag_search_documents', args: { query: 'brace } in "string"' } }]);
  assert.equal(result.remainingText, 'Let me look:  done');
});

test('[{…}] arrays give several calls', () => {
  const text = 'Calls: [{"name":"rag_search_documents","arguments":{"query":"a"}}, {"name":"wiki_write_page","arguments":{"path":"p.md","content":"c"}}]';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [
    { name: 'rag_search_documents', args: { query: 'a' } },
    { name: 'wiki_write_page', args: { path: 'p.md', content: 'c' } },
  ]);
});

test('several JSON objects in a row are all taken', () => {
  const text = '{"name":"rag_search_documents","arguments":{"query":"a"}}\n{"name":"rag_search_documents","arguments":{"query":"b"}}';
  assert.deepEqual(
    extractTextToolCalls(text, tools).calls.map((c) => c.args['query']),
    ['a', 'b'],
  );
});

test('a {"tool_calls":[…]} envelope is unwrapped', () => {
  const text = '{"tool_calls":[{"type":"function","function":{"name":"rag_search_documents","arguments":"{\\"query\\":\\"x\\"}"}}]}';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
});

test('unknown tool names are never accepted', () => {
  for (const text of [
    '{"name":"delete_everything","arguments":{"query":"x"}}',
    '{"tool":"web_search","arguments":{"query":"x","limit":3}}',
    '{"function":{"name":"shell","arguments":"{\\"query\\":\\"rm\\",\\"limit\\":1}"}}',
    '<tool_call>{"name":"shell","arguments":{"cmd":"rm -rf /"}}</tool_call>',
    '<invoke name="shell"><parameter name="cmd">ls</parameter></invoke>',
    '<tool_call>shell <arg_key>cmd</arg_key><arg_value>ls</arg_value></tool_call>',
    '<function_call><name>shell</name><arguments>{"cmd":"ls"}</arguments></function_call>',
  ]) {
    const result = extractTextToolCalls(text, tools);
    assert.deepEqual(result.calls, [], text);
    assert.equal(result.remainingText, text);
  }
});

test('tool names must match exactly', () => {
  assert.deepEqual(extractTextToolCalls('{"name":"RAG_SEARCH_DOCUMENTS","arguments":{"query":"x"}}', tools).calls, []);
  assert.deepEqual(extractTextToolCalls('{"name":" rag_search_documents ","arguments":{"query":"x"}}', tools).calls, [
    { name: 'rag_search_documents', args: { query: 'x' } },
  ]);
});

// ---------------------------------------------------------------- §9.27: plain JSON answers stay answers

test('a plain JSON answer with a single tool is NOT a tool call', () => {
  for (const text of ['{"answer": 42}', '{"result":"ok","items":[1,2]}', '[{"title":"A"},{"title":"B"}]', '{}', '[]', '{"query":"x"}']) {
    const result = extractTextToolCalls(text, [rag]);
    assert.deepEqual(result.calls, [], text);
    assert.equal(result.remainingText, text);
  }
});

test('one matching key is not enough evidence', () => {
  assert.deepEqual(extractTextToolCalls('{"query":"cats"}', tools).calls, []);
  assert.deepEqual(extractTextToolCalls('Here: {"query":"cats"}', tools).calls, []);
});

test('keys matching exactly one tool with more than one key of evidence are a call', () => {
  assert.deepEqual(extractTextToolCalls('{"query":"cats","limit":3}', tools).calls, [{ name: 'rag_search_documents', args: { query: 'cats', limit: 3 } }]);
  assert.deepEqual(extractTextToolCalls('{"path":"notes.md","content":"hi"}', tools).calls, [
    { name: 'wiki_write_page', args: { path: 'notes.md', content: 'hi' } },
  ]);
});

test('keys matching two tools are ambiguous and not a call', () => {
  assert.deepEqual(extractTextToolCalls('{"query":"cats","limit":3}', [rag, room]).calls, []);
});

test('extra keys unknown to the tool, or missing required keys, prevent a key match', () => {
  assert.deepEqual(extractTextToolCalls('{"query":"cats","limit":3,"colour":"red"}', tools).calls, []);
  assert.deepEqual(extractTextToolCalls('{"limit":3,"min_score":0.5}', tools).calls, []);
});

test('tools without required keys are never chosen by keys', () => {
  assert.deepEqual(extractTextToolCalls('{"question":"what?","attachment_name":"a.png"}', tools).calls, []);
});

test('a "name" naming an unknown tool with call-shaped keys is refused, not re-routed', () => {
  assert.deepEqual(extractTextToolCalls('{"name":"web_search","arguments":{"query":"x","limit":2}}', tools).calls, []);
});

test('loose keys beside a known name must all be declared by the tool', () => {
  // A JSON list describing the tools is not a call.
  assert.deepEqual(extractTextToolCalls('[{"name":"rag_search_documents","description":"Searches documents"}]', tools).calls, []);
  assert.deepEqual(extractTextToolCalls('{"name":"rag_search_documents","query":"x","limit":2}', tools).calls, [
    { name: 'rag_search_documents', args: { query: 'x', limit: 2 } },
  ]);
  // With an explicit arguments object, unknown keys are left for the normaliser to drop.
  assert.deepEqual(extractTextToolCalls('{"name":"rag_search_documents","arguments":{"query":"x","extra":1}}', tools).calls, [
    { name: 'rag_search_documents', args: { query: 'x', extra: 1 } },
  ]);
});

test('{"arguments":{…}} without a name is matched by the inner keys', () => {
  assert.deepEqual(extractTextToolCalls('{"arguments":{"query":"x","limit":2}}', tools).calls, [
    { name: 'rag_search_documents', args: { query: 'x', limit: 2 } },
  ]);
});

// ---------------------------------------------------------------- XML

test('<tool_call> with inner JSON; remaining text kept', () => {
  const result = extractTextToolCalls('Searching now.\n<tool_call>\n{"name":"rag_search_documents","arguments":{"query":"x"}}\n</tool_call>', tools);
  assert.deepEqual(result, { calls: [{ name: 'rag_search_documents', args: { query: 'x' } }], remainingText: 'Searching now.' });
});

test('<function_call> and namespaced wrappers', () => {
  for (const tag of ['function_call', 'minimax:tool_call', 'TOOL_CALL', 'acme-ai:function_call']) {
    const text = `<${tag}>{"name":"rag_search_documents","arguments":{"query":"x"}}</${tag}> after`;
    const result = extractTextToolCalls(text, tools);
    assert.deepEqual(result.calls, [{ name: 'rag_search_documents', args: { query: 'x' } }], tag);
    assert.equal(result.remainingText, 'after', tag);
  }
});

test('a fenced JSON body inside the wrapper', () => {
  const text = '<tool_call>\n```json\n{"name":"rag_search_documents","arguments":{"query":"x"}}\n```\n</tool_call>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
});

test('inside a wrapper one matching key is enough evidence', () => {
  assert.deepEqual(extractTextToolCalls('<tool_call>{"query":"x"}</tool_call>', tools).calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
});

test('<name> + <arguments> / <parameters> sub-elements', () => {
  const a = '<tool_call><name>rag_search_documents</name><arguments>{"query":"x","limit":2}</arguments></tool_call>';
  const b = '<function_call>\n  <name> rag_search_documents </name>\n  <parameters>{"query":"y"}</parameters>\n</function_call>';
  const c = '<tool_call><name>attachment_analyze_image</name></tool_call>';
  assert.deepEqual(extractTextToolCalls(a, tools).calls, [{ name: 'rag_search_documents', args: { query: 'x', limit: 2 } }]);
  assert.deepEqual(extractTextToolCalls(b, tools).calls, [{ name: 'rag_search_documents', args: { query: 'y' } }]);
  assert.deepEqual(extractTextToolCalls(c, tools).calls, [{ name: 'attachment_analyze_image', args: {} }]);
});

test('<name> with unparsable arguments gives empty arguments', () => {
  const text = '<tool_call><name>rag_search_documents</name><arguments>{broken</arguments></tool_call>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: {} }]);
});

test('MiniMax <invoke name><parameter name> calls, typed by the schema', () => {
  const text =
    'Let me check.\n<minimax:tool_call>\n<invoke name="rag_search_documents">\n<parameter name="query">Öffnungszeiten &amp; Mensa</parameter>\n<parameter name="limit">4</parameter>\n<parameter name="min_score">0.5</parameter>\n</invoke>\n<invoke name=\'wiki_write_page\'><parameter name="path">a.md</parameter><parameter name="content">{"not":"parsed for a string"}</parameter></invoke>\n</minimax:tool_call>';
  const result = extractTextToolCalls(text, tools);
  assert.deepEqual(result.calls, [
    { name: 'rag_search_documents', args: { query: 'Öffnungszeiten & Mensa', limit: 4, min_score: 0.5 } },
    { name: 'wiki_write_page', args: { path: 'a.md', content: '{"not":"parsed for a string"}' } },
  ]);
  assert.equal(result.remainingText, 'Let me check.');
});

test('invoke values for boolean, array and object properties', () => {
  const text =
    '<tool_call><invoke name="set_flags"><parameter name="on">true</parameter><parameter name="tags">["a","b"]</parameter><parameter name="meta">{"k":1}</parameter><parameter name="label">7</parameter></invoke></tool_call>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'set_flags', args: { on: true, tags: ['a', 'b'], meta: { k: 1 }, label: '7' } }]);
});

test('invoke parameters that the schema does not know are JSON-decoded when they are JSON', () => {
  const text = '<invoke name="rag_search_documents"><parameter name="query">x</parameter><parameter name="extra">{"a":1}</parameter></invoke>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: { query: 'x', extra: { a: 1 } } }]);
});

test('a bare <invoke> block without a wrapper', () => {
  const result = extractTextToolCalls('Sure. <invoke name="rag_search_documents"><parameter name="query">x</parameter></invoke>', tools);
  assert.deepEqual(result.calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
  assert.equal(result.remainingText, 'Sure.');
});

test('unknown invokes inside a wrapper are skipped while known ones are kept', () => {
  const text =
    '<minimax:tool_call><invoke name="shell"><parameter name="cmd">ls</parameter></invoke><invoke name="rag_search_documents"><parameter name="query">x</parameter></invoke></minimax:tool_call>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
});

test('GLM arg_key / arg_value pairs', () => {
  const text =
    '<tool_call>rag_search_documents\n<arg_key>query</arg_key>\n<arg_value>Prüfungsordnung</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>3</arg_value>\n</tool_call>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'rag_search_documents', args: { query: 'Prüfungsordnung', limit: 3 } }]);
});

test('GLM values are JSON-decoded or typed by the schema', () => {
  const text =
    '<tool_call>set_flags<arg_key>on</arg_key><arg_value>false</arg_value><arg_key>tags</arg_key><arg_value>["x"]</arg_value><arg_key>label</arg_key><arg_value>true</arg_value></tool_call>';
  assert.deepEqual(extractTextToolCalls(text, tools).calls, [{ name: 'set_flags', args: { on: false, tags: ['x'], label: 'true' } }]);
});

test('a GLM call with no pairs has empty arguments', () => {
  assert.deepEqual(extractTextToolCalls('<tool_call>attachment_analyze_image</tool_call>', tools).calls, [{ name: 'attachment_analyze_image', args: {} }]);
});

test('several wrapper blocks give several calls and all markup is removed', () => {
  const text =
    'A <tool_call>{"name":"rag_search_documents","arguments":{"query":"1"}}</tool_call> B <function_call>{"name":"rag_search_documents","arguments":{"query":"2"}}</function_call> C';
  const result = extractTextToolCalls(text, tools);
  assert.deepEqual(
    result.calls.map((c) => c.args['query']),
    ['1', '2'],
  );
  assert.equal(result.remainingText, 'A  B  C');
});

test('an unclosed wrapper at the end still yields its call', () => {
  const result = extractTextToolCalls('Ok <tool_call>{"name":"rag_search_documents","arguments":{"query":"x"}}', tools);
  assert.deepEqual(result.calls, [{ name: 'rag_search_documents', args: { query: 'x' } }]);
  assert.equal(result.remainingText, 'Ok');
});

test('XML takes precedence over the JSON inside it', () => {
  const result = extractTextToolCalls('<tool_call>{"name":"rag_search_documents","arguments":{"query":"x"}}</tool_call>', tools);
  assert.equal(result.calls.length, 1);
  assert.equal(result.remainingText, '');
});

test('tool calls inside think blocks are ignored', () => {
  const text = '<think>maybe {"name":"rag_search_documents","arguments":{"query":"no"}}</think>The answer is 4.';
  assert.deepEqual(extractTextToolCalls(text, tools), { calls: [], remainingText: text });
  const after = extractTextToolCalls('<think>plan</think>{"name":"rag_search_documents","arguments":{"query":"yes"}}', tools);
  assert.deepEqual(after.calls, [{ name: 'rag_search_documents', args: { query: 'yes' } }]);
});

// ---------------------------------------------------------------- robustness

test('malformed inputs never throw and give no calls', () => {
  const inputs = [
    '',
    '   ',
    '{',
    '[',
    '[{',
    '{"name":',
    '{"name":"rag_search_documents","arguments":{"query":"x"}',
    '<tool_call>',
    '</tool_call>',
    '<tool_call></tool_call>',
    '<tool_call>{</tool_call>',
    '<invoke name="',
    '<invoke name="rag_search_documents"',
    '<tool_call><name>rag_search_documents',
    '```json\n{',
    '{{{{{{{{',
    ']]]]}}}}',
    '"just a string"',
    'null',
    '42',
    'true',
    '[1, 2, 3]',
    '{"name": null}',
    '{"name": 42, "arguments": []}',
    '{"function": {"name": {"x":1}}}',
    '<arg_key>q</arg_key>',
    '{"__proto__": {"name": "rag_search_documents"}}',
  ];
  for (const text of inputs) {
    assert.doesNotThrow(() => extractTextToolCalls(text, tools), text);
  }
  assert.deepEqual(extractTextToolCalls('{"name":"rag_search_documents","arguments":{"query":"x"}', tools).calls, []);
  assert.deepEqual(extractTextToolCalls(undefined as unknown as string, tools), { calls: [], remainingText: '' });
  assert.deepEqual(extractTextToolCalls('{"name":"x"}', null as unknown as TextToolSpec[]), { calls: [], remainingText: '{"name":"x"}' });
  assert.deepEqual(extractTextToolCalls('{"name":"rag_search_documents"}', [null, { name: 5 }, rag] as unknown as TextToolSpec[]).calls, [
    { name: 'rag_search_documents', args: {} },
  ]);
});

test('with no tools nothing is ever a call', () => {
  const text = '{"name":"rag_search_documents","arguments":{"query":"x"}}';
  assert.deepEqual(extractTextToolCalls(text, []), { calls: [], remainingText: text });
});

test('a "__proto__" argument stays an ordinary key', () => {
  const text = '{"name":"rag_search_documents","arguments":{"query":"x","__proto__":{"polluted":true}}}';
  const [call] = extractTextToolCalls(text, tools).calls;
  assert.ok(call);
  assert.equal(Object.hasOwn(call.args, '__proto__'), true);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
});

test('long adversarial text is handled', () => {
  const text = '{'.repeat(20000) + ' [ '.repeat(20000) + '<tool_call>'.repeat(2000);
  assert.doesNotThrow(() => extractTextToolCalls(text, tools));
});

test('helpers: balancedJsonEnd, decodeXmlEntities, stripThinkBlocks, stripToolCallMarkup', () => {
  assert.equal(balancedJsonEnd('{"a":"}"} tail', 0), 9);
  assert.equal(balancedJsonEnd('[{"a":[1]}]x', 0), 11);
  assert.equal(balancedJsonEnd('{"a":1', 0), -1);
  assert.equal(balancedJsonEnd('{]', 0), -1);
  assert.equal(balancedJsonEnd('abc', 0), -1);
  assert.equal(decodeXmlEntities('&lt;a&gt; &amp;amp; &quot;&apos; &#65;&#x42; &#xD800; &bogus;'), '<a> &amp; "\' AB &#xD800; &bogus;');
  assert.equal(stripThinkBlocks('a<think>x</think>b<THINK>y</Think>c<think>open'), 'abc');
  assert.equal(stripThinkBlocks('a</think>b<thinking>kept</thinking>'), 'ab<thinking>kept</thinking>');
  assert.equal(stripToolCallMarkup('a<tool_call>x</tool_call>b</function_call>c<invoke name="t">y</invoke>d<minimax:tool_call>rest'), 'abcd');
});

// ---------------------------------------------------------------- streaming filter

function run(deltas: string[], options?: ConstructorParameters<typeof ToolMarkupStreamFilter>[0]): { streamed: string; final: string; heldAtEnd: boolean } {
  const filter = new ToolMarkupStreamFilter(options);
  let streamed = '';
  for (const delta of deltas) streamed += filter.push(delta);
  const heldAtEnd = filter.holding;
  return { streamed, final: filter.finish(), heldAtEnd };
}

function everySplit(text: string): string[][] {
  const splits: string[][] = [];
  for (let i = 1; i < text.length; i++) splits.push([text.slice(0, i), text.slice(i)]);
  splits.push([...text]);
  return splits;
}

test('plain text streams through unchanged', () => {
  const { streamed, final } = run(['Hello ', 'world. ', 'a < b and c > d, x<y']);
  assert.equal(streamed + final, 'Hello world. a < b and c > d, x<y');
});

test('XML tool-call blocks are removed however the stream is split', () => {
  const text =
    'Before <tool_call>{"name":"x","arguments":{}}</tool_call> middle <minimax:tool_call><invoke name="x"></invoke></minimax:tool_call> after <function_call>f</function_call>. <invoke name="y"><parameter name="q">1</parameter></invoke>end';
  for (const deltas of everySplit(text)) {
    const { streamed, final } = run(deltas);
    assert.equal(streamed + final, 'Before  middle  after . end', JSON.stringify(deltas));
  }
});

test('a partial opening tag is held back, not emitted', () => {
  const filter = new ToolMarkupStreamFilter();
  assert.equal(filter.push('Hi <tool'), 'Hi ');
  assert.equal(filter.push('_ca'), '');
  assert.equal(filter.push('ll>secret'), '');
  assert.equal(filter.push('</tool_'), '');
  assert.equal(filter.push('call> bye'), ' bye');
  assert.equal(filter.finish(), '');
});

test('a held "<" that turns out not to be a tool tag is released', () => {
  const filter = new ToolMarkupStreamFilter();
  assert.equal(filter.push('x <'), 'x ');
  assert.equal(filter.push('b>bold'), '<b>bold');
  assert.equal(filter.push(' and <'), ' and ');
  assert.equal(filter.finish(), '<');
});

test('an unclosed block swallows the rest of the stream', () => {
  const { streamed, final } = run(['Answer. ', '<tool_call>{"name":"x"', ',"arguments":{}}']);
  assert.equal(streamed + final, 'Answer. ');
});

test('stray closing tags are removed', () => {
  const { streamed, final } = run(['a</tool_call>b</minimax:tool_', 'call>c</invoke >d']);
  assert.equal(streamed + final, 'abcd');
});

test('tags similar to tool tags are left alone', () => {
  const { streamed, final } = run(['<tool_calls>x</tool_calls> <toolcall> <function>']);
  assert.equal(streamed + final, '<tool_calls>x</tool_calls> <toolcall> <function>');
});

test('a stream starting with { or [ is held until finish, and finish returns it', () => {
  const text = '\n {"name":"rag_search_documents","arguments":{"query":"x"}}';
  for (const deltas of everySplit(text)) {
    const { streamed, final, heldAtEnd } = run(deltas, { tools });
    assert.equal(streamed, '', JSON.stringify(deltas));
    assert.equal(heldAtEnd, true);
    assert.equal(final, text);
  }
  const noTools = run(['[{"name":"x"}]']);
  assert.equal(noTools.streamed, '');
  assert.equal(noTools.heldAtEnd, true);
  assert.equal(noTools.final, '[{"name":"x"}]');
});

test('leading whitespace alone is not emitted early', () => {
  const filter = new ToolMarkupStreamFilter();
  assert.equal(filter.push('  \n'), '');
  assert.equal(filter.push('Hi'), '  \nHi');
});

test('a stream released as not JSON after its second token', () => {
  const brace = new ToolMarkupStreamFilter();
  assert.equal(brace.push('{'), '');
  assert.equal(brace.holding, true);
  assert.equal(brace.push(' name} is a placeholder'), '{ name} is a placeholder');
  assert.equal(brace.holding, false);
  const bracket = new ToolMarkupStreamFilter();
  assert.equal(bracket.push('['), '');
  assert.equal(bracket.push('1] See the footnote.'), '[1] See the footnote.');
  const link = run(['[Docs](https://example.org) are here']);
  assert.equal(link.streamed, '[Docs](https://example.org) are here');
});

test('with tools, a complete leading JSON value that is no call is released', () => {
  const filter = new ToolMarkupStreamFilter({ tools });
  assert.equal(filter.push('{"answer": '), '');
  assert.equal(filter.push('42}'), '{"answer": 42}');
  assert.equal(filter.push(' and more'), ' and more');
  assert.equal(filter.finish(), '');
});

test('with tools, a leading JSON call stays held even with text after it', () => {
  const { streamed, final, heldAtEnd } = run(['{"name":"rag_search_documents",', '"arguments":{"query":"x"}}', ' trailing'], { tools });
  assert.equal(streamed, '');
  assert.equal(heldAtEnd, true);
  assert.equal(final, '{"name":"rag_search_documents","arguments":{"query":"x"}} trailing');
});

test('with tools, a leading call to an unknown tool stays held for the caller', () => {
  const { streamed, final, heldAtEnd } = run(['{"name":"web_search","arguments":{"q":"x"}}', ' more'], { tools });
  assert.equal(streamed, '');
  assert.equal(heldAtEnd, true);
  assert.equal(final, '{"name":"web_search","arguments":{"q":"x"}} more');
});

test('a leading value that is not valid JSON is released', () => {
  const { streamed } = run(['{"a": tru', 'e-ish} text']);
  assert.equal(streamed, '{"a": true-ish} text');
});

test('released text still has its XML markup removed', () => {
  const { streamed, final } = run(['[', '1] x <tool_call>hidden</tool_call> y'], { tools });
  assert.equal(streamed + final, '[1] x  y');
});

test('a JSON-looking value later in a prose stream is not held', () => {
  const { streamed } = run(['Result: ', '{"answer": 1}']);
  assert.equal(streamed, 'Result: {"answer": 1}');
});

test('push after finish and odd deltas are ignored', () => {
  const filter = new ToolMarkupStreamFilter();
  assert.equal(filter.push(''), '');
  assert.equal(filter.push(undefined as unknown as string), '');
  assert.equal(filter.push(42 as unknown as string), '');
  assert.equal(filter.push('ok'), 'ok');
  assert.equal(filter.finish(), '');
  assert.equal(filter.push('late'), '');
  assert.equal(filter.finish(), '');
});

test('streaming agrees with the batch sanitiser on markup removal', () => {
  const text = 'Intro <tool_call>x</tool_call>mid<function_call>y</function_call>tail';
  for (const deltas of everySplit(text)) {
    const { streamed, final } = run(deltas);
    assert.equal(streamed + final, stripToolCallMarkup(text));
  }
});
