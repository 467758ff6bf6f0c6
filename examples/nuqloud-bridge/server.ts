// NuQloud bridge: a reference companion provider for educai (Talk AI). A small MCP server over
// streamable HTTP that lists, maps, publishes to and messages "NuQloud" resources kept in memory.
// It shows the companion contract of docs/TOOL_PROVIDERS.md: tool metadata, declared
// confirmations, and the signed invocation context verified on every call.
//
//   node examples/nuqloud-bridge/server.ts --port 3010 [--host 127.0.0.1] [--config bridge.json]
//
// The context key and audience come from EDUCAI_CONTEXT_KEY / EDUCAI_AUDIENCE or from the JSON
// file given with --config ({"contextKey": "...", "audience": "mcp:<server id>"}), which is read
// again whenever it changes, so the values shown at registration can be saved without a restart.
// BRIDGE_API_TOKEN, when set, is required as "Authorization: Bearer <token>" on every request, or only on
// tools/call with BRIDGE_API_TOKEN_SCOPE=calls (discovery stays open; educai can then present an agent
// profile's credential per call, see agentCredential in docs/TOOL_PROVIDERS.md).
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { base64url, jwtVerify, type JWTPayload } from 'jose';
import { z, type ZodRawShape } from 'zod';

/** `_meta` keys of the educai companion contract. */
export const CONTEXT_META_KEY = 'educai/context';
export const CONFIG_META_KEY = 'educai/config';
const ISSUER = 'educai';
const MAX_TOKEN_LIFETIME_S = 60;
const CLOCK_SKEW_S = 5;
const MAX_BODY_BYTES = 1024 * 1024;

export interface BridgeConfig {
  /** The context key shown once at registration (base64url of 32 bytes). */
  contextKey: string;
  /** `mcp:<server id>`, shown with the key. */
  audience: string;
}

export interface BridgeOptions {
  port?: number;
  host?: string;
  config?: BridgeConfig | null;
  /** A JSON file with a BridgeConfig, read again when it changes (used when `config` is not given). */
  configFile?: string | null;
  /** When set, every HTTP request needs `Authorization: Bearer <apiToken>` (see apiTokenScope). */
  apiToken?: string | null;
  /** all (default): every request needs the token; calls: only tools/call requests do. */
  apiTokenScope?: ApiTokenScope;
  now?: () => number;
  log?: (line: string) => void;
}

/** The verified invocation context: opaque ids only, never a credential. */
export interface VerifiedContext {
  botId: string;
  roomToken: string | null;
  threadId: string | null;
  messageId: string | null;
  uid: string | null;
  actorKind: string;
  jti: string;
  iat: number;
  exp: number;
  aud: string;
}

export interface Resource {
  id: string;
  kind: 'course' | 'channel';
  title: string;
}

export interface Mapping {
  resourceId: string;
  roomToken: string;
  mappedBy: string;
}

export interface Publication {
  id: string;
  resourceId: string;
  title: string;
  body: string;
  publishedBy: string;
  roomToken: string | null;
}

export interface SentMessage {
  id: string;
  resourceId: string;
  text: string;
  sentBy: string;
}

export interface BridgeCall {
  tool: string;
  args: Record<string, unknown>;
  /** Set when the invocation context verified; the call then ran. */
  context: VerifiedContext | null;
  /** Why the call was refused, when it was. */
  refused: string | null;
  config: Record<string, unknown>;
}

export type ApiTokenScope = 'all' | 'calls';

/** One tools/call HTTP request checked against the API token (recorded only when a token is set). */
export interface TokenCheck {
  tool: string;
  authorized: boolean;
}

export interface BridgeState {
  resources: Resource[];
  mappings: Mapping[];
  publications: Publication[];
  messages: SentMessage[];
  /** Every tools/call received, refused or not, in order. */
  calls: BridgeCall[];
  /** Every tools/call HTTP request and whether it carried the API token (when one is set). */
  tokenChecks: TokenCheck[];
}

export interface RunningBridge {
  /** The MCP endpoint to register in educai. */
  url: string;
  port: number;
  state: BridgeState;
  /** Sets the context key and audience (as saving the --config file would). */
  configure(config: BridgeConfig): void;
  /** Publishes a new description of a tool, as a new bridge version would (sends list_changed). */
  upgradeTool(name: ToolName, description: string): void;
  close(): Promise<void>;
}

class Refusal extends Error {
  override name = 'Refusal';
}

type ToolName = 'bridge_list_resources' | 'bridge_map_resource' | 'bridge_publish' | 'bridge_send_message' | 'bridge_remove_mapping';

interface ToolSpec {
  name: ToolName;
  title: string;
  description: string;
  inputSchema: ZodRawShape;
  annotations: ToolAnnotations;
  meta: Record<string, unknown>;
  run(args: Record<string, unknown>, ctx: VerifiedContext, config: Record<string, unknown>): CallToolResult;
}

function text(value: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: value }], isError };
}

function seedResources(): Resource[] {
  return [
    { id: 'course-101', kind: 'course', title: 'Algebra I' },
    { id: 'course-102', kind: 'course', title: 'Biology' },
    { id: 'channel-news', kind: 'channel', title: 'School news' },
  ];
}

function toolSpecs(state: BridgeState): ToolSpec[] {
  const resource = (id: unknown): Resource => {
    const found = state.resources.find((r) => r.id === id);
    if (!found) throw new Refusal(`No NuQloud resource with id ${String(id).slice(0, 64)}`);
    return found;
  };
  // Write tools act for the invoking user: `requiresUser` makes educai offer them to signed-in users only.
  const asUser = (ctx: VerifiedContext): string => {
    if (ctx.uid === null || ctx.actorKind !== 'user') throw new Refusal('This action needs a signed-in Nextcloud user');
    return ctx.uid;
  };
  return [
    {
      name: 'bridge_list_resources',
      title: 'NuQloud: list resources',
      description: 'Lists the NuQloud resources (courses and channels) and whether each is mapped to this conversation.',
      inputSchema: { kind: z.enum(['course', 'channel']).optional().describe('Only resources of this kind') },
      annotations: { readOnlyHint: true, openWorldHint: false },
      meta: { configSchema: { type: 'object', properties: { maxResults: { type: 'integer', minimum: 1, maximum: 20 } } } },
      run(args, ctx, config) {
        const max = typeof config['maxResults'] === 'number' ? config['maxResults'] : 20;
        const list = state.resources.filter((r) => args['kind'] === undefined || r.kind === args['kind']).slice(0, max);
        const mapped = (id: string) => state.mappings.some((m) => m.resourceId === id && m.roomToken === ctx.roomToken);
        return text(list.map((r) => `${r.id}: ${r.title} (${r.kind})${mapped(r.id) ? ' - mapped here' : ''}`).join('\n') || 'No resources.');
      },
    },
    {
      name: 'bridge_map_resource',
      title: 'NuQloud: map a resource to this conversation',
      description: 'Maps a NuQloud resource to this Talk conversation, so that its updates belong here.',
      inputSchema: { resourceId: z.string().max(64).describe('The resource id, e.g. course-101') },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
      meta: { requiresUser: true },
      run(args, ctx) {
        const uid = asUser(ctx);
        const r = resource(args['resourceId']);
        if (ctx.roomToken === null) throw new Refusal('Mappings need a Talk conversation');
        if (!state.mappings.some((m) => m.resourceId === r.id && m.roomToken === ctx.roomToken)) {
          state.mappings.push({ resourceId: r.id, roomToken: ctx.roomToken, mappedBy: uid });
        }
        return text(`${r.title} (${r.id}) is mapped to this conversation.`);
      },
    },
    {
      name: 'bridge_publish',
      title: 'NuQloud: publish',
      description: 'Publishes a post with a title and a body to a NuQloud resource, visible to everyone who follows it.',
      inputSchema: {
        resourceId: z.string().max(64).describe('The resource id, e.g. course-101'),
        title: z.string().min(1).max(200),
        body: z.string().max(4000).optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
      // Publishing reaches other people: every call needs the user's confirmation in educai.
      meta: { requiresUser: true, requiresConfirmation: true },
      run(args, ctx) {
        const uid = asUser(ctx);
        const r = resource(args['resourceId']);
        const id = `pub-${state.publications.length + 1}`;
        state.publications.push({
          id,
          resourceId: r.id,
          title: String(args['title']),
          body: String(args['body'] ?? ''),
          publishedBy: uid,
          roomToken: ctx.roomToken,
        });
        return text(`Published "${String(args['title'])}" to ${r.title} (${id}).`);
      },
    },
    {
      name: 'bridge_send_message',
      title: 'NuQloud: send a message',
      description: 'Sends a message to the members of a NuQloud resource.',
      inputSchema: { resourceId: z.string().max(64), text: z.string().min(1).max(2000) },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
      meta: { requiresUser: true, requiresConfirmation: true },
      run(args, ctx) {
        const uid = asUser(ctx);
        const r = resource(args['resourceId']);
        const id = `msg-${state.messages.length + 1}`;
        state.messages.push({ id, resourceId: r.id, text: String(args['text']), sentBy: uid });
        return text(`Message sent to the members of ${r.title} (${id}).`);
      },
    },
    {
      name: 'bridge_remove_mapping',
      title: 'NuQloud: remove a mapping',
      description: 'Removes the mapping of a NuQloud resource to this Talk conversation.',
      inputSchema: { resourceId: z.string().max(64) },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      meta: { requiresUser: true, requiresConfirmation: true },
      run(args, ctx) {
        asUser(ctx);
        const r = resource(args['resourceId']);
        const before = state.mappings.length;
        state.mappings = state.mappings.filter((m) => !(m.resourceId === r.id && m.roomToken === ctx.roomToken));
        return text(before === state.mappings.length ? `${r.title} was not mapped here.` : `${r.title} is no longer mapped to this conversation.`);
      },
    },
  ];
}

/** Checks the signed invocation context: HS256, issuer, audience, a lifetime of at most 60 s, a fresh nonce. */
export class ContextVerifier {
  readonly #seen = new Map<string, number>(); // jti → exp (seconds)
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async verify(meta: Record<string, unknown> | undefined, config: BridgeConfig | null): Promise<VerifiedContext> {
    if (config === null) throw new Refusal('The bridge has no context key yet; an admin must configure it');
    const token = meta?.[CONTEXT_META_KEY];
    if (typeof token !== 'string' || token === '') throw new Refusal('Missing invocation context');
    const key = base64url.decode(config.contextKey);
    if (key.length < 32) throw new Refusal('The configured context key is too short');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: config.audience,
        requiredClaims: ['iat', 'exp', 'jti'],
        clockTolerance: CLOCK_SKEW_S,
        currentDate: new Date(this.#now()),
      }));
    } catch {
      // The reason stays here: it could help someone forging contexts.
      throw new Refusal('Invalid invocation context');
    }
    const { iat, exp, jti } = payload as { iat: number; exp: number; jti: unknown };
    if (exp - iat > MAX_TOKEN_LIFETIME_S) throw new Refusal('Invalid invocation context');
    if (typeof jti !== 'string' || jti === '') throw new Refusal('Invalid invocation context');
    const nowS = Math.floor(this.#now() / 1000);
    for (const [id, until] of this.#seen) if (until + CLOCK_SKEW_S < nowS) this.#seen.delete(id);
    if (this.#seen.has(jti)) throw new Refusal('The invocation context was already used');
    this.#seen.set(jti, exp);
    const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
    const botId = str(payload['bot_id']);
    if (botId === null) throw new Refusal('Invalid invocation context');
    return {
      botId,
      roomToken: str(payload['room_token']),
      threadId: str(payload['thread_id']),
      messageId: str(payload['message_id']),
      uid: str(payload['uid']),
      actorKind: str(payload['actor_kind']) ?? 'other',
      jti,
      iat,
      exp,
      aud: config.audience,
    };
  }
}

function configFromEnv(): BridgeConfig | null {
  const contextKey = process.env['EDUCAI_CONTEXT_KEY'];
  const audience = process.env['EDUCAI_AUDIENCE'];
  return contextKey && audience ? { contextKey, audience } : null;
}

/** Reads the config file again when its modification time changes. */
function fileConfig(path: string): () => BridgeConfig | null {
  let stamp = -1;
  let cached: BridgeConfig | null = null;
  return () => {
    let mtime: number;
    try {
      mtime = statSync(path).mtimeMs;
    } catch {
      return null;
    }
    if (mtime !== stamp) {
      stamp = mtime;
      try {
        const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<BridgeConfig>;
        cached =
          typeof parsed.contextKey === 'string' && typeof parsed.audience === 'string' ? { contextKey: parsed.contextKey, audience: parsed.audience } : null;
      } catch {
        cached = null;
      }
    }
    return cached;
  };
}

function authorized(header: string | undefined, token: string | null | undefined): boolean {
  if (!token) return true;
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The tool names of the tools/call requests in a JSON-RPC message or batch. */
function toolsCalled(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  const out: string[] = [];
  for (const m of messages) {
    if (m === null || typeof m !== 'object' || (m as { method?: unknown }).method !== 'tools/call') continue;
    const name = (m as { params?: { name?: unknown } }).params?.name;
    out.push(typeof name === 'string' ? name.slice(0, 64) : '?');
  }
  return out;
}

function tokenScopeFromEnv(): ApiTokenScope {
  const value = process.env['BRIDGE_API_TOKEN_SCOPE'] ?? 'all';
  if (value !== 'all' && value !== 'calls') throw new Error('BRIDGE_API_TOKEN_SCOPE must be all or calls');
  return value;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Refusal('Request too large');
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw === '' ? undefined : JSON.parse(raw);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  tools: Map<string, RegisteredTool>;
}

export async function startBridge(options: BridgeOptions = {}): Promise<RunningBridge> {
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => undefined);
  const state: BridgeState = { resources: seedResources(), mappings: [], publications: [], messages: [], calls: [], tokenChecks: [] };
  const specs = toolSpecs(state);
  const descriptions = new Map<string, string>(specs.map((s) => [s.name, s.description]));
  const verifier = new ContextVerifier(now);
  let explicit: BridgeConfig | null = options.config ?? null;
  const fromFile = options.configFile ? fileConfig(options.configFile) : null;
  const currentConfig = (): BridgeConfig | null => explicit ?? fromFile?.() ?? null;
  const sessions = new Map<string, Session>();

  async function call(spec: ToolSpec, args: Record<string, unknown>, meta: Record<string, unknown> | undefined): Promise<CallToolResult> {
    const rawConfig = meta?.[CONFIG_META_KEY];
    const config = rawConfig !== null && typeof rawConfig === 'object' && !Array.isArray(rawConfig) ? (rawConfig as Record<string, unknown>) : {};
    const record: BridgeCall = { tool: spec.name, args, context: null, refused: null, config };
    state.calls.push(record);
    try {
      // Verified before anything else, on every call.
      record.context = await verifier.verify(meta, currentConfig());
      return spec.run(args, record.context, config);
    } catch (error) {
      const message = error instanceof Refusal ? error.message : 'The bridge failed';
      if (record.context === null) record.refused = message;
      log(`${spec.name}: ${message}`);
      return text(`Refused: ${message}`, true);
    }
  }

  function newSession(): Session {
    const server = new McpServer({ name: 'nuqloud-bridge', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    const tools = new Map<string, RegisteredTool>();
    for (const spec of specs) {
      const registered = server.registerTool(
        spec.name,
        {
          title: spec.title,
          description: descriptions.get(spec.name) ?? spec.description,
          inputSchema: spec.inputSchema,
          annotations: spec.annotations,
          _meta: spec.meta,
        },
        async (args: Record<string, unknown>, extra: { _meta?: Record<string, unknown> }) => call(spec, args ?? {}, extra._meta),
      );
      tools.set(spec.name, registered);
    }
    const session: Session = { server, tools, transport: undefined as unknown as StreamableHTTPServerTransport };
    session.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, session),
    });
    session.transport.onclose = () => {
      if (session.transport.sessionId) sessions.delete(session.transport.sessionId);
    };
    return session;
  }

  const http: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://bridge').pathname;
      if (path === '/health' && req.method === 'GET') {
        sendJson(res, 200, { status: 'ok', configured: currentConfig() !== null });
        return;
      }
      if (path !== '/mcp') {
        sendJson(res, 404, { error: 'not found' });
        return;
      }
      const scope = options.apiTokenScope ?? 'all';
      if (scope === 'all' && !authorized(req.headers['authorization'], options.apiToken)) {
        sendJson(res, 401, { error: 'unauthorized' });
        return;
      }
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      const called = toolsCalled(body);
      if (options.apiToken && called.length > 0) {
        const ok = authorized(req.headers['authorization'], options.apiToken);
        for (const tool of called) state.tokenChecks.push({ tool, authorized: ok });
        if (!ok) {
          log(`tools/call without a valid API token refused: ${called.join(', ')}`);
          sendJson(res, 401, { error: 'unauthorized' });
          return;
        }
      }
      const sid = req.headers['mcp-session-id'];
      const sessionId = typeof sid === 'string' ? sid : undefined;
      let session = sessionId ? sessions.get(sessionId) : undefined;
      if (!session) {
        if (sessionId || req.method !== 'POST' || !isInitializeRequest(body)) {
          // 404 for an unknown session makes educai open a new one.
          sendJson(res, sessionId ? 404 : 400, { jsonrpc: '2.0', error: { code: -32000, message: 'Unknown session' }, id: null });
          return;
        }
        session = newSession();
        await session.server.connect(session.transport);
      }
      await session.transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      log(`request failed: ${error instanceof Error ? error.name : 'error'}`);
      if (!res.headersSent) sendJson(res, error instanceof SyntaxError ? 400 : 500, { error: 'bad request' });
      else res.end();
    });
  });
  await new Promise<void>((done) => http.listen(options.port ?? 0, options.host ?? '127.0.0.1', done));
  const { port } = http.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/mcp`,
    port,
    state,
    configure(config) {
      explicit = { ...config };
    },
    upgradeTool(name, description) {
      descriptions.set(name, description);
      for (const session of sessions.values()) session.tools.get(name)?.update({ description });
    },
    async close() {
      const all = [...sessions.values()];
      sessions.clear();
      for (const s of all) await s.server.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((done) => http.close(() => done()));
    },
  };
}

function argValue(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

async function main(argv: string[]): Promise<void> {
  const portText = argValue(argv, '--port') ?? process.env['PORT'] ?? '3010';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number, not ${portText}`);
  const configFile = argValue(argv, '--config');
  const bridge = await startBridge({
    port,
    host: argValue(argv, '--host') ?? '127.0.0.1',
    config: configFile ? null : configFromEnv(),
    configFile: configFile ? resolve(configFile) : null,
    apiToken: process.env['BRIDGE_API_TOKEN'] ?? null,
    apiTokenScope: tokenScopeFromEnv(),
    log: (line) => console.error(line),
  });
  console.log(`NuQloud bridge listening on ${bridge.url}`);
  const stop = () => void bridge.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
