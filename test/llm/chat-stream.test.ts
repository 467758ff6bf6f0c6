import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ChatClient, streamPause, type StreamEvent } from '../../lib/llm/chat-client.ts';
import { LlmUnavailableError } from '../../lib/llm/provider-errors.ts';
import { chunkBatches, postChat, ProviderHttpError, ProviderStreamError, type ChunkLike } from '../../lib/llm/chat-stream.ts';
import { LlmSettingsService } from '../../lib/llm/llm-settings.ts';
import { ModelCatalog } from '../../lib/llm/model-catalog.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A provider that answers whatever raw bytes a test scripts (the fake OpenAI server only speaks well-formed SSE). */
class RawProvider {
  readonly server: Server;
  handlers: Handler[] = [];
  requests: Array<{ headers: IncomingMessage['headers']; body: string }> = [];

  constructor() {
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        this.requests.push({ headers: req.headers, body: Buffer.concat(parts).toString() });
        const handler = this.handlers.shift();
        if (!handler) {
          res.writeHead(500).end();
          return;
        }
        handler(req, res);
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Writes the frames with a pause between them, so each arrives in its own read. */
const sse =
  (frames: string[], status = 200): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (i === frames.length) return void res.end();
      res.write(frames[i++], () => setTimeout(next, 5));
    };
    next();
  };

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;

async function batches(res: Response): Promise<ChunkLike[][]> {
  const out: ChunkLike[][] = [];
  for await (const b of chunkBatches(res)) out.push(b);
  return out;
}

describe('streamed chat transport', () => {
  let provider: RawProvider;
  let base: string;
  before(async () => {
    provider = new RawProvider();
    base = await provider.start();
  });
  after(() => provider.close());
  beforeEach(() => {
    provider.handlers = [];
    provider.requests = [];
  });
  const post = (key: string | null = 'k') => postChat(fetch, `${base}/chat/completions`, key, '{"stream":true}', new AbortController().signal);

  it('hands out the chunks read by read, stops at [DONE] and ignores what follows', async () => {
    provider.handlers.push(sse([chunk('a'), chunk('b') + chunk('c', 'stop'), 'data: [DONE]\n\n' + chunk('after the end')]));
    const got = await batches(await post());
    assert.deepEqual(
      got.map((b) => b.map((c) => c.choices?.[0]?.delta?.content)),
      [['a'], ['b', 'c']],
    );
  });

  it('reads CRLF streams and skips keep-alive comments', async () => {
    provider.handlers.push(sse([': ping\r\n\r\n', chunk('x').replaceAll('\n', '\r\n'), 'data: [DONE]\r\n\r\n']));
    assert.deepEqual(
      (await batches(await post())).flat().map((c) => c.choices?.[0]?.delta?.content),
      ['x'],
    );
  });

  it('turns an error event or an error member into ProviderStreamError, and broken JSON into SyntaxError', async () => {
    provider.handlers.push(sse([chunk('a'), 'event: error\ndata: {"error":{"message":"Service overloaded"}}\n\n']));
    const seen: ChunkLike[] = [];
    await assert.rejects(
      (async () => {
        for await (const b of chunkBatches(await post())) seen.push(...b);
      })(),
      (err: unknown) => err instanceof ProviderStreamError && err.message === 'Service overloaded',
    );
    assert.equal(seen.length, 1, 'the chunk before the error was delivered');
    provider.handlers.push(sse(['data: {"error":{"message":"quota","code":"insufficient_quota"}}\n\n']));
    await assert.rejects(batches(await post()), ProviderStreamError);
    provider.handlers.push(sse(['data: {"choices": [\n\n']));
    await assert.rejects(batches(await post()), SyntaxError);
  });

  it('accepts a JSON answer from a server that ignored stream: true', async () => {
    provider.handlers.push((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          choices: [{ message: { content: 'whole', tool_calls: [{ id: 't1', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'tool_calls' }],
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
        }),
      );
    });
    const [[only]] = (await batches(await post())) as [[ChunkLike]];
    assert.equal(only.choices?.[0]?.delta?.content, 'whole');
    assert.deepEqual(only.choices?.[0]?.delta?.tool_calls, [{ index: 0, id: 't1', function: { name: 'f', arguments: '{}' } }]);
    assert.equal(only.choices?.[0]?.finish_reason, 'tool_calls');
    assert.deepEqual(only.usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
  });

  it('refuses non-2xx answers with their status and headers, never following a redirect', async () => {
    provider.handlers.push((_req, res) =>
      res.writeHead(429, { 'retry-after': '4', 'content-type': 'application/json' }).end('{"error":{"message":"slow down"}}'),
    );
    await assert.rejects(
      post(),
      (err: unknown) => err instanceof ProviderHttpError && err.status === 429 && err.headers.get('retry-after') === '4' && !err.message.includes('slow down'),
    );
    provider.handlers.push((_req, res) => res.writeHead(302, { location: 'http://169.254.169.254/' }).end());
    await assert.rejects(post(), (err: unknown) => err instanceof ProviderHttpError && err.status === 302);
    assert.equal(provider.requests.length, 2, 'the redirect was not followed');
  });

  it('sends the key as a bearer token, and no Authorization header without one', async () => {
    provider.handlers.push(sse(['data: [DONE]\n\n']), sse(['data: [DONE]\n\n']));
    await batches(await post('sk-test'));
    await batches(await post(null));
    assert.equal(provider.requests[0]?.headers.authorization, 'Bearer sk-test');
    assert.equal(provider.requests[1]?.headers.authorization, undefined);
    assert.equal(provider.requests[0]?.headers['content-type'], 'application/json');
  });
});

for (const dialect of DIALECTS) {
  describe(`chat client with provider stream errors on ${dialect}`, () => {
    let tdb: TestDatabase;
    let provider: RawProvider;
    let fallback: FakeOpenAI;
    let client: ChatClient;
    let settings: LlmSettingsService;

    before(async () => {
      tdb = await createTestDatabase(dialect);
      settings = new LlmSettingsService(new SettingsStore(tdb.db), new Vault(tdb.db, new Uint8Array(32).fill(7)));
      provider = new RawProvider();
      const url = await provider.start();
      fallback = await FakeOpenAI.start({ models: ['backup'] });
      await settings.update({
        primaryEndpoint: url,
        primaryKey: 'sk-raw-provider-key-1234',
        secondaryEndpoint: fallback.url,
        defaultModel: 'primary:raw',
        allowedModels: [],
        fallbackModel: 'secondary:backup',
      });
      client = new ChatClient({ settings, catalog: new ModelCatalog({ settings }) });
    });
    after(async () => {
      await provider.close();
      await fallback.close();
      await tdb.drop();
    });
    beforeEach(() => {
      provider.handlers = [];
      fallback.reset();
    });

    async function run(): Promise<{ events: StreamEvent[]; error: unknown }> {
      const events: StreamEvent[] = [];
      try {
        for await (const e of client.stream({ model: 'primary:raw', messages: [{ role: 'user', content: 'Hi' }] }, { committed: () => false })) events.push(e);
      } catch (error) {
        return { events, error };
      }
      return { events, error: null };
    }

    it('falls back when the provider reports a transient error inside the stream', async () => {
      provider.handlers.push(sse(['event: error\ndata: {"error":{"message":"The server is overloaded, try again in 20s"}}\n\n']));
      fallback.enqueue({ text: ['from backup'] });
      const { events, error } = await run();
      assert.equal(error, null);
      assert.deepEqual(
        events.filter((e) => e.type === 'text'),
        [{ type: 'text', delta: 'from backup' }],
      );
      assert.deepEqual(events.at(-1), { type: 'done', finishReason: 'stop', model: 'secondary:backup' });
    });

    it('does not fall back on a permanent stream error, and keeps the provider text out of the public message', async () => {
      provider.handlers.push(sse([chunk('par'), 'data: {"error":{"message":"Content policy violation: secret-detail"}}\n\n']));
      const { events, error } = await run();
      assert.ok(error instanceof LlmUnavailableError);
      assert.equal(error.transient, false);
      assert.ok(!error.publicMessage.includes('secret-detail') && !error.message.includes('secret-detail'));
      assert.deepEqual(events, [{ type: 'text', delta: 'par' }]);
      assert.equal(fallback.chatRequests().length, 0);
    });

    it('reports a stream that ends without a finish reason or [DONE]', async () => {
      await settings.update({ fallbackModel: null });
      try {
        provider.handlers.push(sse([chunk('half')]));
        const { events, error } = await run();
        assert.ok(error instanceof LlmUnavailableError);
        assert.deepEqual(events, [{ type: 'text', delta: 'half' }]);
      } finally {
        await settings.update({ fallbackModel: 'secondary:backup' });
      }
    });
  });
}

describe('read pacing under load', () => {
  it('reads without pauses while few streams run, then pauses longer as streams grow', () => {
    assert.equal(streamPause(1, 32, 100), 0);
    assert.equal(streamPause(32, 32, 100), 0);
    assert.equal(streamPause(33, 32, 100), 100);
    assert.equal(streamPause(250, 32, 100), 100);
    assert.equal(streamPause(251, 32, 100), 200);
    assert.equal(streamPause(1000, 32, 100), 400);
    assert.equal(streamPause(5000, 32, 100), 400, 'at most four steps');
    assert.equal(streamPause(1000, 32, 0), 0, 'pacing switched off');
  });

  it('hands tokens that arrived during a pause over in fewer reads', async () => {
    // A real socket: bytes that arrive while the reader pauses are read together.
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const timer = setInterval(() => {
        n++;
        res.write(`data: {"choices":[{"delta":{"content":"t${n}"}}]}\n\n`);
        if (n === 10) {
          clearInterval(timer);
          res.end('data: [DONE]\n\n');
        }
      }, 5);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const read = async (pace: number): Promise<number[]> => {
        const sizes: number[] = [];
        for await (const batch of chunkBatches(await fetch(url), () => pace)) sizes.push(batch.length);
        return sizes;
      };
      const paced = await read(200);
      assert.equal(
        paced.reduce((a, b) => a + b, 0),
        10,
        'no token is lost',
      );
      assert.equal(paced[0], 1, 'the first token is never delayed');
      assert.ok(paced.length <= 4, `tokens were read in batches (${paced.join(', ')})`);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
