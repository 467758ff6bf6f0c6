import { createHash } from 'node:crypto';
import type { OpenAI } from 'openai';

// The SDK serves non-streamed calls only (streams: chat-stream.ts). It is loaded with the
// first such call, not at start-up (it is a large part of the cold start).
type Sdk = typeof import('openai');
let sdk: Sdk | null = null;
async function loadSdk(): Promise<Sdk> {
  return (sdk ??= await import('openai'));
}
/** Its error classes; before the SDK is loaded, no error can come from it. */
const isSdkError = (err: unknown, name: 'APIError' | 'APIConnectionTimeoutError' | 'APIUserAbortError'): boolean => sdk !== null && err instanceof sdk[name];
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions/completions';
import type { Logger } from '../log/logger.ts';
import type { EgressStream, StreamedAnswer } from '../egress/egress-fetch.ts';
import { chunkBatches, postChat, postChatStream, ProviderHttpError, ProviderStreamError } from './chat-stream.ts';
import type { LlmSettings, LlmSettingsService } from './llm-settings.ts';
import { endpointBaseUrl, type ModelCatalog, type ResolvedModel } from './model-catalog.ts';
import { LlmError, LlmNotConfiguredError, ModelNotAllowedError, type EndpointName } from './model-ref.ts';

export { LlmError, LlmNotConfiguredError, ModelNotAllowedError };
import { LlmAbortedError, LlmTimeoutError, LlmUnavailableError, TRANSIENT_TEXT, fromStatus } from './provider-errors.ts';
import { buildChatBody, type ChatRequest } from './chat-request.ts';

export type { ChatMessage, ChatRequest } from './chat-request.ts';

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export type StreamEvent =
  | { type: 'text'; delta: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; argumentsDelta?: string }
  | ({ type: 'usage' } & TokenUsage)
  /** The stream failed and is retried on the fallback model: the consumer must drop what it buffered. */
  | { type: 'restart'; reason: string }
  | { type: 'done'; finishReason: string | null; model: string };

export interface ChatCompletionResult {
  content: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
  usage: TokenUsage | null;
  finishReason: string | null;
  /** The reference of the model that answered (the fallback's when it was used). */
  model: string;
}

export interface StreamOptions {
  /**
   * True once the consumer has passed output on (e.g. to Talk). After that, a
   * failure is not retried on the fallback model. Absent: nothing is committed.
   */
  committed?: () => boolean;
}

export interface ChatClientOptions {
  settings: LlmSettingsService;
  catalog: ModelCatalog;
  /** The egress module's fetch (S18). */
  fetch?: typeof fetch;
  /** The egress module's streaming request, for streamed answers; without it they go through `fetch`. */
  streamRequest?: EgressStream;
  logger?: Logger;
  /** Overrides the admin's chat/stream timeouts (tests, benchmarks). */
  timeoutOverridesMs?: { chat?: number; stream?: number };
  /**
   * Pause between two reads of a streamed answer, so tokens that arrive
   * meanwhile are read together (see chunkBatches). Talk replies are flushed
   * per paragraph, so this delay is never visible. It applies only while more
   * than `streamPacingAbove` streams run at once (default 32), so a quiet
   * instance answers without it, and grows with the number of streams (one
   * step per 250 streams, at most 4 steps), so the reads per second stay
   * about level under load. Default 100 ms; 0: none.
   */
  streamReadPaceMs?: number;
  streamPacingAbove?: number;
}

/** The pause between two reads of one stream while `active` streams run (see streamReadPaceMs). */
export function streamPause(active: number, pacingAbove: number, paceMs: number): number {
  if (active <= pacingAbove || paceMs <= 0) return 0;
  return paceMs * Math.min(4, Math.ceil(active / 250));
}

/** Maps whatever the SDK or fetch threw to one LlmError. Abort first: the caller's signal wins over everything. */
export function toLlmError(err: unknown, model: string, userSignal?: AbortSignal, deadline?: AbortSignal): LlmError {
  if (err instanceof LlmError) return err;
  if (userSignal?.aborted) return new LlmAbortedError(model);
  if (deadline?.aborted || isSdkError(err, 'APIConnectionTimeoutError')) return new LlmTimeoutError(model, err);
  if (isSdkError(err, 'APIUserAbortError')) return new LlmAbortedError(model);
  if (err instanceof ProviderHttpError) return fromStatus(err.status, err.headers, model, err);
  if (err instanceof ProviderStreamError)
    return new LlmUnavailableError(model, 'provider reported an error', { transient: TRANSIENT_TEXT.test(err.message), cause: err });
  const apiError = isSdkError(err, 'APIError') ? (err as InstanceType<Sdk['APIError']>) : null;
  if (apiError && typeof apiError.status === 'number') return fromStatus(apiError.status, apiError.headers, model, err);
  if (apiError) {
    return new LlmUnavailableError(model, 'provider reported an error', { transient: TRANSIENT_TEXT.test(apiError.message), cause: err });
  }
  // Dropped connections (TypeError "terminated"), refused connects, malformed SSE.
  return new LlmUnavailableError(model, 'connection failed', { cause: err });
}

function usageOf(u: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null | undefined): TokenUsage | null {
  if (!u) return null;
  const promptTokens = u.prompt_tokens ?? 0;
  const completionTokens = u.completion_tokens ?? 0;
  return { promptTokens, completionTokens, totalTokens: u.total_tokens ?? promptTokens + completionTokens };
}

function isRetryableWithoutUsage(err: unknown): boolean {
  return err instanceof ProviderHttpError && (err.status === 400 || err.status === 422);
}

const SILENT_LOGGER = { error() {}, warn() {}, info() {}, debug() {} };

/** A deadline for a whole call (the SDK's own timeout stops at the response headers). */
function deadline(ms: number, user?: AbortSignal): { signal: AbortSignal; deadline: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  return { signal: user ? AbortSignal.any([user, controller.signal]) : controller.signal, deadline: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * Chat completions against the OpenAI-compatible endpoints. Every call checks
 * the model against the admin's allowed list, and transient failures get one
 * retry on the admin's fallback model.
 */
export class ChatClient {
  readonly #settings: LlmSettingsService;
  readonly #catalog: ModelCatalog;
  readonly #fetch: typeof fetch | undefined;
  readonly #streamRequest: EgressStream | undefined;
  readonly #logger: Logger | undefined;
  readonly #overrides: { chat?: number; stream?: number };
  readonly #paceMs: number;
  readonly #pacingAbove: number;
  #activeStreams = 0;
  readonly #clients = new Map<string, OpenAI>();

  constructor(options: ChatClientOptions) {
    this.#settings = options.settings;
    this.#catalog = options.catalog;
    this.#fetch = options.fetch;
    this.#streamRequest = options.streamRequest;
    this.#logger = options.logger;
    this.#overrides = options.timeoutOverridesMs ?? {};
    this.#paceMs = options.streamReadPaceMs ?? 100;
    this.#pacingAbove = options.streamPacingAbove ?? 32;
  }

  stream(req: ChatRequest, opts: StreamOptions = {}): AsyncIterable<StreamEvent> {
    return this.#stream(req, opts);
  }

  async complete(req: ChatRequest): Promise<ChatCompletionResult> {
    if (req.signal?.aborted) throw new LlmAbortedError(req.model);
    const settings = await this.#settings.get();
    const model = await this.#catalog.assertAllowed(req.model);
    try {
      return await this.#completeOnce(settings, model, req);
    } catch (err) {
      const fallback = await this.#fallbackAfter(settings, model, err as LlmError);
      if (!fallback) throw err;
      return this.#completeOnce(settings, fallback, req);
    }
  }

  async *#stream(req: ChatRequest, opts: StreamOptions): AsyncGenerator<StreamEvent> {
    if (req.signal?.aborted) throw new LlmAbortedError(req.model);
    const settings = await this.#settings.get();
    const model = await this.#catalog.assertAllowed(req.model);
    // yield* rather than for-await + yield: one async step less per token.
    const progress = { yielded: false };
    let fallback: ResolvedModel | null;
    try {
      yield* this.#streamOnce(settings, model, req, progress);
      return;
    } catch (err) {
      if (opts.committed?.()) throw err;
      fallback = await this.#fallbackAfter(settings, model, err as LlmError);
      if (!fallback) throw err;
      if (progress.yielded) yield { type: 'restart', reason: `${(err as LlmError).code}; retrying on the fallback model` };
    }
    yield* this.#streamOnce(settings, fallback, req, { yielded: false });
  }

  /** The fallback model when this failure deserves one retry on it, else null. */
  async #fallbackAfter(settings: LlmSettings, model: ResolvedModel, err: LlmError): Promise<ResolvedModel | null> {
    if (!(err instanceof LlmError) || !err.transient || err instanceof LlmAbortedError || settings.fallbackModel === null) return null;
    let fallback: ResolvedModel;
    try {
      fallback = await this.#catalog.assertAllowed(settings.fallbackModel, { asFallback: true });
    } catch (fallbackErr) {
      this.#logger?.warn({ err: fallbackErr, fallback: settings.fallbackModel }, 'fallback model unusable');
      return null;
    }
    if (fallback.ref === model.ref) return null;
    this.#logger?.warn({ model: model.ref, fallback: fallback.ref, code: err.code, status: err.status }, 'LLM call failed, retrying on the fallback model');
    return fallback;
  }

  /**
   * One streamed call, without the SDK (see chat-stream.ts): the per-token
   * path is a body read, the SSE decoder and JSON.parse.
   */
  async *#streamOnce(settings: LlmSettings, model: ResolvedModel, req: ChatRequest, progress: { yielded: boolean }): AsyncGenerator<StreamEvent> {
    const timeoutMs = this.#overrides.stream ?? settings.streamTimeoutSeconds * 1000;
    const limit = deadline(timeoutMs, req.signal);
    const signal = limit.signal;
    try {
      const target = await this.#target(settings, model);
      const body = buildChatBody(model, req, settings);
      let includeUsage = true;
      let res: Response | StreamedAnswer;
      for (;;) {
        const params = { ...body, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) };
        try {
          res = this.#streamRequest
            ? await postChatStream(this.#streamRequest, target.url, target.key, JSON.stringify(params), signal)
            : await postChat(this.#fetch ?? fetch, target.url, target.key, JSON.stringify(params), signal);
          break;
        } catch (err) {
          // Some servers reject stream_options; ask once more without it.
          if (includeUsage && isRetryableWithoutUsage(err) && !signal.aborted) {
            includeUsage = false;
            continue;
          }
          throw err;
        }
      }
      let finishReason: string | null = null;
      let finished = false;
      let usage: TokenUsage | null = null;
      // Pacing applies only while many streams run at once (see streamReadPaceMs).
      this.#activeStreams += 1;
      try {
        for await (const batch of chunkBatches(res, () => streamPause(this.#activeStreams, this.#pacingAbove, this.#paceMs))) {
          // The text of a batch's consecutive chunks goes out as one event: every event costs an async step in
          // each generator and consumer above, and a paced read holds several tokens.
          let text = '';
          for (const chunk of batch) {
            // The consumer may abort while a batch is being handed out.
            if (signal.aborted) throw signal.reason;
            const u = usageOf(chunk.usage);
            if (u) usage = u;
            // The usage chunk comes with `choices: []`.
            const choice = chunk.choices?.[0];
            if (!choice) continue;
            const delta = choice.delta ?? {};
            if (typeof delta.content === 'string' && delta.content !== '') text += delta.content;
            if (delta.tool_calls?.length && text !== '') {
              progress.yielded = true;
              yield { type: 'text', delta: text };
              text = '';
            }
            for (const call of delta.tool_calls ?? []) {
              const event: StreamEvent = { type: 'tool_call', index: call.index ?? 0 };
              if (call.id) event.id = call.id;
              if (call.function?.name) event.name = call.function.name;
              if (typeof call.function?.arguments === 'string' && call.function.arguments !== '') event.argumentsDelta = call.function.arguments;
              progress.yielded = true;
              yield event;
            }
            if (choice.finish_reason) {
              finishReason = choice.finish_reason;
              finished = true;
            }
          }
          if (text !== '') {
            if (signal.aborted) throw signal.reason;
            progress.yielded = true;
            yield { type: 'text', delta: text };
          }
        }
      } finally {
        this.#activeStreams -= 1;
      }
      if (signal.aborted) throw signal.reason;
      if (!finished) throw new LlmUnavailableError(model.ref, 'stream ended before the model finished');
      progress.yielded = true;
      if (usage) yield { type: 'usage', ...usage };
      yield { type: 'done', finishReason, model: model.ref };
    } catch (err) {
      throw toLlmError(err, model.ref, req.signal, limit.deadline);
    } finally {
      limit.clear();
    }
  }

  async #completeOnce(settings: LlmSettings, model: ResolvedModel, req: ChatRequest): Promise<ChatCompletionResult> {
    const timeoutMs = this.#overrides.chat ?? settings.chatTimeoutSeconds * 1000;
    const limit = deadline(timeoutMs, req.signal);
    try {
      const client = await this.#client(settings, model);
      const params = buildChatBody(model, req, settings);
      const completion: ChatCompletion = await client.chat.completions.create(params as unknown as ChatCompletionCreateParamsNonStreaming, {
        signal: limit.signal,
        timeout: timeoutMs,
        maxRetries: 0,
      });
      if (limit.signal.aborted) throw toLlmError(new Error('aborted'), model.ref, req.signal, limit.deadline);
      const choice = completion.choices?.[0];
      if (!choice) throw new LlmUnavailableError(model.ref, 'answer without choices');
      const toolCalls: ChatCompletionResult['toolCalls'] = [];
      for (const call of choice.message?.tool_calls ?? []) {
        if (call.type === 'function') toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments ?? '' });
      }
      return {
        content: typeof choice.message?.content === 'string' ? choice.message.content : '',
        toolCalls,
        usage: usageOf(completion.usage),
        finishReason: choice.finish_reason ?? null,
        model: model.ref,
      };
    } catch (err) {
      throw toLlmError(err, model.ref, req.signal, limit.deadline);
    } finally {
      limit.clear();
    }
  }

  /** Where a streamed call goes, and its key (read from the vault on every call, so a new key applies at once). */
  async #target(settings: LlmSettings, model: ResolvedModel): Promise<{ url: string; key: string | null }> {
    const endpoint = endpointUrl(settings, model.endpoint);
    if (endpoint === null) throw new LlmNotConfiguredError(`the ${model.endpoint} endpoint`, model.ref);
    return { url: `${endpointBaseUrl(endpoint)}/chat/completions`, key: await this.#settings.getKey(model.endpoint) };
  }

  /** One SDK client per endpoint URL and key; the key is read from the vault on every call, so a new key applies at once. */
  async #client(settings: LlmSettings, model: ResolvedModel): Promise<OpenAI> {
    const endpoint = endpointUrl(settings, model.endpoint);
    if (endpoint === null) throw new LlmNotConfiguredError(`the ${model.endpoint} endpoint`, model.ref);
    const key = await this.#settings.getKey(model.endpoint);
    const baseURL = endpointBaseUrl(endpoint);
    const cacheKey = `${baseURL}\n${key === null ? '' : createHash('sha256').update(key).digest('hex')}`;
    const hit = this.#clients.get(cacheKey);
    if (hit) return hit;
    const { OpenAI: OpenAIClient } = await loadSdk();
    const client = new OpenAIClient({
      baseURL,
      // The SDK insists on a key; without one the Authorization header is removed below.
      apiKey: key ?? 'no-key',
      adminAPIKey: null,
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: settings.chatTimeoutSeconds * 1000,
      logLevel: 'off',
      logger: SILENT_LOGGER,
      fetchOptions: { redirect: 'manual' },
      ...(key === null ? { defaultHeaders: { Authorization: null } } : {}),
      ...(this.#fetch ? { fetch: this.#fetch } : {}),
    });
    if (this.#clients.size >= 16) this.#clients.clear();
    this.#clients.set(cacheKey, client);
    return client;
  }
}

function endpointUrl(settings: LlmSettings, which: EndpointName): string | null {
  return which === 'primary' ? settings.primaryEndpoint : settings.secondaryEndpoint;
}
