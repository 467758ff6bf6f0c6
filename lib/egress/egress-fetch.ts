// The one way out (S18): URL sources, Docling, model providers, MCP servers and
// companions all fetch through here. DNS is resolved and vetted by us, and the
// socket connects only to an address that passed the check (custom lookup), so
// a rebinding answer between check and connect changes nothing.
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOneOptions, LookupAllOptions } from 'node:dns';
import type { Readable } from 'node:stream';
import { Agent, fetch as undiciFetch, request as undiciRequest, type Dispatcher, type RequestInit as UndiciRequestInit } from 'undici';
import { toHeaders } from '../http/response-headers.ts';
import { checkAddress, EMPTY_ALLOW_LIST, ipLiteral, parseAllowList, type AddressVerdict, type AllowList } from './address-policy.ts';

export type EgressErrorCode =
  'invalid-url' | 'scheme' | 'credentials' | 'dns' | 'blocked' | 'too-many-redirects' | 'redirect-body' | 'too-large' | 'timeout' | 'network' | 'http-status';

/** Messages name the host and the reason, never a response body or a resolved internal address. */
export class EgressError extends Error {
  override name = 'EgressError';
  readonly code: EgressErrorCode;
  readonly host: string;
  readonly status: number;

  constructor(code: EgressErrorCode, host: string, message: string, status = 0) {
    super(message);
    this.code = code;
    this.host = host;
    this.status = status;
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface EgressOptions {
  /** Admin allow-list: host names or CIDR ranges that may be private (read on every request). */
  allowList?: () => readonly string[] | Promise<readonly string[]>;
  /** Response body cap in bytes; null = none (streamed model answers). Default 10 MiB. */
  maxBytes?: number | null;
  /** Whole request including the body; null = none (the caller has its own). Default 30 s. */
  timeoutMs?: number | null;
  /** Default 5. */
  maxRedirects?: number;
  /** DNS resolution; tests inject answers. Default: the system resolver, all addresses. */
  resolve?: Resolver;
  /** Sent when the caller sets none. */
  userAgent?: string;
}

/** An answer whose body is read as it arrives (model streams): no WHATWG Response or web stream around it. */
export interface StreamedAnswer {
  status: number;
  headers: Headers;
  body: Readable;
}

export interface StreamRequest {
  method: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
}

/**
 * One request whose answer streams, with the same checks as the fetch but no redirect followed
 * (a 3xx comes back as it is) and no size cap: the caller reads and bounds it.
 */
export type EgressStream = (url: string, init: StreamRequest) => Promise<StreamedAnswer>;

export type EgressFetch = ((input: string | URL | Request, init?: RequestInit) => Promise<Response>) & {
  /** Closes idle sockets. */
  close(): Promise<void>;
  /** Model streams: undici's request() costs about half of a fetch per call (see chat-stream.ts). */
  stream: EgressStream;
};

export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_REDIRECTS = 5;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const BLOCKED_CODE = 'EGRESS_BLOCKED';

const systemResolver: Resolver = async (hostname) => {
  const list = await dnsLookup(hostname, { all: true, verbatim: true });
  return list.map((a) => ({ address: a.address, family: a.family }));
};

function hostOf(url: URL): string {
  return url.hostname;
}

function toUrl(input: string | URL): URL {
  try {
    return new URL(input);
  } catch {
    throw new EgressError('invalid-url', '', 'the address is not a valid absolute URL');
  }
}

/** Checks scheme and credentials, resolves the host and vets every address; returns the vetted ones. */
async function vet(url: URL, check: (host: string, address: string) => AddressVerdict, resolve: Resolver): Promise<ResolvedAddress[]> {
  const host = hostOf(url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new EgressError('scheme', host, `only http and https addresses can be fetched, not ${url.protocol.replace(/:$/, '')}`);
  if (url.username !== '' || url.password !== '') throw new EgressError('credentials', host, 'addresses with a user name or password are not fetched');
  const literal = ipLiteral(host);
  let addresses: ResolvedAddress[];
  if (literal !== null) {
    addresses = [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(host);
    } catch {
      throw new EgressError('dns', host, `the host ${host} could not be resolved`);
    }
    if (addresses.length === 0) throw new EgressError('dns', host, `the host ${host} could not be resolved`);
  }
  // One bad answer refuses the host: a round-robin record must not smuggle an internal address.
  for (const a of addresses) {
    const verdict = check(host, a.address);
    if (!verdict.allowed) throw new EgressError('blocked', host, `refused: ${host} is ${literal !== null ? '' : 'resolved to '}${verdict.reason}`);
  }
  return addresses;
}

function limitedBody(body: ReadableStream<Uint8Array>, maxBytes: number, host: string): ReadableStream<Uint8Array> {
  let seen = 0;
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: { done: boolean; value?: Uint8Array };
      try {
        chunk = await reader.read();
      } catch (err) {
        controller.error(mapFailure(err, host));
        return;
      }
      if (chunk.done) {
        controller.close();
        return;
      }
      const value = chunk.value ?? new Uint8Array(0);
      seen += value.byteLength;
      if (seen > maxBytes) {
        await reader.cancel().catch(() => undefined);
        controller.error(new EgressError('too-large', host, `the answer from ${host} is larger than ${formatBytes(maxBytes)}`));
        return;
      }
      controller.enqueue(value);
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${Math.round((n / (1024 * 1024)) * 10) / 10} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} bytes`;
}

function mapFailure(err: unknown, host: string): Error {
  if (err instanceof EgressError) return err;
  const e = err as { name?: string; cause?: unknown; code?: string };
  if (e?.name === 'TimeoutError') return new EgressError('timeout', host, `no complete answer from ${host} in time`);
  if (e?.name === 'AbortError') return err as Error;
  let cause: unknown = e?.cause;
  for (let depth = 0; depth < 4 && cause; depth++) {
    if (cause instanceof EgressError) return cause;
    const c = cause as { code?: string; name?: string; cause?: unknown; message?: string };
    if (c.code === BLOCKED_CODE) return new EgressError('blocked', host, c.message ?? `refused: ${host}`);
    if (c.name === 'TimeoutError' || c.code === 'UND_ERR_CONNECT_TIMEOUT' || c.code === 'UND_ERR_HEADERS_TIMEOUT' || c.code === 'UND_ERR_BODY_TIMEOUT') {
      return new EgressError('timeout', host, `no complete answer from ${host} in time`);
    }
    if (typeof c.code === 'string') return new EgressError('network', host, `cannot reach ${host} (${c.code})`);
    cause = c.cause;
  }
  return new EgressError('network', host, `cannot reach ${host}`);
}

interface Prepared {
  url: URL;
  method: string;
  headers: Headers;
  body: Uint8Array | string | null;
  signal: AbortSignal | null;
  manualRedirect: boolean;
}

async function prepare(input: string | URL | Request, init: RequestInit): Promise<Prepared> {
  if (typeof Request !== 'undefined' && input instanceof Request) {
    const merged = new Request(input, init);
    const buf = merged.body ? new Uint8Array(await merged.arrayBuffer()) : null;
    return {
      url: toUrl(merged.url),
      method: merged.method,
      headers: new Headers(merged.headers),
      body: buf,
      signal: init.signal ?? null,
      manualRedirect: init.redirect === 'manual',
    };
  }
  let body: Uint8Array | string | null;
  const raw = init.body;
  if (raw === undefined || raw === null) body = null;
  else if (typeof raw === 'string') body = raw;
  else if (raw instanceof Uint8Array) body = raw;
  else if (raw instanceof ArrayBuffer) body = new Uint8Array(raw);
  else {
    // FormData, Blob, URLSearchParams, streams: let the platform serialise it once, with its content type.
    const req = new Request('http://placeholder.invalid/', { method: 'POST', body: raw as never, duplex: 'half' } as RequestInit);
    body = new Uint8Array(await req.arrayBuffer());
    const headers = new Headers(init.headers);
    const type = req.headers.get('content-type');
    if (type && !headers.has('content-type')) headers.set('content-type', type);
    return {
      url: toUrl(input as string | URL),
      method: init.method ?? 'POST',
      headers,
      body,
      signal: init.signal ?? null,
      manualRedirect: init.redirect === 'manual',
    };
  }
  return {
    url: toUrl(input as string | URL),
    method: (init.method ?? 'GET').toUpperCase(),
    headers: new Headers(init.headers),
    body,
    signal: init.signal ?? null,
    manualRedirect: init.redirect === 'manual',
  };
}

/**
 * A fetch-compatible function with the S18 checks: http(s) only, every
 * resolved address vetted, the connection pinned to vetted addresses, every
 * redirect re-checked (at most 5), a size cap and a timeout.
 */
export function createEgressFetch(options: EgressOptions = {}): EgressFetch {
  const resolve = options.resolve ?? systemResolver;
  const maxBytes = options.maxBytes === undefined ? DEFAULT_MAX_BYTES : options.maxBytes;
  const timeoutMs = options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : options.timeoutMs;
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  let allow: AllowList = EMPTY_ALLOW_LIST;
  let allowKey: string | null = null;
  // Verdicts per (host, address) for the current allow-list: a model call checks the same address every turn.
  const verdicts = new Map<string, AddressVerdict>();
  const check = (host: string, address: string): AddressVerdict => {
    const key = `${host}\u0000${address}`;
    let verdict = verdicts.get(key);
    if (verdict === undefined) {
      if (verdicts.size >= 1024) verdicts.clear();
      verdict = checkAddress(host, address, allow);
      verdicts.set(key, verdict);
    }
    return verdict;
  };

  // Called by the socket layer for every new connection: it resolves again and
  // hands back only addresses that pass, so what is checked is what is dialled.
  function lookup(
    hostname: string,
    opts: LookupOneOptions | LookupAllOptions | number,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void {
    const wantAll = typeof opts === 'object' && opts !== null && (opts as LookupAllOptions).all === true;
    resolve(hostname).then(
      (list) => {
        const bad = list.map((a) => ({ a, v: check(hostname, a.address) })).find((x) => !x.v.allowed);
        if (list.length === 0 || bad) {
          const err = new Error(
            bad && !bad.v.allowed ? `refused: ${hostname} is resolved to ${bad.v.reason}` : `the host ${hostname} could not be resolved`,
          ) as NodeJS.ErrnoException;
          err.code = list.length === 0 ? 'ENOTFOUND' : BLOCKED_CODE;
          callback(err, wantAll ? [] : '', 0);
          return;
        }
        if (wantAll)
          callback(
            null,
            list.map((a) => ({ address: a.address, family: a.family })),
          );
        else callback(null, list[0]!.address, list[0]!.family);
      },
      () => {
        const err = new Error(`the host ${hostname} could not be resolved`) as NodeJS.ErrnoException;
        err.code = 'ENOTFOUND';
        callback(err, wantAll ? [] : '', 0);
      },
    );
  }

  const agent = new Agent({ connect: { lookup: lookup as never }, connectTimeout: 10_000 });

  const refreshAllowList = async (): Promise<void> => {
    const source = options.allowList ? await options.allowList() : [];
    const key = source.join('\n');
    if (key !== allowKey) {
      allowKey = key;
      allow = source.length > 0 ? parseAllowList(source) : EMPTY_ALLOW_LIST;
      verdicts.clear();
    }
  };

  const stream: EgressStream = async (input, init) => {
    await refreshAllowList();
    const url = toUrl(input);
    const host = hostOf(url);
    await vet(url, check, resolve);
    const headers =
      options.userAgent && !Object.keys(init.headers).some((k) => k.toLowerCase() === 'user-agent')
        ? { ...init.headers, 'user-agent': options.userAgent }
        : init.headers;
    const timeout = timeoutMs === null ? null : AbortSignal.timeout(timeoutMs);
    const signal = timeout ? AbortSignal.any([init.signal, timeout]) : init.signal;
    let res: Dispatcher.ResponseData;
    try {
      res = await undiciRequest(url, { method: init.method as Dispatcher.HttpMethod, headers, body: init.body, signal, dispatcher: agent });
    } catch (err) {
      if (timeout?.aborted) throw new EgressError('timeout', host, `no answer from ${host} in time`);
      throw mapFailure(err, host);
    }
    // An abort before anyone reads the body must not become an uncaught 'error': the reader sees it.
    res.body.on('error', () => undefined);
    return { status: res.statusCode, headers: toHeaders(res.headers), body: res.body };
  };

  const egressFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    await refreshAllowList();
    const p = await prepare(input, init);
    if (!p.headers.has('user-agent') && options.userAgent) p.headers.set('user-agent', options.userAgent);
    const timeout = timeoutMs === null ? null : AbortSignal.timeout(timeoutMs);
    const signals = [p.signal, timeout].filter((s): s is AbortSignal => s !== null);
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    let { url, method, body } = p;
    const headers = p.headers;
    for (let hop = 0; ; hop++) {
      const host = hostOf(url);
      await vet(url, check, resolve);
      let res: Awaited<ReturnType<typeof undiciFetch>>;
      try {
        res = await undiciFetch(url, { method, headers, body, redirect: 'manual', signal, dispatcher: agent } as unknown as UndiciRequestInit);
      } catch (err) {
        if (timeout?.aborted) throw new EgressError('timeout', host, `no answer from ${host} in time`);
        throw mapFailure(err, host);
      }
      if (REDIRECTS.has(res.status) && !p.manualRedirect) {
        const location = res.headers.get('location');
        await res.body?.cancel().catch(() => undefined);
        if (location === null) throw new EgressError('network', host, `${host} answered a redirect without a location`);
        if (hop >= maxRedirects) throw new EgressError('too-many-redirects', host, `more than ${maxRedirects} redirects, starting at ${hostOf(p.url)}`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new EgressError('invalid-url', host, `${host} redirected to an invalid address`);
        }
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          body = null;
          headers.delete('content-type');
          headers.delete('content-length');
        }
        if (next.origin !== url.origin) {
          // Credentials for one host never travel to another.
          headers.delete('authorization');
          headers.delete('cookie');
          headers.delete('proxy-authorization');
        }
        url = next;
        continue;
      }
      const declared = Number(res.headers.get('content-length') ?? '');
      if (maxBytes !== null && Number.isFinite(declared) && declared > maxBytes) {
        await res.body?.cancel().catch(() => undefined);
        throw new EgressError('too-large', host, `the answer from ${host} is larger than ${formatBytes(maxBytes)}`);
      }
      const stream =
        res.body === null
          ? null
          : maxBytes === null
            ? (res.body as ReadableStream<Uint8Array>)
            : limitedBody(res.body as ReadableStream<Uint8Array>, maxBytes, host);
      const out = new Response(stream, { status: res.status, statusText: res.statusText, headers: res.headers as unknown as Headers });
      Object.defineProperty(out, 'url', { value: url.toString() });
      return out;
    }
  };
  // undici destroys an agent once it is closed, and closing a destroyed agent throws "The client is destroyed":
  // every close after the first gets the first one's promise.
  let closed: Promise<void> | null = null;
  return Object.assign(egressFetch, { close: () => (closed ??= agent.close()), stream });
}

export interface FetchedBytes {
  status: number;
  contentType: string;
  bytes: Uint8Array;
  finalUrl: string;
}

/** GET (or the given request) through the egress fetch, reading the whole capped body; a status ≥ 400 is an error without its body. */
export async function fetchBytes(egress: EgressFetch, url: string, init: RequestInit = {}): Promise<FetchedBytes> {
  const res = await egress(url, init);
  const host = (() => {
    try {
      return new URL(res.url || url).hostname;
    } catch {
      return '';
    }
  })();
  if (res.status >= 400) {
    await res.body?.cancel().catch(() => undefined);
    throw new EgressError('http-status', host, `${host} answered HTTP ${res.status}`, res.status);
  }
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    throw mapFailure(err, host);
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', bytes, finalUrl: res.url || url };
}
