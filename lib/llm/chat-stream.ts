// The streamed chat call without the SDK: one POST through the injected fetch
// (the egress module, S18), then the SSE body decoded in place. A streamed
// answer costs one body read per token, so every layer here counts: the SDK's
// stream added a line decoder, an SSE decoder and two async iterators per token.
import type { EgressStream, StreamedAnswer } from '../egress/egress-fetch.ts';
import { SseDecoder } from './sse-decoder.ts';

/** A non-2xx answer: the status and headers are what the error mapping needs; the body is not kept. */
export class ProviderHttpError extends Error {
  override name = 'ProviderHttpError';
  readonly status: number;
  readonly headers: Headers;
  constructor(status: number, headers: Headers) {
    super(`HTTP ${status}`);
    this.status = status;
    this.headers = headers;
  }
}

/** An `error` event (or an `error` member) inside a 200 stream. The message is the provider's and stays internal. */
export class ProviderStreamError extends Error {
  override name = 'ProviderStreamError';
}

/** The parts of a chunk we read (OpenAI's ChatCompletionChunk, loosely). */
export interface ChunkLike {
  choices?: Array<{
    delta?: { content?: unknown; tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: unknown } }> };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  error?: unknown;
}

function providerMessage(error: unknown): string {
  const e = error as { message?: unknown } | null | undefined;
  if (e && typeof e === 'object' && e.message !== undefined) return typeof e.message === 'string' ? e.message : JSON.stringify(e.message);
  return JSON.stringify(error) ?? 'provider error';
}

/** The request headers of a chat call, for both send paths. */
function chatHeaders(key: string | null): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream, application/json' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return headers;
}

/** POSTs the body; resolves with the response once it is 2xx, else throws ProviderHttpError (the body is discarded). */
export async function postChat(fetchImpl: typeof fetch, url: string, key: string | null, body: string, signal: AbortSignal): Promise<Response> {
  const res = await fetchImpl(url, { method: 'POST', headers: chatHeaders(key), body, signal, redirect: 'manual' });
  if (res.status < 200 || res.status >= 300) {
    await res.body?.cancel().catch(() => undefined);
    throw new ProviderHttpError(res.status, res.headers);
  }
  return res;
}

/** As postChat, through the egress module's streaming request (no WHATWG Response, no web stream). */
export async function postChatStream(stream: EgressStream, url: string, key: string | null, body: string, signal: AbortSignal): Promise<StreamedAnswer> {
  const res = await stream(url, { method: 'POST', headers: chatHeaders(key), body, signal });
  if (res.status < 200 || res.status >= 300) {
    res.body.destroy();
    throw new ProviderHttpError(res.status, res.headers);
  }
  return res;
}

interface BodyReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
  cancel(): void;
}

function readerOf(res: Response | StreamedAnswer): BodyReader | null {
  if (res.body === null) return null;
  if (res instanceof Response || !('destroy' in res.body)) {
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    return { read: () => reader.read(), cancel: () => void reader.cancel().catch(() => undefined) };
  }
  // A Node stream's iterator hands out everything buffered in one step, which is what the pacing wants.
  const body = res.body;
  const iterator = body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  return {
    read: async () => {
      const next = await iterator.next();
      return next.done ? { done: true } : { done: false, value: next.value };
    },
    cancel: () => body.destroy(),
  };
}

async function wholeJson(reader: BodyReader): Promise<unknown> {
  const parts: Uint8Array[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) if (r.value) parts.push(r.value);
  return JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown;
}

/**
 * The chunks of a streamed answer, one batch per body read (usually one
 * chunk; more when the process fell behind). Stops at `[DONE]`; throws
 * ProviderStreamError for an error event and SyntaxError for malformed JSON.
 * A server that ignored `stream: true` and answered JSON gets one synthetic chunk.
 * With `paceMs` (a number, or a function asked before every pause), a read that returned data waits that long before the next:
 * the body buffers meanwhile, so a fast stream costs one read (and one trip
 * through the consumers) per batch of tokens instead of per token. The first
 * token is never delayed.
 */
export async function* chunkBatches(res: Response | StreamedAnswer, paceMs: number | (() => number) = 0): AsyncGenerator<ChunkLike[]> {
  const reader = readerOf(res);
  if (reader === null) return;
  if ((res.headers.get('content-type') ?? '').toLowerCase().includes('application/json')) {
    try {
      yield [asChunk(await wholeJson(reader))];
    } finally {
      reader.cancel();
    }
    return;
  }
  const decoder = new SseDecoder();
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      const events = done ? decoder.finish() : decoder.push(value ?? new Uint8Array(0));
      let batch: ChunkLike[] | null = null;
      for (const sse of events) {
        if (sse.data === '[DONE]') {
          finished = true;
          break;
        }
        const data = JSON.parse(sse.data) as ChunkLike | null;
        if (sse.event === 'error') throw new ProviderStreamError(providerMessage((data as ChunkLike | null)?.error ?? data));
        if (data?.error) throw new ProviderStreamError(providerMessage(data.error));
        if (data !== null && typeof data === 'object') (batch ??= []).push(data);
      }
      if (batch !== null) yield batch;
      if (done) return;
      const pause = typeof paceMs === 'function' ? paceMs() : paceMs;
      if (pause > 0 && !finished) await new Promise((resolve) => setTimeout(resolve, pause));
      if (finished) {
        // Read to the end so the connection can be reused; events after [DONE] are ignored.
        while (!(await reader.read()).done);
        return;
      }
    }
  } finally {
    // Early exit (error, abort, consumer stopped): release the connection.
    reader.cancel();
  }
}

/** A whole (non-streamed) completion as one chunk. */
function asChunk(json: unknown): ChunkLike {
  const j = json as {
    error?: unknown;
    choices?: Array<{
      message?: { content?: unknown; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: unknown } }> };
      finish_reason?: string | null;
    }>;
    usage?: ChunkLike['usage'];
  } | null;
  if (j === null || typeof j !== 'object') throw new SyntaxError('the answer is not a JSON object');
  if (j.error) throw new ProviderStreamError(providerMessage(j.error));
  const choice = j.choices?.[0];
  if (!choice) return { choices: [], usage: j.usage ?? null };
  const message = choice.message ?? {};
  return {
    choices: [
      {
        delta: {
          content: message.content,
          tool_calls: (message.tool_calls ?? []).map((t, index) => ({ index, ...(t.id ? { id: t.id } : {}), ...(t.function ? { function: t.function } : {}) })),
        },
        finish_reason: choice.finish_reason ?? 'stop',
      },
    ],
    usage: j.usage ?? null,
  };
}
