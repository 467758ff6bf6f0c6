// Provider rate-limit headers of chat responses reach the limiter, which then holds calls until the provider has room.
import type { EgressStream } from '../egress/egress-fetch.ts';
import type { Logger } from '../log/logger.ts';
import type { RateLimiter } from './rate-limiter.ts';

/**
 * Passes provider rate-limit headers of chat responses (x-ratelimit-*, ratelimit-*,
 * retry-after) to the limiter, which then holds calls until the provider has room.
 */
export function observingRateLimits(base: typeof fetch, limiter: RateLimiter, logger: Logger): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    observeChatRateLimits(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, res.headers, limiter, logger);
    return res;
  };
}

/** The same for streamed answers through the egress module's request. */
export function observingStreamRateLimits(base: EgressStream, limiter: RateLimiter, logger: Logger): EgressStream {
  return async (url, init) => {
    const res = await base(url, init);
    observeChatRateLimits(url, res.headers, limiter, logger);
    return res;
  };
}

function observeChatRateLimits(url: string, responseHeaders: Headers, limiter: RateLimiter, logger: Logger): void {
  if (!/\/chat\/completions(?:[?#]|$)/.test(url)) return;
  const headers: Record<string, string> = {};
  responseHeaders.forEach((value, name) => {
    const n = name.toLowerCase();
    if (n.startsWith('x-ratelimit-') || n.startsWith('ratelimit') || n === 'retry-after') headers[n] = value;
  });
  if (Object.keys(headers).length > 0)
    void limiter.observeProviderHeaders('chat', headers).catch((err: unknown) => logger.warn({ err }, 'could not record provider rate-limit headers'));
}
