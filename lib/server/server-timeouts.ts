/**
 * The HTTP server's clocks (README, "Timeouts"). Every caller is Nextcloud's server: AppAPI's proxy
 * forwards a browser request only once it holds the whole body (at most 256 KiB of JSON here), and Talk
 * gives up on a webhook after 3 s, so a request that is not fully received within a few seconds is
 * stalled or hostile. Node's defaults (60 s for the headers, 300 s for the request, checked every 30 s)
 * let a slow sender hold a connection for minutes.
 */
export const SERVER_TIMEOUTS = {
  /** Until the last header line arrives. */
  headersTimeout: 5_000,
  /** Until the whole request, body included, arrives (the answer may take longer: an agent turn does). */
  requestTimeout: 10_000,
  /** How often the two above are checked; they can overshoot by this much. */
  connectionsCheckingInterval: 1_000,
  /** Longer than the proxies' idle keep-alive, so the server never closes a connection they are about to reuse. */
  keepAliveTimeout: 65_000,
} as const;
