// An OpenAI-compatible server for tests and benchmarks: /v1/models and
// /v1/chat/completions (JSON and SSE), answering each chat call from a queue of
// scripted scenarios, else from a default responder. Every request is recorded.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeToolCall {
  id?: string;
  name: string;
  /** One string, or the deltas it is streamed in. */
  arguments: string | string[];
}

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface FakeScenario {
  /** Content deltas (joined for a JSON answer). */
  text?: string[];
  /** Reasoning sent first as `<think>…</think>` content. */
  think?: string;
  toolCalls?: FakeToolCall[];
  /** An error answer with this status (and headers, and body). */
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Streaming: send this many content chunks, then drop the connection. */
  failAfterChunks?: number;
  /** Overrides the computed usage; null sends no usage even when asked for. */
  usage?: FakeUsage | null;
  finishReason?: string;
  /** Wait before the response headers. */
  delayMs?: number;
  /** Streaming pace: a chunk every 1000/tokensPerSecond ms. */
  tokensPerSecond?: number;
  /** The model name reported in the answer (default: the requested one). */
  model?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or null. */
  body: Record<string, unknown> | null;
}

export type FakeResponder = (request: RecordedRequest) => FakeScenario;

/** The text of the last tool result the model was sent in `req` ('' when there is none). */
export function lastToolOutput(req: RecordedRequest): string {
  const messages = (req.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  const tool = [...messages].reverse().find((m) => m.role === 'tool');
  return typeof tool?.content === 'string' ? tool.content : '';
}

export interface FakeOpenAIOptions {
  models?: string[];
  /** `data` answers `{object:'list', data:[{id}]}`, `models` answers `{models:[…]}`. */
  modelsFormat?: 'data' | 'models';
  /** When set, any other bearer token gets 401. */
  apiKey?: string;
  responder?: FakeResponder;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function countTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function promptText(body: Record<string, unknown> | null): string {
  const messages = Array.isArray(body?.messages) ? (body.messages as Array<{ content?: unknown }>) : [];
  return messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''))).join('\n');
}

export class FakeOpenAI {
  readonly requests: RecordedRequest[] = [];
  models: string[];
  modelsFormat: 'data' | 'models';
  /** When set, /v1/models answers with this status and an error body. */
  modelsStatus: number | null = null;
  apiKey: string | undefined;
  responder: FakeResponder;
  /** Off for long benchmark runs, so memory stays flat. */
  recordRequests = true;

  readonly #server: Server;
  readonly #queue: FakeScenario[] = [];
  readonly #sockets = new Set<Socket>();
  #port = 0;
  #nextId = 1;

  private constructor(options: FakeOpenAIOptions) {
    this.models = options.models ?? ['fake-model'];
    this.modelsFormat = options.modelsFormat ?? 'data';
    this.apiKey = options.apiKey;
    this.responder = options.responder ?? (() => ({ text: ['Hello', ' from', ' the', ' fake', ' model.'] }));
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(options: FakeOpenAIOptions & { port?: number } = {}): Promise<FakeOpenAI> {
    const fake = new FakeOpenAI(options);
    await new Promise<void>((resolve, reject) => {
      fake.#server.once('error', reject);
      fake.#server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    fake.#port = (fake.#server.address() as AddressInfo).port;
    return fake;
  }

  get port(): number {
    return this.#port;
  }

  /** The API base, e.g. `http://127.0.0.1:1234/v1`. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}/v1`;
  }

  /** Scenarios for the next chat calls, in order. */
  enqueue(...scenarios: FakeScenario[]): void {
    this.#queue.push(...scenarios);
  }

  get pending(): number {
    return this.#queue.length;
  }

  chatRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path === '/v1/chat/completions');
  }

  lastChatBody(): Record<string, unknown> {
    const last = this.chatRequests().at(-1);
    if (!last?.body) throw new Error('no chat request recorded');
    return last.body;
  }

  reset(): void {
    this.requests.length = 0;
    this.#queue.length = 0;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown> | null;
    try {
      body = raw === '' ? null : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      body = null;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path, headers: { ...req.headers }, body };
    if (this.recordRequests) this.requests.push(recorded);

    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return this.#json(res, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    }
    if (req.method === 'GET' && path === '/v1/models') {
      if (this.modelsStatus !== null) return this.#json(res, this.modelsStatus, { error: { message: `models failed at ${this.url}` } });
      const payload =
        this.modelsFormat === 'data'
          ? { object: 'list', data: this.models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })) }
          : { models: [...this.models] };
      return this.#json(res, 200, payload);
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const scenario = this.#queue.shift() ?? this.responder(recorded);
      return this.#chat(res, body ?? {}, scenario);
    }
    this.#json(res, 404, { error: { message: 'not found' } });
  }

  async #chat(res: ServerResponse, body: Record<string, unknown>, s: FakeScenario): Promise<void> {
    if (s.delayMs) await sleep(s.delayMs);
    if (res.destroyed || res.socket === null || res.socket.destroyed) return;
    if (s.status !== undefined && s.status >= 400) {
      const errorBody = s.body ?? { error: { message: `fake failure ${s.status} from ${this.url}`, type: 'fake_error', code: null } };
      res.writeHead(s.status, { 'content-type': 'application/json', ...s.headers });
      res.end(JSON.stringify(errorBody));
      return;
    }
    const model = s.model ?? (typeof body.model === 'string' ? body.model : 'fake-model');
    const id = `chatcmpl-${this.#nextId++}`;
    const created = Math.floor(Date.now() / 1000);
    const content = `${s.think !== undefined ? `<think>${s.think}</think>` : ''}${(s.text ?? []).join('')}`;
    const toolCalls = (s.toolCalls ?? []).map((t, i) => ({
      id: t.id ?? `call_${this.#nextId}_${i}`,
      name: t.name,
      parts: Array.isArray(t.arguments) ? t.arguments : [t.arguments],
    }));
    const finishReason = s.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    const completionText = content + toolCalls.map((t) => t.parts.join('')).join('');
    const usage: FakeUsage | null =
      s.usage === null
        ? null
        : (s.usage ?? {
            prompt_tokens: countTokens(promptText(body)),
            completion_tokens: countTokens(completionText),
            total_tokens: countTokens(promptText(body)) + countTokens(completionText),
          });

    if (body.stream !== true) {
      const message: Record<string, unknown> = { role: 'assistant', content: toolCalls.length > 0 && content === '' ? null : content };
      if (toolCalls.length > 0) {
        message.tool_calls = toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.parts.join('') } }));
      }
      const payload: Record<string, unknown> = { id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finishReason }] };
      if (usage) payload.usage = usage;
      res.writeHead(200, { 'content-type': 'application/json', ...s.headers });
      res.end(JSON.stringify(payload));
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...s.headers });
    const interval = s.tokensPerSecond ? 1000 / s.tokensPerSecond : 0;
    // Each write is awaited, so a later connection drop happens after the client saw the chunks.
    const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      new Promise<void>((resolve) => {
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`, () => resolve());
      });
    const deltas: Array<Record<string, unknown>> = [];
    deltas.push({ role: 'assistant', content: '' });
    if (s.think !== undefined) deltas.push({ content: `<think>${s.think}</think>` });
    for (const piece of s.text ?? []) deltas.push({ content: piece });
    toolCalls.forEach((t, index) => {
      t.parts.forEach((part, p) => {
        deltas.push({
          tool_calls: [p === 0 ? { index, id: t.id, type: 'function', function: { name: t.name, arguments: part } } : { index, function: { arguments: part } }],
        });
      });
    });
    let contentChunks = 0;
    for (const delta of deltas) {
      if (res.destroyed) return;
      if (s.failAfterChunks !== undefined && contentChunks >= s.failAfterChunks) {
        res.socket?.destroy();
        return;
      }
      if (interval > 0 && contentChunks > 0) await sleep(interval);
      await send([{ index: 0, delta, finish_reason: null }]);
      if (delta.content !== '' || delta.tool_calls) contentChunks++;
    }
    if (s.failAfterChunks !== undefined) {
      res.socket?.destroy();
      return;
    }
    await send([{ index: 0, delta: {}, finish_reason: finishReason }]);
    const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
    if (usage && streamOptions?.include_usage === true) await send([], { usage });
    res.end('data: [DONE]\n\n');
  }

  #json(res: ServerResponse, status: number, payload: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(payload));
  }
}
