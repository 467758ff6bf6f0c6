// One MCP client session per registered server over streamable HTTP: initialize, cached tools/list, tools/call.

import { AsyncLocalStorage } from 'node:async_hooks';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { EgressError } from '../egress/egress-fetch.ts';
import type { Logger } from '../log/logger.ts';
import { isPlainObject, toProviderSchema } from '../tools/json-schema.ts';
import { errorResult, isValidToolName, type ToolContentBlock, type ToolResult } from '../tools/tool-provider.ts';
import { safeErrorMessage } from '../tools/tool-registry.ts';
import { isMcpError, isStreamableHttpError, loadMcpSdk, MCP_CONNECTION_CLOSED, MCP_REQUEST_TIMEOUT } from './mcp-sdk.ts';

export type { FetchLike };

export interface McpToolAnnotationsListed {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A tool as the server lists it, with `$schema` stripped from its input schema. */
export interface ListedTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: McpToolAnnotationsListed;
  /** The tool's `_meta`, or {} when it has none. */
  meta: Record<string, unknown>;
}

export interface McpConnectionOptions {
  /** Shown in error results the model sees ("The tool server <name> …"). */
  name: string;
  url: string;
  /** Read before every HTTP request, so changed credentials apply at once. */
  getHeaders?: () => Promise<Record<string, string>>;
  /** The egress module's fetch; defaults to the global fetch. */
  fetch?: FetchLike;
  logger?: Logger;
  now?: () => number;
  /** How long a tools/list answer is reused when no list_changed arrives. */
  listTtlMs?: number;
  callTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** After a failed connect, calls fail fast for this long instead of waiting on a dead server again. */
  retryBackoffMs?: number;
  onToolsChanged?: () => void;
}

/**
 * Opens a credential for exactly one outbound request: `send` receives the extra headers and
 * performs the request. The value lives only inside that callback, never on the connection.
 */
export type CallAuthorizer = (send: (headers: Record<string, string>) => Promise<Response>) => Promise<Response>;

export interface McpCallOptions {
  /** Request `_meta` (the companion's signed context); never contains secrets. */
  meta?: Record<string, unknown>;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Extra headers for this call's tools/call request only (not initialize, listings or other calls). */
  authorize?: CallAuthorizer;
  /** The error text when the server refuses this call with HTTP 401/403 (default: an admin must check the credentials). */
  unauthorizedMessage?: string;
}

export interface McpConnectionStatus {
  connected: boolean;
  sessionId: string | null;
  lastError: string | null;
  listedAt: number | null;
}

/** The server could not be reached (down, refused, timed out while connecting). */
export class McpUnreachableError extends Error {
  override name = 'McpUnreachableError';
}

class HeaderLoadError extends Error {
  override name = 'HeaderLoadError';
}

/** The per-call credential could not be opened; the request was not sent. */
class CallCredentialError extends Error {
  override name = 'CallCredentialError';
}

interface CallAuth {
  tool: string;
  authorize: CallAuthorizer;
}

/** Whether a request body is the JSON-RPC tools/call of `tool` (the one request a per-call credential is for). */
function isToolsCallOf(body: unknown, tool: string): boolean {
  if (typeof body !== 'string') return false;
  try {
    const message: unknown = JSON.parse(body);
    return isPlainObject(message) && message['method'] === 'tools/call' && isPlainObject(message['params']) && message['params']['name'] === tool;
  } catch {
    return false;
  }
}

const CLIENT_INFO = { name: 'educai', version: '0.1.0' };
const MAX_TOOLS = 256;
const MAX_LIST_PAGES = 10;
const MAX_DESCRIPTION_CHARS = 8000;

export const DEFAULT_LIST_TTL_MS = 5 * 60_000;
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
export const DEFAULT_RETRY_BACKOFF_MS = 15_000;
/** A liveness check must not hold up a turn for long. */
const PING_TIMEOUT_MS = 5_000;

/** describeError's text for an address the egress module refused (private and not allow-listed, S18). */
export const EGRESS_REFUSED = 'refused by the egress policy';

export function isEgressRefusal(error: unknown): boolean {
  return error instanceof EgressError && (error.code === 'blocked' || error.code === 'scheme' || error.code === 'credentials');
}

export function unreachableMessage(name: string): string {
  return `The tool server ${name} is not reachable. Try again later.`;
}

function isSessionError(error: unknown): boolean {
  if (!isStreamableHttpError(error)) return false;
  return error.code === 404 || (error.code === 400 && /session/i.test(error.message));
}

function isTransportError(error: unknown): boolean {
  if (error instanceof McpUnreachableError || error instanceof EgressError) return true;
  if (isStreamableHttpError(error)) {
    const code = error.code ?? -1;
    return code === -1 || code === 404 || code >= 500 || (code === 400 && /session/i.test(error.message));
  }
  if (isMcpError(error)) return error.code === MCP_CONNECTION_CLOSED;
  return (
    error instanceof Error &&
    /ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|socket hang up|other side closed|fetch failed|terminated/i.test(error.message)
  );
}

/** A loggable description: HTTP errors by status only, since their text carries the server's response body. */
export function describeError(error: unknown): string {
  if (isEgressRefusal(error)) return EGRESS_REFUSED;
  if (isStreamableHttpError(error)) return `HTTP ${error.code ?? 'error'}`;
  if (isMcpError(error)) return `MCP error ${error.code}`;
  return safeErrorMessage(error);
}

function annotationsOf(value: unknown): McpToolAnnotationsListed {
  const out: McpToolAnnotationsListed = {};
  if (!isPlainObject(value)) return out;
  if (typeof value['title'] === 'string') out.title = value['title'];
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    if (typeof value[key] === 'boolean') out[key] = value[key];
  }
  return out;
}

function blockToContent(block: unknown): ToolContentBlock | null {
  if (!isPlainObject(block)) return null;
  const type = block['type'];
  if (type === 'text' && typeof block['text'] === 'string') return { type: 'text', text: block['text'] };
  if (type === 'resource' && isPlainObject(block['resource']) && typeof block['resource']['text'] === 'string') {
    return { type: 'text', text: block['resource']['text'] };
  }
  if (type === 'resource_link') return { type: 'text', text: `[resource: ${String(block['name'] ?? 'unnamed')}]` };
  // Binary blocks are not forwarded to the model as base64.
  return { type: 'text', text: `[${typeof type === 'string' ? type : 'unknown'} content omitted]` };
}

/** The SDK's result, as our ToolResult with text blocks only. */
export function toToolResult(raw: unknown): ToolResult {
  if (!isPlainObject(raw)) return errorResult('ERROR: The tool server sent an invalid response.');
  let content: ToolContentBlock[] = Array.isArray(raw['content']) ? raw['content'].map(blockToContent).filter((b): b is ToolContentBlock => b !== null) : [];
  if (content.length === 0 && raw['structuredContent'] !== undefined) content = [{ type: 'text', text: JSON.stringify(raw['structuredContent']) }];
  if (content.length === 0 && raw['toolResult'] !== undefined) content = [{ type: 'text', text: JSON.stringify(raw['toolResult']) }];
  return { content, isError: raw['isError'] === true };
}

/**
 * A lazily opened session with one MCP server. Declares no client capabilities,
 * so the server cannot ask for sampling, elicitation or roots. Calls never throw:
 * every failure becomes an error result the model can read.
 */
export class McpConnection {
  readonly name: string;
  readonly url: string;
  readonly #getHeaders: () => Promise<Record<string, string>>;
  readonly #fetch: FetchLike;
  readonly #logger: Logger | undefined;
  readonly #now: () => number;
  readonly #listTtlMs: number;
  readonly #callTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #retryBackoffMs: number;
  readonly #onToolsChanged: (() => void) | undefined;

  #client: Client | null = null;
  #transport: StreamableHTTPClientTransport | null = null;
  #connecting: Promise<Client> | null = null;
  #listing: Promise<ListedTool[]> | null = null;
  #tools: ListedTool[] | null = null;
  #listedAt: number | null = null;
  #downUntil = 0;
  #lastError: string | null = null;
  #closed = false;
  /** The per-call authorizer of the tools/call running in this async context (never a secret itself). */
  readonly #callAuth = new AsyncLocalStorage<CallAuth>();

  constructor(options: McpConnectionOptions) {
    this.name = options.name;
    this.url = options.url;
    this.#getHeaders = options.getHeaders ?? (async () => ({}));
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init));
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#listTtlMs = options.listTtlMs ?? DEFAULT_LIST_TTL_MS;
    this.#callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#retryBackoffMs = options.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
    this.#onToolsChanged = options.onToolsChanged;
  }

  status(): McpConnectionStatus {
    return { connected: this.#client !== null, sessionId: this.#transport?.sessionId ?? null, lastError: this.#lastError, listedAt: this.#listedAt };
  }

  /** The cached listing, if any, without contacting the server. */
  cachedTools(): ListedTool[] | null {
    return this.#tools === null ? null : [...this.#tools];
  }

  /** Drops the cached listing; the next listTools asks the server. */
  invalidate(): void {
    this.#tools = null;
    this.#listedAt = null;
  }

  /** Throws McpUnreachableError when the server cannot be reached. */
  async listTools(options: { force?: boolean } = {}): Promise<ListedTool[]> {
    if (!options.force && this.#tools !== null && this.#listedAt !== null && this.#now() - this.#listedAt < this.#listTtlMs) {
      return [...this.#tools];
    }
    if (this.#listing === null) {
      this.#listing = this.#withSession((client) => this.#fetchTools(client), true).finally(() => {
        this.#listing = null;
      });
    }
    return [...(await this.#listing)];
  }

  async callTool(name: string, args: Record<string, unknown>, options: McpCallOptions = {}): Promise<ToolResult> {
    const timeout = options.timeoutMs ?? this.#callTimeoutMs;
    const signal = options.signal;
    if (signal?.aborted) return errorResult('ERROR: The tool call was cancelled.');
    const params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> } = { name, arguments: args };
    if (options.meta !== undefined && Object.keys(options.meta).length > 0) params._meta = options.meta;
    try {
      // Retried only after a session error: the server never saw the request then.
      const run = () => this.#withSession((client) => client.callTool(params, undefined, { timeout, ...(signal ? { signal } : {}) }), false);
      const authorize = options.authorize;
      const raw = authorize === undefined ? await run() : await this.#callAuth.run({ tool: name, authorize }, run);
      return toToolResult(raw);
    } catch (error) {
      return this.#callError(error, timeout, signal, options.unauthorizedMessage);
    }
  }

  /**
   * Whether the server answers a ping now (reconnecting once after a transport error). Never
   * throws; a server that is down also enters the retry backoff, so listings fail fast.
   */
  async ping(): Promise<boolean> {
    try {
      await this.#withSession((client) => client.ping({ timeout: Math.min(this.#connectTimeoutMs, PING_TIMEOUT_MS) }), true);
      return true;
    } catch (error) {
      if (!(error instanceof McpUnreachableError)) this.#lastError = describeError(error);
      if (isTransportError(error)) void this.#reset(false);
      return false;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#reset(true);
  }

  async #fetchTools(client: Client): Promise<ListedTool[]> {
    const tools: ListedTool[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: this.#callTimeoutMs });
      for (const tool of result.tools) {
        if (!isValidToolName(tool.name)) {
          this.#logger?.warn({ server: this.name, tool: String(tool.name).slice(0, 100) }, 'MCP tool with an unusable name skipped');
          continue;
        }
        if (seen.has(tool.name) || tools.length >= MAX_TOOLS) continue;
        seen.add(tool.name);
        const listed: ListedTool = {
          name: tool.name,
          description: (tool.description ?? '').slice(0, MAX_DESCRIPTION_CHARS),
          inputSchema: toProviderSchema(tool.inputSchema),
          annotations: annotationsOf(tool.annotations),
          meta: isPlainObject(tool._meta) ? { ...tool._meta } : {},
        };
        if (typeof tool.title === 'string') listed.title = tool.title;
        tools.push(listed);
      }
      cursor = typeof result.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    this.#tools = tools;
    this.#listedAt = this.#now();
    return tools;
  }

  /** Runs `fn` in a session; after a session error (or any transport error when `retryOnTransport`), reconnects once. */
  async #withSession<T>(fn: (client: Client) => Promise<T>, retryOnTransport: boolean): Promise<T> {
    const client = await this.#connect();
    try {
      return await fn(client);
    } catch (error) {
      const retry = isSessionError(error) || (retryOnTransport && isTransportError(error));
      if (!retry || this.#closed) throw error;
      this.#logger?.info({ server: this.name, error: describeError(error) }, 'MCP session lost; reconnecting');
      await this.#reset(false);
      return fn(await this.#connect());
    }
  }

  async #connect(): Promise<Client> {
    if (this.#closed) throw new McpUnreachableError(`connection to ${this.name} is closed`);
    if (this.#client !== null) return this.#client;
    if (this.#connecting !== null) return this.#connecting;
    if (this.#now() < this.#downUntil) throw new McpUnreachableError(this.#lastError ?? `${this.name} is not reachable`);
    this.#connecting = this.#open().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  async #open(): Promise<Client> {
    const { Client, StreamableHTTPClientTransport, ToolListChangedNotificationSchema } = await loadMcpSdk();
    const transport = new StreamableHTTPClientTransport(new URL(this.url), { fetch: this.#fetchWithHeaders(), redirectPolicy: 'same-origin' });
    // No capabilities: no sampling, no elicitation, no roots.
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      this.invalidate();
      this.#onToolsChanged?.();
    });
    client.onerror = (error) => {
      this.#logger?.debug({ server: this.name, error: describeError(error) }, 'MCP transport error');
    };
    client.onclose = () => {
      if (this.#client === client) {
        this.#client = null;
        this.#transport = null;
      }
    };
    try {
      await client.connect(transport, { timeout: this.#connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      this.#lastError = describeError(error);
      this.#downUntil = this.#now() + this.#retryBackoffMs;
      this.#logger?.warn({ server: this.name, error: this.#lastError }, 'MCP server not reachable');
      if (error instanceof HeaderLoadError) throw error;
      if (isStreamableHttpError(error) && (error.code === 401 || error.code === 403)) throw error;
      throw new McpUnreachableError(`${this.name}: ${this.#lastError}`);
    }
    this.#client = client;
    this.#transport = transport;
    this.#lastError = null;
    this.#downUntil = 0;
    return client;
  }

  #fetchWithHeaders(): FetchLike {
    const base = this.#fetch;
    return async (url, init) => {
      let extra: Record<string, string>;
      try {
        extra = await this.#getHeaders();
      } catch {
        throw new HeaderLoadError(`the credentials for ${this.name} cannot be read`);
      }
      const headers = new Headers(init?.headers);
      for (const [key, value] of Object.entries(extra)) headers.set(key, value);
      // A per-call credential goes on its own tools/call only, opened right before the send.
      const auth = this.#callAuth.getStore();
      if (auth === undefined || init?.method !== 'POST' || !isToolsCallOf(init.body, auth.tool)) return base(url, { ...init, headers });
      let sent = false;
      try {
        return await auth.authorize((callHeaders) => {
          sent = true;
          const own = new Headers(headers);
          for (const [key, value] of Object.entries(callHeaders)) own.set(key, value);
          return base(url, { ...init, headers: own });
        });
      } catch (error) {
        if (sent) throw error;
        throw new CallCredentialError(`the call credential for ${this.name} cannot be opened`);
      }
    };
  }

  async #reset(terminate: boolean): Promise<void> {
    const client = this.#client;
    const transport = this.#transport;
    this.#client = null;
    this.#transport = null;
    this.invalidate();
    if (terminate && transport?.sessionId) await transport.terminateSession().catch(() => undefined);
    await client?.close().catch(() => undefined);
  }

  #callError(error: unknown, timeoutMs: number, signal: AbortSignal | undefined, unauthorizedMessage: string | undefined): ToolResult {
    if (signal?.aborted) return errorResult('ERROR: The tool call was cancelled.');
    if (isMcpError(error) && error.code === MCP_REQUEST_TIMEOUT) {
      return errorResult(`ERROR: The tool server ${this.name} did not answer within ${Math.max(1, Math.round(timeoutMs / 1000))} seconds.`);
    }
    if (error instanceof HeaderLoadError)
      return errorResult(`ERROR: The credentials for the tool server ${this.name} cannot be read. An admin must enter them again.`);
    if (error instanceof CallCredentialError) return errorResult(`ERROR: The credential for the tool server ${this.name} cannot be read. Nothing was sent.`);
    if (isStreamableHttpError(error) && (error.code === 401 || error.code === 403)) {
      if (unauthorizedMessage !== undefined) return errorResult(unauthorizedMessage);
      return errorResult(`ERROR: The tool server ${this.name} refused the request (HTTP ${error.code}). An admin must check its credentials.`);
    }
    if (isTransportError(error)) {
      this.#lastError = describeError(error);
      // A dropped session is rebuilt on the next call.
      void this.#reset(false);
      return errorResult(`ERROR: ${unreachableMessage(this.name)}`);
    }
    this.#logger?.warn({ server: this.name, error: describeError(error) }, 'MCP tool call failed');
    if (isMcpError(error)) return errorResult(`ERROR: The tool server ${this.name} reported an error: ${safeErrorMessage(error)}`);
    return errorResult(`ERROR: The tool server ${this.name} sent an invalid response.`);
  }
}
