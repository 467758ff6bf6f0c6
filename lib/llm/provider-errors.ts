// One error per way a model provider call fails (auth, rate limit, timeout, bad request, unavailable, aborted), all LlmErrors with a public message.
import { LlmError } from './model-ref.ts';

export class LlmTimeoutError extends LlmError {
  override name = 'LlmTimeoutError';
  constructor(model: string, cause?: unknown, status?: number) {
    super(`LLM call to ${model} timed out`, {
      publicMessage: 'The AI service took too long to answer. Please try again.',
      code: 'llm_timeout',
      transient: true,
      model,
      cause,
      ...(status === undefined ? {} : { status }),
    });
  }
}

export class LlmRateLimitError extends LlmError {
  override name = 'LlmRateLimitError';
  /** From Retry-After / retry-after-ms, when the provider sent one. */
  readonly retryAfterSeconds: number | null;
  /** `retry-after*` and `x-ratelimit-*` response headers, lower-cased. */
  readonly rateLimitHeaders: Record<string, string>;

  constructor(model: string, headers: Headers | undefined, cause?: unknown) {
    super(`LLM call to ${model} was rate limited (HTTP 429)`, {
      publicMessage: 'The AI service is busy right now. Please try again in a moment.',
      code: 'llm_rate_limited',
      status: 429,
      transient: true,
      model,
      cause,
    });
    this.rateLimitHeaders = {};
    headers?.forEach((value, name) => {
      const n = name.toLowerCase();
      if (n.startsWith('retry-after') || n.startsWith('x-ratelimit-') || n.startsWith('ratelimit')) this.rateLimitHeaders[n] = value;
    });
    this.retryAfterSeconds = parseRetryAfter(this.rateLimitHeaders);
  }
}

export class LlmAuthError extends LlmError {
  override name = 'LlmAuthError';
  constructor(model: string, status: number, cause?: unknown) {
    super(`LLM call to ${model} was refused (HTTP ${status})`, {
      publicMessage: 'The AI service refused the request. Please ask your administrator to check the AI configuration.',
      code: 'llm_auth',
      status,
      model,
      cause,
    });
  }
}

export class LlmBadRequestError extends LlmError {
  override name = 'LlmBadRequestError';
  constructor(model: string, status: number, cause?: unknown) {
    super(`LLM call to ${model} was rejected as invalid (HTTP ${status})`, {
      publicMessage: 'The AI service could not process this request.',
      code: 'llm_bad_request',
      status,
      model,
      cause,
    });
  }
}

export class LlmUnavailableError extends LlmError {
  override name = 'LlmUnavailableError';
  constructor(model: string, detail: string, options: { status?: number; transient?: boolean; cause?: unknown } = {}) {
    super(`LLM call to ${model} failed: ${detail}`, {
      publicMessage: 'The AI service is not available right now. Please try again later.',
      code: 'llm_unavailable',
      transient: options.transient ?? true,
      model,
      cause: options.cause,
      ...(options.status === undefined ? {} : { status: options.status }),
    });
  }
}

export class LlmAbortedError extends LlmError {
  override name = 'LlmAbortedError';
  constructor(model: string) {
    super(`LLM call to ${model} was aborted`, { publicMessage: 'The request was cancelled.', code: 'llm_aborted', model });
  }
}

function parseRetryAfter(headers: Record<string, string>): number | null {
  const ms = headers['retry-after-ms'];
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms) / 1000);
  const ra = headers['retry-after'];
  if (ra === undefined) return null;
  if (/^\d+(\.\d+)?$/.test(ra.trim())) return Number(ra);
  const date = Date.parse(ra);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

// Status-less provider errors (an `error` event inside a stream) that are worth the fallback.
export const TRANSIENT_TEXT =
  /timeout|timed out|connection|dns|ssl|not found|model_not_found|no (healthy )?deployments|overloaded|service unavailable|bad gateway|gateway timeout|try again in/i;

/** The error for an HTTP status, from the SDK's APIError or our own stream request. */
export function fromStatus(status: number, headers: Headers | undefined, model: string, err: unknown): LlmError {
  if (status === 401 || status === 403) return new LlmAuthError(model, status, err);
  if (status === 400 || status === 422) return new LlmBadRequestError(model, status, err);
  if (status === 429) return new LlmRateLimitError(model, headers, err);
  if (status === 408) return new LlmTimeoutError(model, err, status);
  if (status === 404 || status === 409 || status >= 500) return new LlmUnavailableError(model, `HTTP ${status}`, { status, cause: err });
  return new LlmUnavailableError(model, `HTTP ${status}`, { status, transient: false, cause: err });
}
