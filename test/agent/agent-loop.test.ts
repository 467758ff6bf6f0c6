import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { AgentLoop, FALLBACK_FOUND_PREFIX, progressLine, type AgentRunInput, type AgentRunResult } from '../../lib/agent/agent-loop.ts';
import { TurnTaint } from '../../lib/tools/confirmation-gate.ts';
import { ChatClient, LlmError } from '../../lib/llm/chat-client.ts';
import { LlmSettingsService } from '../../lib/llm/llm-settings.ts';
import { ModelCatalog } from '../../lib/llm/model-catalog.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { RateGate, RateLimitedError } from '../../lib/ratelimit/rate-gate.ts';
import { RateLimiter, type RateLimitSettings } from '../../lib/ratelimit/rate-limiter.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import type { BotSender } from '../../lib/replies/bot-sender.ts';
import { ReplyLog } from '../../lib/replies/reply-log.ts';
import { ReplySanitizer } from '../../lib/replies/reply-sanitizer.ts';
import { ReplyStream } from '../../lib/replies/reply-stream.ts';
import { THINKING_PLACEHOLDER } from '../../lib/llm/think-filter.ts';
import { readPolicy, searchPolicy, transcribePolicy, writePolicy, destructivePolicy } from '../../lib/tools/tool-policy.ts';
import {
  createInvocationContext,
  textResult,
  type InvocationAttachment,
  type JsonSchema,
  type ToolDefinition,
  type ToolProvider,
} from '../../lib/tools/tool-provider.ts';
import { ToolRegistry } from '../../lib/tools/tool-registry.ts';
import { TraceStore } from '../../lib/traces/trace-store.ts';
import { TurnTrace } from '../../lib/traces/turn-trace.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeOpenAI, type FakeScenario } from '../fakes/openai/fake-openai.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';

const KEY = 'sk-agent-loop-test-key-0123456789';
const SYSTEM = 'SYSTEM-PROMPT-MARKER You are a careful helper.';
const silent = createLogger({ level: 'silent' });

interface Executed {
  name: string;
  args: Record<string, unknown>;
}

const object = (properties: Record<string, unknown>, required: string[] = []): JsonSchema =>
  ({ type: 'object', properties, ...(required.length ? { required } : {}) }) as JsonSchema;

const TOOLS: ToolDefinition[] = [
  { name: 'search_docs', description: 'Search the documents', schema: object({ query: { type: 'string' } }, ['query']), policy: searchPolicy() },
  { name: 'read_note', description: 'Read one note', schema: object({ id: { type: 'integer' } }, ['id']), policy: readPolicy() },
  { name: 'write_note', description: 'Write a note', schema: object({ text: { type: 'string' } }, ['text']), policy: writePolicy() },
  { name: 'delete_notes', description: 'Delete all notes', schema: object({}), policy: destructivePolicy() },
  {
    name: 'attachment_transcribe_audio',
    description: 'Transcribe the audio attachment',
    schema: object({ attachment_name: { type: 'string' } }),
    policy: transcribePolicy(),
  },
  { name: 'big_output', description: 'Returns a lot', schema: object({}), policy: readPolicy() },
  { name: 'slow_a', description: 'Slow tool A', schema: object({}), policy: readPolicy() },
  { name: 'slow_b', description: 'Slow tool B', schema: object({}), policy: readPolicy() },
];

function provider(executed: Executed[], order: string[]): ToolProvider {
  return {
    id: 'test-tools',
    getTools: () => TOOLS,
    providesTool: (name) => TOOLS.some((t) => t.name === name),
    getToolMetadata: () => ({}),
    async executeTool(name, args) {
      executed.push({ name, args });
      switch (name) {
        case 'search_docs':
          return textResult(`TOOL-OUTPUT-MARKER results for ${String(args['query'])}`);
        case 'read_note':
          return textResult(`note ${String(args['id'])}: buy milk`);
        case 'write_note':
          return textResult('written');
        case 'delete_notes':
          return textResult('deleted');
        case 'attachment_transcribe_audio':
          return textResult('Transcript: please book a room for Friday');
        case 'big_output':
          return textResult('x'.repeat(10_000));
        default: {
          order.push(`start ${name}`);
          await new Promise((r) => setTimeout(r, 5));
          order.push(`end ${name}`);
          return textResult(`${name} done`);
        }
      }
    },
  };
}

class RecordingSender {
  posts: Array<{ message: string; replyTo: number | null }> = [];
  async send(_route: string, _token: string, body: { message: string; replyTo: number | null }): Promise<void> {
    this.posts.push({ message: body.message, replyTo: body.replyTo });
  }
}

interface Run {
  result: AgentRunResult;
  posts: string[];
  executed: Executed[];
  order: string[];
  bodies: Array<Record<string, unknown>>;
}

describe('AgentLoop against the fake model provider', () => {
  let tdb: TestDatabase;
  let llm: FakeOpenAI;
  let settings: LlmSettingsService;
  let chat: ChatClient;
  let registry: ToolRegistry;
  let executed: Executed[];
  let order: string[];
  let inbox = 0;

  before(async () => {
    tdb = await createTestDatabase('sqlite');
    llm = await FakeOpenAI.start({ models: ['fake-model', 'fallback-model', 'gpt-5-mini'], apiKey: KEY });
    settings = new LlmSettingsService(new SettingsStore(tdb.db), new Vault(tdb.db, new Uint8Array(32).fill(7)));
    chat = new ChatClient({ settings, catalog: new ModelCatalog({ settings }), logger: silent });
    executed = [];
    order = [];
    registry = new ToolRegistry({ logger: silent });
    registry.register(provider(executed, order), 'first-party');
  });
  after(async () => {
    await llm.close();
    await tdb.drop();
  });
  beforeEach(async () => {
    llm.reset();
    executed.length = 0;
    order.length = 0;
    await settings.update({ primaryEndpoint: llm.url, primaryKey: KEY, defaultModel: 'primary:fake-model', fallbackModel: null, maxTokens: 800 });
  });

  async function run(options: {
    scenarios: FakeScenario[];
    tools?: string[];
    taint?: TurnTaint;
    userText?: string;
    attachments?: InvocationAttachment[];
    attachmentOnly?: boolean;
    model?: string;
    input?: Partial<AgentRunInput>;
  }): Promise<Run> {
    llm.enqueue(...options.scenarios);
    const ctx = createInvocationContext({
      user: issueFromConfirmedTalkAuthor('alice'),
      actorKind: 'user',
      botId: 'bot-1',
      roomToken: 'room1',
      messageId: '42',
      attachments: options.attachments ?? [],
    });
    const loadout = await registry.loadout(
      ctx,
      (options.tools ?? ['search_docs', 'read_note', 'write_note']).map((name) => ({ name, config: {} })),
    );
    const sender = new RecordingSender();
    const sink = new ReplyStream({
      target: { inboxId: ++inbox, route: 'talk_bot', roomToken: 'room1', replyTo: 42, inThread: false },
      sender: sender as unknown as BotSender,
      log: new ReplyLog(tdb.db),
      sanitizer: new ReplySanitizer({ nextcloudOrigin: 'https://cloud.example.com', allowedHosts: [], userText: options.userText ?? 'hi' }),
      salt: 'salt',
    });
    const loop = new AgentLoop({ chat, logger: silent });
    const result = await loop.run({
      model: options.model ?? 'primary:fake-model',
      temperature: 0.2,
      maxTokens: 800,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `Alice (alice): ${options.userText ?? 'hi'}` },
      ],
      loadout,
      ctx,
      sink,
      userText: options.userText ?? 'hi',
      attachmentOnly: options.attachmentOnly ?? false,
      taint: options.taint ?? new TurnTaint(),
      ...options.input,
    });
    const bodies = llm.chatRequests().map((r) => r.body ?? {});
    return { result, posts: sender.posts.map((p) => p.message), executed: [...executed], order: [...order], bodies };
  }

  const toolMessages = (body: Record<string, unknown>) =>
    (body.messages as Array<{ role: string; content: string; tool_call_id?: string; name?: string }>).filter((m) => m.role === 'tool');

  it('runs several steps: streams tool calls, feeds results back, and streams the final answer', async () => {
    const r = await run({
      scenarios: [
        { toolCalls: [{ name: 'search_docs', arguments: ['{"que', 'ry": "milk"}'] }] },
        { toolCalls: [{ name: 'read_note', arguments: '{"id": "7"}' }] },
        { text: ['You need ', 'to buy milk.'] },
      ],
    });
    assert.deepEqual(r.executed, [
      { name: 'search_docs', args: { query: 'milk' } },
      { name: 'read_note', args: { id: 7 } },
    ]);
    assert.deepEqual(r.posts, ['🔧 Using tool: search_docs…', '🔧 Using tool: read_note…', 'You need to buy milk.']);
    assert.equal(r.result.iterations, 3);
    assert.equal(r.result.toolCalls, 2);
    assert.equal(r.result.stopReason, 'answer');
    assert.equal(r.result.text, 'You need to buy milk.');
    // Every call streams with the tools; the third sees both results in order.
    for (const body of r.bodies) {
      assert.equal(body.stream, true);
      assert.deepEqual(
        (body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
        ['search_docs', 'read_note', 'write_note'],
      );
      assert.equal(body.tool_choice, undefined);
    }
    const results = toolMessages(r.bodies[2]!);
    assert.deepEqual(
      results.map((m) => m.content),
      ['TOOL-OUTPUT-MARKER results for milk', 'note 7: buy milk'],
    );
    const assistant = (
      r.bodies[2]!.messages as Array<{ role: string; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> }>
    ).filter((m) => m.role === 'assistant');
    assert.equal(assistant[0]?.tool_calls?.[0]?.function.arguments, '{"query": "milk"}');
    assert.equal(results[0]?.tool_call_id, assistant[0]?.tool_calls?.[0]?.id);
    // The instructions come with the tools; the bot's own prompt stays first.
    const system = (r.bodies[0]!.messages as Array<{ role: string; content: string }>)[0]!;
    assert.ok(system.content.startsWith(SYSTEM));
    assert.match(system.content, /## Tool Calling Instructions/);
  });

  it('runs parallel tool calls of one response together and answers them in order', async () => {
    const r = await run({
      tools: ['slow_a', 'slow_b'],
      scenarios: [
        {
          toolCalls: [
            { name: 'slow_b', arguments: '{}' },
            { name: 'slow_a', arguments: '{}' },
          ],
        },
        { text: ['Both done.'] },
      ],
    });
    assert.deepEqual(r.order.slice(0, 2).sort(), ['start slow_a', 'start slow_b'], 'both started before either ended');
    assert.deepEqual(r.posts, ['🔧 Using tools: slow_b, slow_a…', 'Both done.']);
    const results = toolMessages(r.bodies[1]!);
    assert.deepEqual(
      results.map((m) => [m.name, m.content]),
      [
        ['slow_b', 'slow_b done'],
        ['slow_a', 'slow_a done'],
      ],
    );
  });

  it('stops a loop that repeats the same read batch at 8 and synthesises the answer without tools', async () => {
    llm.responder = (req) =>
      req.body?.stream === true ? { toolCalls: [{ name: 'read_note', arguments: '{"id": 3}' }] } : { text: ['Note 3 says to buy milk.'] };
    try {
      const r = await run({ scenarios: [] });
      assert.equal(r.result.stopReason, 'repeat');
      assert.equal(r.executed.length, 8);
      assert.equal(r.result.synthesized, true);
      const streamed = r.bodies.filter((b) => b.stream === true);
      const final = r.bodies.filter((b) => b.stream !== true);
      assert.equal(streamed.length, 8);
      assert.equal(final.length, 1);
      assert.equal(final[0]!.tools, undefined, 'the synthesis offers no tools');
      const finalSystem = (final[0]!.messages as Array<{ role: string; content: string }>)[0]!.content;
      assert.match(finalSystem, /## IMPORTANT: Final Response Required/);
      assert.doesNotMatch(finalSystem, /Tool Calling Instructions/);
      assert.equal(r.posts.at(-1), 'Note 3 says to buy milk.');
      assert.equal(r.posts.filter((p) => p.startsWith('🔧')).length, 8);
    } finally {
      llm.responder = () => ({ text: ['default'] });
    }
  });

  it('trips the write threshold of 4 and the search threshold of 10', async () => {
    llm.responder = (req) =>
      req.body?.stream === true ? { toolCalls: [{ name: 'search_docs', arguments: '{"query": "same"}' }] } : { text: ['Searched enough.'] };
    try {
      const search = await run({ scenarios: [] });
      assert.equal(search.result.stopReason, 'repeat');
      assert.equal(search.executed.length, 10);
    } finally {
      llm.responder = () => ({ text: ['default'] });
    }
    executed.length = 0;
    llm.reset();
    llm.responder = (req) => (req.body?.stream === true ? { toolCalls: [{ name: 'write_note', arguments: '{"text": "again"}' }] } : { text: ['Wrote it.'] });
    try {
      const write = await run({ scenarios: [] });
      assert.equal(write.result.stopReason, 'repeat');
      assert.equal(write.result.toolCalls, 4);
    } finally {
      llm.responder = () => ({ text: ['default'] });
    }
  });

  it('stops at a lowered iteration cap with a synthesis call, even when every batch differs', async () => {
    let n = 0;
    llm.responder = (req) =>
      req.body?.stream === true
        ? { toolCalls: [{ name: 'search_docs', arguments: JSON.stringify({ query: `q${++n}` }) }] }
        : { text: ['Here is what I found.'] };
    try {
      const r = await run({ scenarios: [], input: { maxIterations: 3 } });
      assert.equal(r.result.stopReason, 'cap');
      assert.equal(r.executed.length, 3);
      assert.equal(r.result.synthesized, true);
      assert.equal(r.result.text, 'Here is what I found.');
      const final = r.bodies.at(-1)!;
      assert.notEqual(final.stream, true);
      const lastUser = (final.messages as Array<{ role: string; content: string }>).at(-1)!;
      assert.match(lastUser.content, /results for q3/);
    } finally {
      llm.responder = () => ({ text: ['default'] });
    }
  });

  it('never raises the cap above 50', async () => {
    let n = 0;
    llm.responder = (req) =>
      req.body?.stream === true ? { toolCalls: [{ name: 'search_docs', arguments: JSON.stringify({ query: `q${++n}` }) }] } : { text: ['Capped.'] };
    try {
      const r = await run({ scenarios: [], input: { maxIterations: 500 } });
      assert.equal(r.result.stopReason, 'cap');
      assert.equal(r.executed.length, 50);
    } finally {
      llm.responder = () => ({ text: ['default'] });
    }
  });

  it('parses a JSON tool call written as text and never shows it', async () => {
    const r = await run({ scenarios: [{ text: ['{"name": "search_docs", ', '"arguments": {"query": "json"}}'] }, { text: ['Found it via JSON.'] }] });
    assert.deepEqual(r.executed, [{ name: 'search_docs', args: { query: 'json' } }]);
    assert.deepEqual(r.posts, ['🔧 Using tool: search_docs…', 'Found it via JSON.']);
  });

  it('parses XML tool calls (wrapper and invoke forms) and strips the markup from the stream', async () => {
    const r = await run({
      scenarios: [
        { text: ['Let me check. <tool_', 'call>{"name":"search_docs","arguments":{"query":"xml"}}</tool_call>'] },
        { text: ['<invoke name="read_note"><parameter name="id">5</parameter></invoke>'] },
        { text: ['Done with XML.'] },
      ],
    });
    assert.deepEqual(r.executed, [
      { name: 'search_docs', args: { query: 'xml' } },
      { name: 'read_note', args: { id: 5 } },
    ]);
    assert.deepEqual(r.posts, ['Let me check.', '🔧 Using tool: search_docs…', '🔧 Using tool: read_note…', 'Done with XML.']);
    assert.ok(r.posts.every((p) => !/<\/?(tool_call|invoke|parameter)/.test(p) && !p.includes('"arguments"')));
  });

  it('catches a JSON tool call written after a think block, posting only the thinking placeholder', async () => {
    const r = await run({
      scenarios: [
        { think: 'The user wants a search.', text: ['{"name":"search_docs",', '"arguments":{"query":"after thinking"}}'] },
        { think: 'Now answer.', text: ['Found after thinking.'] },
      ],
    });
    assert.deepEqual(r.executed, [{ name: 'search_docs', args: { query: 'after thinking' } }]);
    assert.deepEqual(r.posts, [THINKING_PLACEHOLDER, '🔧 Using tool: search_docs…', 'Found after thinking.']);
  });

  it('shows a JSON answer that is not a tool call', async () => {
    const r = await run({ scenarios: [{ text: ['{"answer": 42, "unit": "apples"}'] }] });
    assert.equal(r.executed.length, 0);
    assert.deepEqual(r.posts, ['{"answer": 42, "unit": "apples"}']);
  });

  it('forces transcription for a voice-only message and calls the tool itself when the model ignores that', async () => {
    const r = await run({
      tools: ['attachment_transcribe_audio', 'write_note'],
      attachments: [{ fileId: '99', name: 'voice.ogg', mimeType: 'audio/ogg', kind: 'audio' }],
      attachmentOnly: true,
      userText: 'voice.ogg',
      scenarios: [{ text: ['I cannot listen to audio.'] }, { text: ['You asked me to book a room for Friday.'] }],
    });
    assert.deepEqual(r.bodies[0]!.tool_choice, { type: 'function', function: { name: 'attachment_transcribe_audio' } });
    assert.equal(r.bodies[1]!.tool_choice, undefined, 'forced only until the first tool call');
    assert.equal(r.result.ignoredToolChoice, true);
    assert.deepEqual(r.executed, [{ name: 'attachment_transcribe_audio', args: { attachment_name: 'voice.ogg' } }]);
    assert.deepEqual(r.posts, ['🔧 Using tool: attachment_transcribe_audio…', 'You asked me to book a room for Friday.'], 'the ignored answer is not shown');
  });

  it('forces a read-only search tool for a search request in any configured language, never a write tool', async () => {
    const r = await run({
      tools: ['write_note', 'search_docs'],
      userText: 'Bitte suche im Internet nach dem Wetter',
      input: { forcedSearchPhrases: ['suche im internet', 'search the web'] },
      scenarios: [{ toolCalls: [{ name: 'search_docs', arguments: '{"query":"Wetter"}' }] }, { text: ['Sonnig.'] }],
    });
    assert.deepEqual(r.bodies[0]!.tool_choice, { type: 'function', function: { name: 'search_docs' } });
    assert.equal(r.result.toolChoice, 'search');
    assert.equal(r.result.ignoredToolChoice, false);

    llm.reset();
    executed.length = 0;
    const none = await run({
      tools: ['write_note'],
      userText: 'search the web for a recipe',
      input: { forcedSearchPhrases: ['search the web'] },
      scenarios: [{ text: ['No search tool here.'] }],
    });
    assert.equal(none.bodies[0]!.tool_choice, undefined, 'a write tool is never forced');
    assert.equal(none.result.toolChoice, null);
  });

  it('falls back to the fallback model before the first chunk reached Talk', async () => {
    await settings.update({ fallbackModel: 'primary:fallback-model' });
    const r = await run({ scenarios: [{ status: 503 }, { text: ['Answer from the fallback.'] }] });
    assert.deepEqual(
      r.bodies.map((b) => b.model),
      ['fake-model', 'fallback-model'],
    );
    assert.deepEqual(r.posts, ['Answer from the fallback.']);
  });

  it('falls back in a later iteration whose own output has not reached Talk yet', async () => {
    await settings.update({ fallbackModel: 'primary:fallback-model' });
    const r = await run({
      scenarios: [{ toolCalls: [{ name: 'search_docs', arguments: '{"query":"a"}' }] }, { status: 502 }, { text: ['Second try worked.'] }],
    });
    assert.deepEqual(
      r.bodies.map((b) => b.model),
      ['fake-model', 'fake-model', 'fallback-model'],
    );
    assert.deepEqual(r.posts, ['🔧 Using tool: search_docs…', 'Second try worked.']);
  });

  it('does not switch models once a chunk of the answer reached Talk', async () => {
    await settings.update({ fallbackModel: 'primary:fallback-model' });
    await assert.rejects(
      run({ scenarios: [{ text: ['First paragraph.\n\n', 'Second par'], failAfterChunks: 2 }, { text: ['never used'] }] }),
      (err: unknown) => err instanceof LlmError,
    );
    const models = llm.chatRequests().map((req) => req.body?.model);
    assert.deepEqual(models, ['fake-model'], 'no retry on the fallback model');
  });

  it('sends GPT-5 parameters on every call of the loop', async () => {
    const r = await run({
      model: 'primary:gpt-5-mini',
      scenarios: [{ toolCalls: [{ name: 'search_docs', arguments: '{"query":"g"}' }] }, { text: ['GPT-5 answer.'] }],
    });
    for (const body of r.bodies) {
      assert.equal(body.model, 'gpt-5-mini');
      assert.equal(body.max_completion_tokens, 800);
      assert.equal(body.max_tokens, undefined);
      assert.equal(body.temperature, undefined);
    }
  });

  it('S6: a write tool after a tool result is not executed; the model is told it needs confirmation', async () => {
    const r = await run({
      scenarios: [
        { toolCalls: [{ name: 'search_docs', arguments: '{"query":"instructions"}' }] },
        { toolCalls: [{ name: 'write_note', arguments: '{"text":"share everything with mallory"}' }] },
        { text: ['I need your confirmation before writing that note.'] },
      ],
    });
    assert.deepEqual(
      r.executed.map((e) => e.name),
      ['search_docs'],
      'the write never ran',
    );
    assert.equal(r.result.heldForConfirmation, 1);
    const observation = toolMessages(r.bodies[2]!).at(-1)!;
    assert.equal(observation.name, 'write_note');
    assert.match(observation.content, /^ACTION NOT RUN: write_note/);
    assert.match(observation.content, /confirmation/);
  });

  it('S6: runs a write tool in an untainted turn, and holds writes and deletes in a turn tainted by memory', async () => {
    const clean = await run({ scenarios: [{ toolCalls: [{ name: 'write_note', arguments: '{"text":"hello"}' }] }, { text: ['Saved.'] }] });
    assert.deepEqual(clean.executed, [{ name: 'write_note', args: { text: 'hello' } }]);

    llm.reset();
    executed.length = 0;
    const taint = new TurnTaint();
    taint.add('other-participants');
    const tainted = await run({
      tools: ['write_note', 'delete_notes', 'read_note'],
      taint,
      scenarios: [
        {
          toolCalls: [
            { name: 'write_note', arguments: '{"text":"x"}' },
            { name: 'delete_notes', arguments: '{}' },
            { name: 'read_note', arguments: '{"id":1}' },
          ],
        },
        { text: ['Reading is fine; the rest needs you.'] },
      ],
    });
    assert.deepEqual(
      tainted.executed.map((e) => e.name),
      ['read_note'],
    );
    assert.equal(tainted.result.heldForConfirmation, 2);
  });

  it('offers only read-only tools when writes are off (always-mode, S12)', async () => {
    const r = await run({ input: { allowWrites: false }, scenarios: [{ toolCalls: [{ name: 'write_note', arguments: '{"text":"x"}' }] }, { text: ['ok'] }] });
    assert.deepEqual(
      (r.bodies[0]!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
      ['search_docs', 'read_note'],
    );
    assert.equal(r.executed.length, 0);
    assert.match(toolMessages(r.bodies[1]!)[0]!.content, /Tool not available/);
  });

  it('never runs for a guest (S4)', async () => {
    const ctx = createInvocationContext({ user: null, actorKind: 'guest', botId: 'bot-1', roomToken: 'room1' });
    const loadout = await registry.loadout(ctx, [{ name: 'search_docs', config: {} }]);
    const loop = new AgentLoop({ chat, logger: silent });
    await assert.rejects(
      loop.run({ model: 'primary:fake-model', messages: [], loadout, ctx, sink: null as never, userText: '', taint: new TurnTaint() }),
      /verified users/,
    );
    assert.equal(llm.chatRequests().length, 0);
    assert.equal(executed.length, 0);
  });

  it('truncates tool output at 4000 characters and refuses calls missing required arguments', async () => {
    const r = await run({
      tools: ['big_output', 'read_note'],
      scenarios: [
        {
          toolCalls: [
            { name: 'big_output', arguments: '{}' },
            { name: 'read_note', arguments: '{}' },
          ],
        },
        { text: ['ok'] },
      ],
    });
    const [big, bad] = toolMessages(r.bodies[1]!);
    assert.equal(big!.content, `${'x'.repeat(4000)}...`);
    assert.match(bad!.content, /missing required argument\(s\): id/);
    assert.deepEqual(
      r.executed.map((e) => e.name),
      ['big_output'],
      'the call without its required argument never ran',
    );
  });

  it('synthesises after tools when the model answers with nothing, then falls back to what a search found', async () => {
    const synthesized = await run({
      scenarios: [{ toolCalls: [{ name: 'search_docs', arguments: '{"query":"e"}' }] }, { text: ['   '] }, { text: ['From the synthesis.'] }],
    });
    assert.equal(synthesized.result.synthesized, true);
    assert.equal(synthesized.posts.at(-1), 'From the synthesis.');

    llm.reset();
    const fallback = await run({
      scenarios: [{ toolCalls: [{ name: 'search_docs', arguments: '{"query":"f"}' }] }, { think: 'hmm', text: [] }, { text: [''] }],
    });
    assert.equal(fallback.result.fallback, true);
    assert.equal(fallback.posts.at(-2), FALLBACK_FOUND_PREFIX);
    assert.equal(fallback.posts.at(-1), 'TOOL-OUTPUT-MARKER results for f');
  });

  it('asks the rate limiter for every model call of the loop', async () => {
    const limits: RateLimitSettings = { enabled: true, chat: { instance: {}, user: { minute: 2 } }, embeddings: { instance: {}, user: {} } };
    const limiter = new RateLimiter(
      tdb.db,
      async () => limits,
      () => 1_700_000_040_000,
    );
    const gate = new RateGate(limiter, { scope: 'chat', uid: 'carol', guestRoom: null }, { maxWaitMs: 0 });
    assert.equal((await gate.first()).ok, true);
    await assert.rejects(
      run({
        input: { gate },
        scenarios: [
          { toolCalls: [{ name: 'search_docs', arguments: '{"query":"1"}' }] },
          { toolCalls: [{ name: 'search_docs', arguments: '{"query":"2"}' }] },
          { text: ['never reached'] },
        ],
      }),
      (err: unknown) => err instanceof RateLimitedError && err.refusal.level === 'user',
    );
    assert.equal(llm.chatRequests().length, 2);
    const status = await limiter.status({ uid: 'carol' });
    assert.equal(status.chat.user?.find((w) => w.window === 'minute')?.used, 2);
  });

  it('traces model calls and tools as metadata: no prompt text, no tool output, token usage summed', async () => {
    const traces = new TraceStore(tdb.db);
    const trace = await TurnTrace.start(traces, {
      uid: 'alice',
      botId: 'bot-1',
      botMention: 'helper',
      roomToken: 'room1',
      messageId: '42',
      source: 'talk',
      userText: 'hi',
    });
    await run({ input: { trace }, scenarios: [{ toolCalls: [{ name: 'search_docs', arguments: '{"query":"traced"}' }] }, { text: ['Traced answer.'] }] });
    await trace.finish('success');
    const found = await traces.getForUser('alice', trace.runId!);
    assert.ok(found);
    assert.deepEqual(
      found.events.map((e) => e.type),
      ['llm_request', 'llm_response', 'tool_call', 'tool_result', 'llm_request', 'llm_response'],
    );
    const dump = JSON.stringify(found);
    assert.doesNotMatch(dump, /SYSTEM-PROMPT-MARKER/);
    assert.doesNotMatch(dump, /TOOL-OUTPUT-MARKER/);
    const result = found.events.find((e) => e.type === 'tool_result')!.payload as { size: number; sha256: string };
    assert.equal(result.size, Buffer.byteLength('TOOL-OUTPUT-MARKER results for traced'));
    assert.match(result.sha256, /^[0-9a-f]{64}$/);
    assert.equal(found.run.toolCallCount, 1);
    assert.ok(found.run.totalTokens > 0);
    assert.equal(found.run.status, 'success');
  });

  it('formats the progress line for one and several tools', () => {
    assert.equal(progressLine(['a']), '🔧 Using tool: a…');
    assert.equal(progressLine(['a', 'b', 'a']), '🔧 Using tools: a, b…');
  });
});
