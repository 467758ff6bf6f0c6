// A real MCP server (SDK McpServer + streamable HTTP, stateful) on node:http, port 0, for the MCP tests.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ZodRawShape } from 'zod';

export interface ToolCall {
  tool: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
  headers: IncomingHttpHeaders;
  sessionId: string | undefined;
}

export interface ToolSpec {
  name: string;
  description: string;
  inputSchema?: ZodRawShape;
  annotations?: ToolAnnotations;
  meta?: Record<string, unknown>;
  handler: (
    args: Record<string, unknown>,
    extra: { signal: AbortSignal; meta: Record<string, unknown> | undefined },
  ) => Promise<CallToolResult> | CallToolResult;
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  tools: Map<string, RegisteredTool>;
}

export interface TestMcpServer {
  url: string;
  sessions: Map<string, Session>;
  calls: ToolCall[];
  /** JSON-RPC methods received, in order. */
  methods: string[];
  /** Headers of every HTTP request. */
  requestHeaders: IncomingHttpHeaders[];
  /** Registers a tool now and in every future session; live sessions send list_changed. */
  addTool(spec: ToolSpec): void;
  /** Changes a tool's description everywhere; live sessions send list_changed. */
  updateTool(name: string, description: string): void;
  /** Forgets every session, as a restarted server would (old session ids get 404). */
  dropSessions(): Promise<void>;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

export function text(value: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: value }], isError };
}

export interface TestServerOptions {
  port?: number;
  /** When set, requests without exactly this Authorization header get 401. */
  requireAuthorization?: string;
}

export async function startTestMcpServer(initial: ToolSpec[], options: TestServerOptions = {}): Promise<TestMcpServer> {
  const specs = new Map<string, ToolSpec>(initial.map((s) => [s.name, s]));
  const sessions = new Map<string, Session>();
  const calls: ToolCall[] = [];
  const methods: string[] = [];
  const requestHeaders: IncomingHttpHeaders[] = [];

  function register(session: Session, spec: ToolSpec): void {
    const tool = session.server.registerTool(
      spec.name,
      {
        description: spec.description,
        ...(spec.inputSchema ? { inputSchema: spec.inputSchema } : {}),
        ...(spec.annotations ? { annotations: spec.annotations } : {}),
        ...(spec.meta ? { _meta: spec.meta } : {}),
      },
      // The SDK passes (args, extra) to tools with an input schema and (extra) to those without.
      (async (...params: unknown[]) => {
        const args = (spec.inputSchema ? params[0] : {}) as Record<string, unknown>;
        const extra = (spec.inputSchema ? params[1] : params[0]) as {
          _meta?: Record<string, unknown>;
          requestInfo?: { headers: IncomingHttpHeaders };
          sessionId?: string;
          signal: AbortSignal;
        };
        const current = specs.get(spec.name) ?? spec;
        calls.push({ tool: spec.name, args: args ?? {}, meta: extra._meta, headers: extra.requestInfo?.headers ?? {}, sessionId: extra.sessionId });
        return current.handler(args ?? {}, { signal: extra.signal, meta: extra._meta });
      }) as never,
    );
    session.tools.set(spec.name, tool);
  }

  function newSession(): Session {
    const server = new McpServer({ name: 'test-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    const session: Session = { server, transport: undefined as unknown as StreamableHTTPServerTransport, tools: new Map() };
    for (const spec of specs.values()) register(session, spec);
    session.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
      },
    });
    return session;
  }

  const http: Server = createServer((req, res) => {
    void (async () => {
      requestHeaders.push(req.headers);
      if (options.requireAuthorization !== undefined && req.headers['authorization'] !== options.requireAuthorization) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      for (const msg of Array.isArray(body) ? body : [body]) {
        if (msg && typeof msg === 'object' && typeof (msg as { method?: unknown }).method === 'string') methods.push((msg as { method: string }).method);
      }
      const sid = req.headers['mcp-session-id'];
      const sessionId = typeof sid === 'string' ? sid : undefined;
      let session = sessionId ? sessions.get(sessionId) : undefined;
      if (!session) {
        if (sessionId || req.method !== 'POST' || !isInitializeRequest(body)) {
          res.writeHead(sessionId ? 404 : 400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Session not found' }, id: null }));
          return;
        }
        session = newSession();
        await session.server.connect(session.transport);
      }
      await session.transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = http.address() as AddressInfo;

  async function closeSessions(): Promise<void> {
    const all = [...sessions.values()];
    sessions.clear();
    for (const s of all) await s.server.close().catch(() => undefined);
  }

  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    sessions,
    calls,
    methods,
    requestHeaders,
    addTool(spec) {
      specs.set(spec.name, spec);
      for (const session of sessions.values()) register(session, spec);
    },
    updateTool(name, description) {
      const spec = specs.get(name);
      if (!spec) throw new Error(`no tool ${name}`);
      specs.set(name, { ...spec, description });
      for (const session of sessions.values()) session.tools.get(name)?.update({ description });
    },
    dropSessions: closeSessions,
    async close() {
      await closeSessions();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
