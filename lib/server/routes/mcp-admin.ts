import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import { EGRESS_REFUSED, isEgressRefusal, McpConnection, McpUnreachableError, type FetchLike } from '../../mcp/mcp-connection.ts';
import { isMcpError, isStreamableHttpError, MCP_REQUEST_TIMEOUT } from '../../mcp/mcp-sdk.ts';
import { McpApprovalConflictError } from '../../mcp/mcp-provider-types.ts';
import { type McpProvider } from '../../mcp/mcp-provider.ts';
import { type McpProviderManager } from '../../mcp/mcp-provider-manager.ts';
import {
  McpServerValidationError,
  toPublic,
  type McpServer,
  type McpServerInput,
  type McpServerKind,
  type McpServerPublic,
  type McpServerStore,
  type McpToolPolicyName,
} from '../../mcp/mcp-server-store.ts';
import { isPlainObject } from '../../tools/json-schema.ts';
import { TOOL_NAME_PATTERN } from '../../tools/tool-provider.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { collectFieldErrors } from '../../validation/field-errors.ts';
import { jsonBody } from '../json-body.ts';

export interface McpAdminDeps {
  store: McpServerStore;
  manager: McpProviderManager;
  adminCheck: AdminCheck;
  logger: Logger;
  /** The fetch a test connection goes through (the egress module's); defaults to the global fetch. */
  fetch?: FetchLike;
  /** Connect and list timeout of a test connection (default 15 s). */
  testTimeoutMs?: number;
}

/** What went wrong when reaching a server: a status, never a response body or header value (S18). */
export interface ConnectionProblem {
  /** blocked: the address is private and not on the admin's egress allow-list (S18). */
  status: 'unreachable' | 'blocked' | 'unauthorized' | 'http_error' | 'timeout' | 'protocol_error' | 'credentials_unreadable' | 'failed';
  httpStatus?: number;
}

export interface McpServerView extends McpServerPublic {
  /** Tools pinned by the last approval. */
  approvedTools: string[];
  connection: {
    reachable: boolean | null;
    lastError: ConnectionProblem | null;
    /** Listed tools that are new or changed since approval; they stay off until approved. */
    pendingApproval: string[];
    currentToolsHash: string | null;
  };
}

const BASE = '/api/v1/admin/mcp-servers';
const CREATE_FIELDS = new Set(['name', 'url', 'kind', 'enabled', 'headers', 'toolPolicies', 'agentCredential']);
const POLICIES = ['read', 'write', 'confirm', 'destructive', 'off'] as const;
const ID_PATTERN = /^[A-Za-z0-9-]{1,64}$/;

const PROBLEMS = ['unreachable', 'blocked', 'unauthorized', 'http_error', 'timeout', 'protocol_error', 'credentials_unreadable', 'failed'] as const;
const problem = z.object({ status: z.enum(PROBLEMS), httpStatus: z.number().int().optional() });
const serverView = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  kind: z.enum(['mcp', 'companion']),
  enabled: z.boolean(),
  toolPolicies: z.record(z.string(), z.object({ policy: z.enum(POLICIES) })),
  approvedToolsHash: z.string().nullable(),
  headers: z.record(z.string(), z.string()).describe('Header name → mask; values are write-only'),
  agentCredential: z.string().nullable().describe('Name of the agent profile credential presented in agent mode (never a value)'),
  createdAt: z.number(),
  updatedAt: z.number(),
  approvedTools: z.array(z.string()),
  connection: z.object({
    reachable: z.boolean().nullable(),
    lastError: problem.nullable(),
    pendingApproval: z.array(z.string()),
    currentToolsHash: z.string().nullable(),
  }),
});
const serverAnswer = z.object({ server: serverView });
const serverBody = z
  .object({
    name: z.string(),
    url: z.string().describe('Streamable HTTP endpoint; private addresses need an egress allow-list entry (S18)'),
    kind: z.enum(['mcp', 'companion']).optional(),
    enabled: z.boolean().optional(),
    headers: z.record(z.string(), z.string()).nullable().optional().describe('Header name → value; the mask keeps a stored value'),
    toolPolicies: z.record(z.string(), z.object({ policy: z.enum(POLICIES) })).optional(),
    agentCredential: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/)
      .nullable()
      .optional()
      .describe(
        "In agent mode, the name of the profile credential sent as 'Authorization: Bearer' on each tool call (the profile holds the value); null removes it",
      ),
  })
  .strict();
const serverParams = z.object({ id: z.string().regex(ID_PATTERN) });
const reviewAnswer = z.object({
  review: z.object({
    serverId: z.string(),
    hash: z.string(),
    approvedToolsHash: z.string().nullable(),
    tools: z.array(
      z
        .record(z.string(), z.unknown())
        .describe(
          'name, description, inputSchema, annotations, hash, status (approved/new/changed), suggestedPolicy, policy, effectivePolicy, declaresConfirmation, configSchema',
        ),
    ),
    removed: z.array(z.string()),
    pending: z.array(z.string()),
  }),
});
const testAnswer = z.union([z.object({ ok: z.literal(true), status: z.literal('ok'), toolCount: z.number().int() }), problem.extend({ ok: z.literal(false) })]);
/** A connection's last error as our own describeError wrote it ("HTTP 404", "MCP error -32001", ...). */
function problemFromDescription(text: string | null): ConnectionProblem {
  if (text === EGRESS_REFUSED) return { status: 'blocked' };
  const http = text === null ? null : /^HTTP (\d{3})$/.exec(text);
  if (http) {
    const httpStatus = Number(http[1]);
    return { status: httpStatus === 401 || httpStatus === 403 ? 'unauthorized' : 'http_error', httpStatus };
  }
  if (text === `MCP error ${MCP_REQUEST_TIMEOUT}`) return { status: 'timeout' };
  if (text !== null && /^MCP error -?\d+$/.test(text)) return { status: 'protocol_error' };
  return { status: 'unreachable' };
}

/** Classifies by type and status code only: the messages of SDK errors may quote the server's body. */
export function connectionProblem(error: unknown, lastError: string | null): ConnectionProblem {
  if (isEgressRefusal(error)) return { status: 'blocked' };
  if (isStreamableHttpError(error)) {
    const code = typeof error.code === 'number' && error.code >= 100 ? error.code : null;
    if (code === null) return { status: 'unreachable' };
    return { status: code === 401 || code === 403 ? 'unauthorized' : 'http_error', httpStatus: code };
  }
  if (error instanceof McpUnreachableError) return problemFromDescription(lastError);
  if (isMcpError(error)) return error.code === MCP_REQUEST_TIMEOUT ? { status: 'timeout' } : { status: 'protocol_error' };
  if (error instanceof Error && error.name === 'HeaderLoadError') return { status: 'credentials_unreadable' };
  return { status: 'failed' };
}

function problemText(problem: ConnectionProblem): string {
  switch (problem.status) {
    case 'unauthorized':
      return `The tool server refused the credentials (HTTP ${problem.httpStatus ?? 401})`;
    case 'http_error':
      return `The tool server answered with HTTP ${problem.httpStatus ?? 'error'}`;
    case 'timeout':
      return 'The tool server did not answer in time';
    case 'protocol_error':
      return 'The tool server does not speak MCP as expected';
    case 'credentials_unreadable':
      return 'The stored credentials of the tool server cannot be read';
    case 'unreachable':
      return 'The tool server is not reachable';
    case 'blocked':
      return "The tool server's address is private; an administrator must add it to the egress allow-list first";
    default:
      return 'Contacting the tool server failed';
  }
}

function view(server: McpServer, provider: McpProvider | undefined): McpServerView {
  const status = provider?.status();
  return {
    ...toPublic(server),
    approvedTools: Object.keys(server.approvedTools).sort(),
    connection: {
      reachable: status?.reachable ?? null,
      lastError: status?.lastError ? problemFromDescription(status.lastError) : null,
      pendingApproval: status?.pendingApproval ?? [],
      currentToolsHash: status?.currentToolsHash ?? null,
    },
  };
}

function invalid(fields: Record<string, string>): HttpError {
  return new HttpError(400, 'invalid_server', `Invalid tool server: ${Object.keys(fields).join(', ')}`, fields);
}

function bodyObject(req: Request): Record<string, unknown> {
  const body: unknown = req.body;
  if (!isPlainObject(body)) throw invalid({ input: 'The body must be a JSON object' });
  const unknown = Object.keys(body).filter((k) => !CREATE_FIELDS.has(k));
  if (unknown.length > 0) throw invalid(Object.fromEntries(unknown.map((k) => [k, 'Unknown field'])));
  return body;
}

function idOf(req: Request): string {
  const id = req.params['id'];
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) throw new HttpError(404, 'not_found', 'No such tool server');
  return id;
}

const policyValue = z.preprocess(
  (v) => (isPlainObject(v) && Object.keys(v).length === 1 && 'policy' in v ? v['policy'] : v),
  z.enum(POLICIES, { error: 'Use read, write, confirm, destructive or off' }),
);

const approveSchema = z
  .object({
    hash: z.string({ error: 'Enter the hash of the reviewed tool list' }).regex(/^[a-f0-9]{64}$/, 'Not a tool list hash'),
    policies: z.record(z.string().regex(TOOL_NAME_PATTERN, 'Not a valid tool name'), policyValue).default({}),
  })
  .strict();

const mcp = (s: Omit<RouteSpec, 'tag' | 'access'>): RouteSpec => ({ ...s, tag: 'mcp', access: 'admin' });

export const MCP_ADMIN_SPECS: RouteSpec[] = [
  mcp({
    method: 'get',
    path: BASE,
    operationId: 'listMcpServers',
    summary: 'MCP servers and companion providers',
    query: z.object({ kind: z.enum(['mcp', 'companion']).optional() }),
    response: { status: 200, name: 'McpServers', schema: z.object({ servers: z.array(serverView) }) },
    errors: [400, 503],
  }),
  mcp({
    method: 'post',
    path: BASE,
    operationId: 'createMcpServer',
    summary: 'Register a server; a companion gets its context key once, here',
    body: { name: 'McpServerCreate', schema: serverBody },
    response: { status: 201, name: 'McpServerCreated', schema: serverAnswer.extend({ contextKey: z.string().optional() }) },
    errors: [400, 503],
  }),
  mcp({
    method: 'get',
    path: `${BASE}/{id}`,
    operationId: 'getMcpServer',
    summary: 'One server',
    params: serverParams,
    response: { status: 200, name: 'McpServer', schema: serverAnswer },
    errors: [404, 503],
  }),
  mcp({
    method: 'put',
    path: `${BASE}/{id}`,
    operationId: 'updateMcpServer',
    summary: 'Change a server (the kind is fixed)',
    params: serverParams,
    body: { name: 'McpServerUpdate', schema: serverBody.partial() },
    response: { status: 200, name: 'McpServerUpdated', schema: serverAnswer },
    errors: [400, 404, 503],
  }),
  mcp({
    method: 'delete',
    path: `${BASE}/{id}`,
    operationId: 'deleteMcpServer',
    summary: 'Remove a server (assignments stay, inert)',
    params: serverParams,
    response: { status: 200, name: 'McpServerDeleted', schema: z.object({ deleted: z.literal(true) }) },
    errors: [404, 503],
  }),
  mcp({
    method: 'post',
    path: `${BASE}/{id}/enable`,
    operationId: 'enableMcpServer',
    summary: 'Switch a server on',
    params: serverParams,
    response: { status: 200, name: 'McpServerEnabled', schema: serverAnswer },
    errors: [404, 503],
  }),
  mcp({
    method: 'post',
    path: `${BASE}/{id}/disable`,
    operationId: 'disableMcpServer',
    summary: 'Switch a server off',
    params: serverParams,
    response: { status: 200, name: 'McpServerDisabled', schema: serverAnswer },
    errors: [404, 503],
  }),
  mcp({
    method: 'post',
    path: `${BASE}/{id}/rotate-key`,
    operationId: 'rotateCompanionKey',
    summary: 'A new context key for a companion (shown once)',
    params: serverParams,
    response: { status: 200, name: 'CompanionKey', schema: z.object({ contextKey: z.string() }) },
    errors: [404, 409, 503],
  }),
  mcp({
    method: 'post',
    path: `${BASE}/{id}/test`,
    operationId: 'testMcpServer',
    summary: 'Connect and list with the stored settings; a status, never a body (S18)',
    params: serverParams,
    response: { status: 200, name: 'McpServerTest', schema: testAnswer },
    errors: [404, 503],
  }),
  mcp({
    method: 'get',
    path: `${BASE}/{id}/review`,
    operationId: 'reviewMcpServer',
    summary: 'The listed tools with their approval state (S17)',
    params: serverParams,
    response: { status: 200, name: 'McpServerReview', schema: reviewAnswer },
    errors: [404, 502, 503],
  }),
  mcp({
    method: 'post',
    path: `${BASE}/{id}/approve`,
    operationId: 'approveMcpServer',
    summary: 'Approve the reviewed tool list with a policy per tool',
    params: serverParams,
    body: { name: 'McpServerApproval', schema: approveSchema },
    response: { status: 200, name: 'McpServerApproved', schema: serverAnswer },
    errors: [400, 404, 409, 502, 503],
  }),
];

/**
 * Admin API of MCP servers and companion providers. Header values and companion
 * keys are write-only (a companion key is shown once, on create and on rotate);
 * tests and failures report a status, never a body or header value (S18).
 * Tools stay off until the admin approves the reviewed list with a policy per tool (S17).
 */
export function mcpAdminRoutes(deps: McpAdminDeps): Router {
  const router = Router();
  const admin = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];
  const json = jsonBody({ limit: '64kb' });

  async function load(id: string): Promise<McpServer> {
    const server = await deps.store.get(id);
    if (!server) throw new HttpError(404, 'not_found', 'No such tool server');
    return server;
  }

  async function providerFor(id: string): Promise<McpProvider> {
    await load(id);
    let provider = deps.manager.provider(id);
    if (!provider) {
      await deps.manager.sync();
      provider = deps.manager.provider(id);
    }
    if (!provider) throw new HttpError(404, 'not_found', 'No such tool server');
    return provider;
  }

  function unreachable(error: unknown, provider: McpProvider): HttpError {
    const problem = connectionProblem(error, provider.connection.status().lastError);
    deps.logger.warn({ server: provider.serverId, ...problem }, 'MCP server could not be listed for review');
    return new HttpError(502, 'mcp_unreachable', problemText(problem), problem);
  }

  async function update(id: string, patch: Record<string, unknown>): Promise<McpServer> {
    let server: McpServer | null;
    try {
      server = await deps.store.update(id, patch);
    } catch (error) {
      if (error instanceof McpServerValidationError) throw invalid(error.fields);
      throw error;
    }
    if (!server) throw new HttpError(404, 'not_found', 'No such tool server');
    await deps.manager.sync();
    return server;
  }

  router.get(BASE, ...admin, async (req, res) => {
    const kind = req.query['kind'];
    if (kind !== undefined && kind !== 'mcp' && kind !== 'companion') throw invalid({ kind: 'Use mcp or companion' });
    const servers = (await deps.store.list()).filter((s) => kind === undefined || s.kind === (kind as McpServerKind));
    res.json({ servers: servers.map((s) => view(s, deps.manager.provider(s.id))) });
  });

  router.post(BASE, ...admin, json, async (req, res) => {
    const body = bodyObject(req);
    let created: Awaited<ReturnType<McpServerStore['create']>>;
    try {
      created = await deps.store.create(body as unknown as McpServerInput);
    } catch (error) {
      if (error instanceof McpServerValidationError) throw invalid(error.fields);
      throw error;
    }
    await deps.manager.sync();
    // Names only: header values and the key never reach the log.
    deps.logger.info({ server: created.server.id, kind: created.server.kind, headers: created.server.headerNames }, 'tool server registered');
    res
      .status(201)
      .json({
        server: view(created.server, deps.manager.provider(created.server.id)),
        ...(created.contextKey === null ? {} : { contextKey: created.contextKey }),
      });
  });

  router.get(`${BASE}/:id`, ...admin, async (req, res) => {
    const server = await load(idOf(req));
    res.json({ server: view(server, deps.manager.provider(server.id)) });
  });

  router.put(`${BASE}/:id`, ...admin, json, async (req, res) => {
    const id = idOf(req);
    const body = bodyObject(req);
    const server = await update(id, body);
    deps.logger.info({ server: id, fields: Object.keys(body) }, 'tool server updated');
    res.json({ server: view(server, deps.manager.provider(id)) });
  });

  router.delete(`${BASE}/:id`, ...admin, async (req, res) => {
    const id = idOf(req);
    await load(id);
    await deps.store.delete(id);
    await deps.manager.sync();
    deps.logger.info({ server: id }, 'tool server removed');
    res.json({ deleted: true });
  });

  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    router.post(`${BASE}/:id/${action}`, ...admin, async (req, res) => {
      const id = idOf(req);
      const server = await update(id, { enabled });
      deps.logger.info({ server: id, enabled }, 'tool server switched');
      res.json({ server: view(server, deps.manager.provider(id)) });
    });
  }

  router.post(`${BASE}/:id/rotate-key`, ...admin, async (req, res) => {
    const id = idOf(req);
    const server = await load(id);
    if (server.kind !== 'companion') throw new HttpError(409, 'not_companion', 'Only companion providers have a context key');
    const contextKey = await deps.store.rotateContextKey(id);
    if (contextKey === null) throw new HttpError(404, 'not_found', 'No such tool server');
    deps.logger.info({ server: id }, 'companion context key rotated');
    res.json({ contextKey });
  });

  // A fresh session with the stored settings: a cached or backed-off connection would hide a fix.
  router.post(`${BASE}/:id/test`, ...admin, async (req, res) => {
    const server = await load(idOf(req));
    const timeout = deps.testTimeoutMs ?? 15_000;
    const connection = new McpConnection({
      name: server.name,
      url: server.url,
      getHeaders: () => deps.store.headers(server.id),
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      connectTimeoutMs: timeout,
      callTimeoutMs: timeout,
      retryBackoffMs: 0,
    });
    let result: { ok: true; status: 'ok'; toolCount: number } | ({ ok: false } & ConnectionProblem);
    try {
      const tools = await connection.listTools({ force: true });
      result = { ok: true, status: 'ok', toolCount: tools.length };
    } catch (error) {
      result = { ok: false, ...connectionProblem(error, connection.status().lastError) };
    } finally {
      await connection.close().catch(() => undefined);
    }
    deps.logger.info(
      { server: server.id, ok: result.ok, status: result.status, ...('httpStatus' in result ? { httpStatus: result.httpStatus } : {}) },
      'tool server tested',
    );
    res.json(result);
  });

  router.get(`${BASE}/:id/review`, ...admin, async (req, res) => {
    const provider = await providerFor(idOf(req));
    let review: Awaited<ReturnType<McpProvider['review']>>;
    try {
      review = await provider.review();
    } catch (error) {
      throw unreachable(error, provider);
    }
    res.json({ review: { ...review, pending: review.tools.filter((t) => t.status !== 'approved').map((t) => t.name) } });
  });

  router.post(`${BASE}/:id/approve`, ...admin, json, async (req, res) => {
    const id = idOf(req);
    const parsed = approveSchema.safeParse(req.body);
    if (!parsed.success) {
      const fields: Record<string, string> = {};
      collectFieldErrors(parsed.error.issues, fields);
      throw invalid(fields);
    }
    const { hash } = parsed.data;
    const policies = parsed.data.policies as Record<string, McpToolPolicyName>;
    const provider = await providerFor(id);
    let review: Awaited<ReturnType<McpProvider['review']>>;
    try {
      review = await provider.review();
    } catch (error) {
      throw unreachable(error, provider);
    }
    if (review.hash !== hash) throw new HttpError(409, 'stale_review', 'The tool list changed since it was reviewed; review it again');
    const listed = new Set(review.tools.map((t) => t.name));
    const strays = Object.keys(policies).filter((n) => !listed.has(n));
    if (strays.length > 0) throw invalid(Object.fromEntries(strays.map((n) => [`policies.${n}`, 'Not in the reviewed tool list'])));
    let server: McpServer;
    try {
      server = await provider.approve(hash, policies);
    } catch (error) {
      if (error instanceof McpApprovalConflictError) throw new HttpError(409, 'stale_review', 'The tool list changed since it was reviewed; review it again');
      throw unreachable(error, provider);
    }
    await deps.manager.sync();
    deps.logger.info({ server: id, tools: Object.keys(server.approvedTools).length, hash }, 'tool server approved');
    res.json({ server: view(server, deps.manager.provider(id)) });
  });

  return router;
}
