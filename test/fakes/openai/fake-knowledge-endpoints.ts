// OpenAI-compatible embeddings, vision (chat with image_url) and speech-to-text
// endpoints, plus a docling-serve convert endpoint, for knowledge tests and
// benchmarks. Embeddings are deterministic hashed bags of words, so a query
// shares direction with the chunks that contain its words.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeKnowledgeOptions {
  dimensions?: number;
  /** When set, other bearer tokens get 401. */
  apiKey?: string;
  /** Vision answer for one request (default: a description naming the file). */
  describe?: (prompt: string, imageDataUrl: string) => string;
  /** Transcript for one upload (default: "transcribed <name> (<bytes> bytes)"). */
  transcribe?: (name: string, bytes: Buffer) => string;
}

export interface InjectedFailure {
  status: number;
  headers?: Record<string, string>;
}

export interface EmbeddingCall {
  model: string;
  inputs: string[];
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Hashed bag of words (with a bigram hint), unit length. Also used by tests to compute expected vectors. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  const v = new Array<number>(dimensions).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const w of words) {
    const h = fnv1a(w);
    v[h % dimensions]! += h & 0x80000000 ? 1 : -1;
    const h2 = fnv1a(`#${w}`);
    v[h2 % dimensions]! += 0.5;
  }
  if (words.length === 0) v[0] = 1;
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / norm);
}

/** Reads `name`/`filename`/content of each part of a multipart/form-data body. */
function parseMultipart(body: Buffer, contentType: string): Array<{ name: string; filename: string | null; data: Buffer }> {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!boundary) return [];
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts: Array<{ name: string; filename: string | null; data: Buffer }> = [];
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    const start = pos + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    const part = body.subarray(start + 2, next - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const name = /name="([^"]*)"/i.exec(headers)?.[1] ?? '';
    const filename = /filename="([^"]*)"/i.exec(headers)?.[1] ?? null;
    parts.push({ name, filename, data: part.subarray(headerEnd + 4) });
    pos = next;
  }
  return parts;
}

export class FakeKnowledgeEndpoints {
  readonly dimensions: number;
  apiKey: string | undefined;
  describe: (prompt: string, imageDataUrl: string) => string;
  transcribe: (name: string, bytes: Buffer) => string;
  readonly embeddingCalls: EmbeddingCall[] = [];
  readonly visionCalls: Array<{ model: string; prompt: string; imageDataUrl: string }> = [];
  readonly transcriptionCalls: Array<{ model: string; name: string; size: number }> = [];
  readonly doclingCalls: Array<{ name: string; size: number; apiKey: string | null }> = [];
  /** Off for benchmarks. */
  recordCalls = true;
  /** Embedding requests answered so far. */
  embeddingRequests = 0;

  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #failures: InjectedFailure[] = [];
  #hold: { after: number; waiters: Array<() => void> } | null = null;
  #port = 0;

  private constructor(options: FakeKnowledgeOptions) {
    this.dimensions = options.dimensions ?? 64;
    this.apiKey = options.apiKey;
    this.describe = options.describe ?? ((prompt) => `An image. ${/Filename: (.*)/.exec(prompt)?.[1] ?? ''}`.trim());
    this.transcribe = options.transcribe ?? ((name, bytes) => `transcribed ${name} (${bytes.length} bytes)`);
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
  }

  static async start(options: FakeKnowledgeOptions & { port?: number } = {}): Promise<FakeKnowledgeEndpoints> {
    const fake = new FakeKnowledgeEndpoints(options);
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

  /** API base, e.g. `http://127.0.0.1:1234/v1`. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}/v1`;
  }

  /** Docling base (the client appends `/v1/convert/file`). */
  get doclingUrl(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** The next embedding requests fail with these answers, in order. */
  failNextEmbeddings(...failures: InjectedFailure[]): void {
    this.#failures.push(...failures);
  }

  /** Embedding requests after the first `after` wait until release() (a job stuck mid-way). */
  holdEmbeddingsAfter(after: number): void {
    this.#hold = { after, waiters: [] };
  }

  release(): void {
    const hold = this.#hold;
    this.#hold = null;
    for (const w of hold?.waiters ?? []) w();
  }

  embeddedInputs(): string[] {
    return this.embeddingCalls.flatMap((c) => c.inputs);
  }

  async close(): Promise<void> {
    this.release();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/v1/convert/file' && req.method === 'POST') return this.#docling(req, res, raw);
    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return this.#json(res, 401, { error: { message: 'Incorrect API key provided', code: 'invalid_api_key' } });
    }
    if (path === '/v1/embeddings' && req.method === 'POST') return this.#embeddings(res, raw);
    if (path === '/v1/chat/completions' && req.method === 'POST') return this.#vision(res, raw);
    if (path === '/v1/audio/transcriptions' && req.method === 'POST') return this.#transcription(req, res, raw);
    this.#json(res, 404, { error: { message: 'not found' } });
  }

  async #embeddings(res: ServerResponse, raw: Buffer): Promise<void> {
    const n = ++this.embeddingRequests;
    if (this.#hold && n > this.#hold.after) {
      const hold = this.#hold;
      await new Promise<void>((resolve) => hold.waiters.push(resolve));
    }
    const failure = this.#failures.shift();
    if (failure) {
      res.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers });
      res.end(JSON.stringify({ error: { message: `injected failure ${failure.status} with a body that must not leak` } }));
      return;
    }
    let body: { model?: unknown; input?: unknown; encoding_format?: unknown };
    try {
      body = JSON.parse(raw.toString('utf8')) as typeof body;
    } catch {
      return this.#json(res, 400, { error: { message: 'bad json' } });
    }
    const inputs = Array.isArray(body.input) ? body.input.map(String) : [String(body.input ?? '')];
    const model = String(body.model ?? '');
    if (this.recordCalls) this.embeddingCalls.push({ model, inputs });
    this.#json(res, 200, {
      object: 'list',
      model,
      data: inputs.map((text, index) => {
        const v = fakeEmbedding(text, this.dimensions);
        return { object: 'embedding', index, embedding: body.encoding_format === 'base64' ? Buffer.from(Float32Array.from(v).buffer).toString('base64') : v };
      }),
      usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
    });
  }

  #vision(res: ServerResponse, raw: Buffer): void {
    const body = JSON.parse(raw.toString('utf8')) as { model?: string; messages?: Array<{ content?: unknown }> };
    const content = body.messages?.at(-1)?.content;
    const parts = Array.isArray(content) ? (content as Array<{ type?: string; text?: string; image_url?: { url?: string } }>) : [];
    const prompt = parts
      .filter((p) => p.type === 'text')
      .map((p) => p.text ?? '')
      .join('\n');
    const image = parts.find((p) => p.type === 'image_url')?.image_url?.url ?? '';
    this.visionCalls.push({ model: body.model ?? '', prompt, imageDataUrl: image });
    const text = this.describe(prompt, image);
    this.#json(res, 200, {
      id: `chatcmpl-v${this.visionCalls.length}`,
      object: 'chat.completion',
      created: 0,
      model: body.model ?? '',
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    });
  }

  #transcription(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
    const parts = parseMultipart(raw, String(req.headers['content-type'] ?? ''));
    const file = parts.find((p) => p.name === 'file');
    const model = parts.find((p) => p.name === 'model')?.data.toString('utf8') ?? '';
    if (!file) return this.#json(res, 400, { error: { message: 'file is required' } });
    this.transcriptionCalls.push({ model, name: file.filename ?? '', size: file.data.length });
    this.#json(res, 200, { text: this.transcribe(file.filename ?? '', file.data) });
  }

  #docling(req: IncomingMessage, res: ServerResponse, raw: Buffer): void {
    const parts = parseMultipart(raw, String(req.headers['content-type'] ?? ''));
    const file = parts.find((p) => p.name === 'files');
    if (!file) return this.#json(res, 422, { detail: 'files missing' });
    this.doclingCalls.push({ name: file.filename ?? '', size: file.data.length, apiKey: (req.headers['x-api-key'] as string | undefined) ?? null });
    const printable =
      file.data
        .toString('latin1')
        .match(/\(([^)]{2,})\)\s*Tj/g)
        ?.map((m) => m.replace(/^\(|\)\s*Tj$/g, '')) ?? [];
    this.#json(res, 200, {
      document: { filename: file.filename, md_content: `# Converted by Docling\n\n${file.filename} ${printable.join(' ')}`.trim() },
      status: 'success',
    });
  }

  #json(res: ServerResponse, status: number, payload: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(payload));
  }
}
