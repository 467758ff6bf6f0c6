import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { buildChatBody, isGpt5Family, prepareMessages } from '../../lib/llm/chat-request.ts';
import {
  ChatClient,
  LlmError,
  LlmNotConfiguredError,
  ModelNotAllowedError,
  type ChatMessage,
  type ChatRequest,
  type StreamEvent,
} from '../../lib/llm/chat-client.ts';
import { LlmAbortedError, LlmAuthError, LlmBadRequestError, LlmRateLimitError, LlmTimeoutError, LlmUnavailableError } from '../../lib/llm/provider-errors.ts';
import { LLM_DEFAULTS, LlmSettingsService, type LlmSettings } from '../../lib/llm/llm-settings.ts';
import { ModelCatalog } from '../../lib/llm/model-catalog.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { waitFor } from '../helpers/harness.ts';

const PRIMARY_KEY = 'sk-primary-chat-key-4f1e2d3c4b5a';
const SECONDARY_KEY = 'sk-secondary-chat-key-9a8b7c6d5e4f';
const USER: ChatMessage = { role: 'user', content: 'Hi' };

describe('message preparation', () => {
  it('puts one system prompt first, turns later system messages into user, merges same-role neighbours', () => {
    const out = prepareMessages([
      { role: 'system', content: 'You are helpful.' },
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'one' },
      { role: 'system', content: 'note from the room' },
      { role: 'assistant', content: 'a1' },
      { role: 'assistant', content: 'a2' },
      { role: 'user', content: 'two' },
    ]);
    assert.deepEqual(out, [
      { role: 'system', content: 'You are helpful.\n\nAnswer briefly.' },
      { role: 'user', content: 'one\n\nnote from the room' },
      { role: 'assistant', content: 'a1\n\na2' },
      { role: 'user', content: 'two' },
    ]);
  });

  it('inserts an empty user message before a leading assistant message', () => {
    assert.deepEqual(prepareMessages([{ role: 'system', content: 'S' }, { role: 'assistant', content: 'Earlier answer' }, USER]), [
      { role: 'system', content: 'S' },
      { role: 'user', content: '' },
      { role: 'assistant', content: 'Earlier answer' },
      USER,
    ]);
    assert.deepEqual(prepareMessages([{ role: 'assistant', content: 'x' }])[0], { role: 'user', content: '' });
  });

  it('never merges tool calls or tool results, and merges multimodal parts', () => {
    const call = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const out = prepareMessages([
      USER,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', content: 'r1', tool_call_id: 'c1' },
      { role: 'tool', content: 'r2', tool_call_id: 'c2' },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'look' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
    ]);
    assert.equal(out.length, 6);
    assert.deepEqual(out[1], { role: 'assistant', content: null, tool_calls: [call] });
    assert.equal(out[2]?.role, 'tool');
    assert.equal(out[3]?.role, 'tool');
    assert.deepEqual(out[5]?.content, [
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
    ]);
  });

  it('replaces lone surrogates so the body is valid UTF-8', () => {
    const out = prepareMessages([{ role: 'user', content: `bad \uD800 text` }]);
    assert.equal(out[0]?.content, 'bad \uFFFD text');
  });

  it('uses max_completion_tokens and no temperature for the GPT-5 family only', () => {
    for (const id of ['gpt-5', 'gpt-5-mini', 'gpt-5.1', 'openai/gpt-5-nano', 'GPT-5']) assert.equal(isGpt5Family(id), true, id);
    for (const id of ['gpt-4o', 'gpt-50', 'my-gpt-5', 'gpt-5x', 'llama']) assert.equal(isGpt5Family(id), false, id);
    const settings: LlmSettings = { ...LLM_DEFAULTS, allowedModels: [], primaryKeySet: false, secondaryKeySet: false };
    const req: ChatRequest = { model: 'x', messages: [USER] };
    const gpt5 = buildChatBody({ ref: 'primary:gpt-5-mini', endpoint: 'primary', id: 'gpt-5-mini' }, { ...req, temperature: 0.9 }, settings);
    assert.equal(gpt5.max_completion_tokens, 2000);
    assert.equal('max_tokens' in gpt5, false);
    assert.equal('temperature' in gpt5, false);
    const other = buildChatBody({ ref: 'primary:llama', endpoint: 'primary', id: 'llama' }, req, settings);
    assert.equal(other.max_tokens, 2000);
    assert.equal(other.temperature, 0.2);
    assert.equal('max_completion_tokens' in other, false);
    const noTemp = buildChatBody({ ref: 'primary:llama', endpoint: 'primary', id: 'llama' }, { ...req, temperature: null, maxTokens: 50 }, settings);
    assert.equal('temperature' in noTemp, false);
    assert.equal(noTemp.max_tokens, 50);
    const tools = buildChatBody(
      { ref: 'primary:llama', endpoint: 'primary', id: 'llama' },
      { ...req, tools: [{ type: 'function' }], toolChoice: 'auto' },
      settings,
    );
    assert.equal('tool_choice' in tools, false, 'auto is the default and is omitted');
    assert.deepEqual(
      buildChatBody({ ref: 'primary:l', endpoint: 'primary', id: 'l' }, { ...req, toolChoice: 'required' }, settings).tool_choice,
      undefined,
      'no tools, no tool_choice',
    );
  });
});

async function collect(iterable: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const e of iterable) events.push(e);
  return events;
}

async function collectUntilError(iterable: AsyncIterable<StreamEvent>): Promise<{ events: StreamEvent[]; error: unknown }> {
  const events: StreamEvent[] = [];
  try {
    for await (const e of iterable) events.push(e);
  } catch (error) {
    return { events, error };
  }
  return { events, error: null };
}

const texts = (events: StreamEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : []));

for (const dialect of DIALECTS) {
  describe(`chat client on ${dialect}`, () => {
    let tdb: TestDatabase;
    let settings: LlmSettingsService;
    let primary: FakeOpenAI;
    let secondary: FakeOpenAI;
    let client: ChatClient;
    let fetchCalls = 0;

    before(async () => {
      tdb = await createTestDatabase(dialect);
      settings = new LlmSettingsService(new SettingsStore(tdb.db), new Vault(tdb.db, new Uint8Array(32).fill(5)));
      primary = await FakeOpenAI.start({ models: ['llama', 'gpt-5-mini', 'gpt-4o', 'slow'], apiKey: PRIMARY_KEY });
      secondary = await FakeOpenAI.start({ models: ['qwen'], apiKey: SECONDARY_KEY });
    });
    after(async () => {
      await primary.close();
      await secondary.close();
      await tdb.drop();
    });
    beforeEach(async () => {
      primary.reset();
      secondary.reset();
      await settings.update({
        primaryEndpoint: primary.url,
        primaryKey: PRIMARY_KEY,
        secondaryEndpoint: `${secondary.url}/chat/completions`,
        secondaryKey: SECONDARY_KEY,
        defaultModel: 'primary:llama',
        allowedModels: [],
        fallbackModel: 'secondary:qwen',
        defaultTemperature: 0.2,
        maxTokens: 2000,
      });
      fetchCalls = 0;
      // Stands in for the egress module: every provider call must pass through it.
      const egress: typeof fetch = (input, init) => {
        fetchCalls++;
        return fetch(input, init);
      };
      client = new ChatClient({ settings, catalog: new ModelCatalog({ settings }), fetch: egress });
    });

    // The admin's minimum is 5 s; the override keeps timeout tests short. The fake's delay is far beyond it.
    const impatientClient = () => new ChatClient({ settings, catalog: new ModelCatalog({ settings }), timeoutOverridesMs: { chat: 300, stream: 300 } });

    it('streams text, tool-call deltas and the usage chunk that has no choices', async () => {
      primary.enqueue({
        text: ['Hel', 'lo'],
        toolCalls: [{ id: 'call_1', name: 'search', arguments: ['{"q":', '"x"}'] }],
        usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
      });
      const events = await collect(client.stream({ model: 'primary:llama', messages: [{ role: 'system', content: 'S' }, USER] }));
      assert.deepEqual(events, [
        // Chunks that arrive in one read come out as one text event; a tool call ends the run.
        { type: 'text', delta: 'Hello' },
        { type: 'tool_call', index: 0, id: 'call_1', name: 'search', argumentsDelta: '{"q":' },
        { type: 'tool_call', index: 0, argumentsDelta: '"x"}' },
        { type: 'usage', promptTokens: 11, completionTokens: 7, totalTokens: 18 },
        { type: 'done', finishReason: 'tool_calls', model: 'primary:llama' },
      ]);
      const req = primary.chatRequests()[0];
      assert.ok(req);
      assert.equal(req.headers.authorization, `Bearer ${PRIMARY_KEY}`);
      assert.equal(req.body?.model, 'llama');
      assert.equal(req.body?.stream, true);
      assert.deepEqual(req.body?.stream_options, { include_usage: true });
      assert.equal(req.body?.max_tokens, 2000);
      assert.equal(req.body?.temperature, 0.2);
      assert.ok(fetchCalls > 0, 'the injected fetch carried the call');
    });

    it('hands out text as it arrives: chunks of separate reads stay separate events', async () => {
      primary.enqueue({ text: ['one ', 'two ', 'three'], tokensPerSecond: 20 });
      const events = await collect(client.stream({ model: 'primary:llama', messages: [USER] }));
      assert.deepEqual(texts(events), ['one ', 'two ', 'three']);
    });

    it('passes think blocks through as text for the think filter', async () => {
      primary.enqueue({ think: 'pondering', text: ['Answer'] });
      const events = await collect(client.stream({ model: 'primary:llama', messages: [USER] }));
      assert.equal(texts(events).join(''), '<think>pondering</think>Answer');
    });

    it('asks once more without stream_options when the server rejects them', async () => {
      for (const status of [400, 422]) {
        primary.reset();
        primary.enqueue({ status }, { text: ['ok'], usage: null });
        const events = await collect(client.stream({ model: 'primary:llama', messages: [USER] }));
        assert.deepEqual(texts(events), ['ok']);
        assert.equal(
          events.some((e) => e.type === 'restart'),
          false,
        );
        const [first, second] = primary.chatRequests();
        assert.deepEqual(first?.body?.stream_options, { include_usage: true });
        assert.equal(second?.body?.stream_options, undefined, `retry after ${status} has no stream_options`);
        assert.equal(secondary.chatRequests().length, 0);
      }
    });

    it('sends GPT-5 models max_completion_tokens and no temperature', async () => {
      primary.enqueue({ text: ['a'] }, { text: ['b'] });
      await collect(client.stream({ model: 'gpt-5-mini', messages: [USER], temperature: 0.9, maxTokens: 300 }));
      await client.complete({ model: 'primary:gpt-4o', messages: [USER], temperature: 0.7, maxTokens: 300 });
      const [gpt5, gpt4] = primary.chatRequests();
      assert.equal(gpt5?.body?.model, 'gpt-5-mini');
      assert.equal(gpt5?.body?.max_completion_tokens, 300);
      assert.equal(gpt5?.body && 'max_tokens' in gpt5.body, false);
      assert.equal(gpt5?.body && 'temperature' in gpt5.body, false);
      assert.equal(gpt4?.body?.max_tokens, 300);
      assert.equal(gpt4?.body?.temperature, 0.7);
      assert.equal(gpt4?.body && 'max_completion_tokens' in gpt4.body, false);
      assert.equal(gpt4?.body?.stream, undefined);
    });

    it('sends valid UTF-8 even for broken input', async () => {
      primary.enqueue({ text: ['ok'] });
      await client.complete({ model: 'primary:llama', messages: [{ role: 'user', content: 'x \uDC00 y' }] });
      assert.deepEqual(primary.lastChatBody().messages, [{ role: 'user', content: 'x \uFFFD y' }]);
    });

    it('completes with content, tool calls and usage', async () => {
      primary.enqueue({
        text: ['Hi ', 'there'],
        toolCalls: [{ id: 'c9', name: 'lookup', arguments: '{"a":1}' }],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      });
      const result = await client.complete({
        model: 'llama',
        messages: [USER],
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
        toolChoice: 'required',
      });
      assert.deepEqual(result, {
        content: 'Hi there',
        toolCalls: [{ id: 'c9', name: 'lookup', arguments: '{"a":1}' }],
        usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
        finishReason: 'tool_calls',
        model: 'primary:llama',
      });
      assert.equal(primary.lastChatBody().tool_choice, 'required');
    });

    it('falls back once on a transient failure before the first chunk', async () => {
      for (const failure of [
        { status: 503 },
        { status: 429, headers: { 'retry-after': '3' } },
        { status: 404 },
        { status: 408 },
        { status: 409 },
        { status: 500 },
      ]) {
        primary.reset();
        secondary.reset();
        primary.enqueue(failure);
        secondary.enqueue({ text: ['from ', 'fallback'] });
        const events = await collect(client.stream({ model: 'primary:llama', messages: [USER] }));
        assert.deepEqual(texts(events), ['from fallback'], `status ${failure.status}`);
        assert.equal(
          events.some((e) => e.type === 'restart'),
          false,
          'nothing to drop: no event came before',
        );
        assert.deepEqual(events.at(-1), { type: 'done', finishReason: 'stop', model: 'secondary:qwen' });
        assert.equal(secondary.chatRequests()[0]?.body?.model, 'qwen');
        assert.equal(secondary.chatRequests()[0]?.headers.authorization, `Bearer ${SECONDARY_KEY}`);
      }
    });

    it('falls back after a dropped stream while nothing is committed, announcing a restart', async () => {
      primary.enqueue({ text: ['par', 'tial', 'never'], failAfterChunks: 2 });
      secondary.enqueue({ text: ['whole answer'] });
      const events = await collect(client.stream({ model: 'primary:llama', messages: [USER] }, { committed: () => false }));
      const restart = events.findIndex((e) => e.type === 'restart');
      assert.deepEqual(texts(events.slice(0, restart)), ['partial']);
      assert.ok(restart > 0);
      assert.deepEqual(texts(events.slice(restart)), ['whole answer']);
      assert.equal((events.at(-1) as { model: string }).model, 'secondary:qwen');
    });

    it('does not fall back once the consumer committed output', async () => {
      primary.enqueue({ text: ['par', 'tial', 'never'], failAfterChunks: 2 });
      secondary.enqueue({ text: ['unused'] });
      let sent = false;
      const stream = client.stream({ model: 'primary:llama', messages: [USER] }, { committed: () => sent });
      const events: StreamEvent[] = [];
      let error: unknown = null;
      try {
        for await (const e of stream) {
          events.push(e);
          if (e.type === 'text') sent = true;
        }
      } catch (err) {
        error = err;
      }
      assert.ok(error instanceof LlmUnavailableError);
      assert.deepEqual(texts(events), ['partial']);
      assert.equal(secondary.chatRequests().length, 0);
    });

    it('never falls back on 400, 401, 403 or 422', async () => {
      const expected: Array<[number, new (...args: never[]) => LlmError]> = [
        [400, LlmBadRequestError],
        [401, LlmAuthError],
        [403, LlmAuthError],
        [422, LlmBadRequestError],
      ];
      for (const [status, type] of expected) {
        primary.reset();
        secondary.reset();
        primary.enqueue({ status });
        await assert.rejects(client.complete({ model: 'primary:llama', messages: [USER] }), type, `complete ${status}`);
        primary.enqueue({ status }, { status });
        const { error } = await collectUntilError(client.stream({ model: 'primary:llama', messages: [USER] }));
        assert.ok(error instanceof type, `stream ${status}`);
        assert.equal((error as LlmError).status, status);
        assert.equal(secondary.chatRequests().length, 0, `no fallback on ${status}`);
      }
    });

    it('does not retry when the fallback is the failing model', async () => {
      await settings.update({ fallbackModel: 'llama' });
      primary.enqueue({ status: 503 }, { text: ['must stay queued'] });
      await assert.rejects(client.complete({ model: 'primary:llama', messages: [USER] }), LlmUnavailableError);
      assert.equal(primary.chatRequests().length, 1);
    });

    it('reports rate limits with the provider headers when there is no fallback', async () => {
      await settings.update({ fallbackModel: null });
      primary.enqueue({ status: 429, headers: { 'retry-after': '7', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '7s' } });
      await assert.rejects(client.complete({ model: 'primary:llama', messages: [USER] }), (err: unknown) => {
        assert.ok(err instanceof LlmRateLimitError);
        assert.equal(err.status, 429);
        assert.equal(err.retryAfterSeconds, 7);
        assert.equal(err.rateLimitHeaders['x-ratelimit-remaining-requests'], '0');
        assert.equal(err.rateLimitHeaders['x-ratelimit-reset-requests'], '7s');
        return true;
      });
    });

    it('falls back on a timeout, and reports one when the fallback also times out', async () => {
      primary.enqueue({ text: ['late'], delayMs: 1500 });
      secondary.enqueue({ text: ['quick'] });
      const impatient = impatientClient();
      const events = await collect(impatient.stream({ model: 'primary:slow', messages: [USER] }));
      assert.deepEqual(texts(events), ['quick']);
      primary.enqueue({ text: ['late'], delayMs: 1500 });
      secondary.enqueue({ text: ['late too'], delayMs: 1500 });
      await assert.rejects(impatient.complete({ model: 'primary:slow', messages: [USER] }), LlmTimeoutError);
    });

    it('times out a stream that stalls after it started (the deadline covers the whole stream)', async () => {
      await settings.update({ fallbackModel: null });
      primary.enqueue({ text: ['first', 'stalled'], tokensPerSecond: 1 });
      const { events, error } = await collectUntilError(impatientClient().stream({ model: 'primary:llama', messages: [USER] }));
      assert.deepEqual(texts(events), ['first']);
      assert.ok(error instanceof LlmTimeoutError);
    });

    it('ends an aborted stream with LlmAbortedError and no fallback', async () => {
      primary.enqueue({ text: ['a', 'b', 'c', 'd', 'e', 'f'], tokensPerSecond: 20 });
      secondary.enqueue({ text: ['unused'] });
      const controller = new AbortController();
      const events: StreamEvent[] = [];
      await assert.rejects(async () => {
        for await (const e of client.stream({ model: 'primary:llama', messages: [USER], signal: controller.signal })) {
          events.push(e);
          if (e.type === 'text') controller.abort();
        }
      }, LlmAbortedError);
      assert.deepEqual(texts(events), ['a']);
      assert.equal(
        events.some((e) => e.type === 'done'),
        false,
      );
      assert.equal(secondary.chatRequests().length, 0);

      // Aborted while the provider holds the request (not before it was sent), so nothing leaks into the next test.
      primary.enqueue({ text: ['x'], delayMs: 300 });
      const c2 = new AbortController();
      const sent = primary.chatRequests().length;
      const pending = client.complete({ model: 'primary:llama', messages: [USER], signal: c2.signal });
      await waitFor(() => primary.chatRequests().length > sent, 'the request to reach the provider');
      c2.abort();
      await assert.rejects(pending, LlmAbortedError);

      const c3 = new AbortController();
      c3.abort();
      await assert.rejects(collect(client.stream({ model: 'primary:llama', messages: [USER], signal: c3.signal })), LlmAbortedError);
      assert.equal(secondary.chatRequests().length, 0);
    });

    it('checks the allowed list on every call, before any request', async () => {
      await settings.update({ allowedModels: ['primary:gpt-4o'] });
      await assert.rejects(client.complete({ model: 'primary:gpt-5-mini', messages: [USER] }), ModelNotAllowedError);
      await assert.rejects(collect(client.stream({ model: 'qwen', messages: [USER] })), ModelNotAllowedError);
      assert.equal(primary.chatRequests().length + secondary.chatRequests().length, 0);
      primary.enqueue({ text: ['default is fine'] });
      assert.equal((await client.complete({ model: 'primary:llama', messages: [USER] })).content, 'default is fine');
    });

    it('sends no Authorization header to an endpoint without a key', async () => {
      await settings.update({ secondaryKey: null });
      secondary.apiKey = undefined;
      try {
        secondary.enqueue({ text: ['open endpoint'] });
        assert.equal((await client.complete({ model: 'secondary:qwen', messages: [USER] })).content, 'open endpoint');
        assert.equal(secondary.chatRequests()[0]?.headers.authorization, undefined);
      } finally {
        secondary.apiKey = SECONDARY_KEY;
      }
    });

    it('refuses models of an unconfigured endpoint', async () => {
      await settings.update({ fallbackModel: null, allowedModels: [] });
      await settings.update({ secondaryEndpoint: null });
      await assert.rejects(client.complete({ model: 'secondary:qwen', messages: [USER] }), LlmNotConfiguredError);
    });

    it('keeps endpoint URLs, keys and provider text out of public messages', async () => {
      const errors: LlmError[] = [];
      await settings.update({ fallbackModel: null });
      const failures = [{ status: 400 }, { status: 401 }, { status: 403 }, { status: 422 }, { status: 429 }, { status: 500 }, { status: 404 }];
      for (const failure of failures) {
        primary.enqueue(failure);
        await client.complete({ model: 'primary:llama', messages: [USER] }).catch((e: LlmError) => errors.push(e));
      }
      primary.enqueue({ text: ['x', 'y', 'z'], failAfterChunks: 1 });
      const dropped = await collectUntilError(client.stream({ model: 'primary:llama', messages: [USER] }));
      errors.push(dropped.error as LlmError);
      primary.enqueue({ text: ['x'], delayMs: 1500 });
      await impatientClient()
        .complete({ model: 'primary:slow', messages: [USER] })
        .catch((e: LlmError) => errors.push(e));
      const c = new AbortController();
      c.abort();
      await client.complete({ model: 'primary:llama', messages: [USER], signal: c.signal }).catch((e: LlmError) => errors.push(e));
      await client.complete({ model: 'primary:not-listed', messages: [USER] }).catch((e: LlmError) => errors.push(e));
      await settings.update({ secondaryEndpoint: null });
      await client.complete({ model: 'secondary:qwen', messages: [USER] }).catch((e: LlmError) => errors.push(e));

      assert.equal(errors.length, failures.length + 5);
      const names = new Set(errors.map((e) => e.constructor.name));
      for (const n of [
        'LlmBadRequestError',
        'LlmAuthError',
        'LlmRateLimitError',
        'LlmUnavailableError',
        'LlmTimeoutError',
        'LlmAbortedError',
        'ModelNotAllowedError',
        'LlmNotConfiguredError',
      ]) {
        assert.ok(names.has(n), `covered ${n}`);
      }
      for (const e of errors) {
        assert.ok(e instanceof LlmError);
        assert.ok(e.publicMessage.length > 0);
        for (const text of [e.publicMessage, e.message]) {
          for (const leak of [primary.url, secondary.url, '127.0.0.1', 'http', PRIMARY_KEY, SECONDARY_KEY, 'fake failure', 'Incorrect API key']) {
            assert.ok(!text.includes(leak), `${e.name} text "${text}" leaks ${leak}`);
          }
        }
      }
    });
  });
}
