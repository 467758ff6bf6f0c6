import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Bot, BotStore } from '../../bots/bot-store.ts';
import type { Logger } from '../../log/logger.ts';
import type { McpProviderManager } from '../../mcp/mcp-provider-manager.ts';
import type { McpServerStore } from '../../mcp/mcp-server-store.ts';
import { MAX_ASSIGNMENTS_PER_BOT, ToolAssignmentError, type ToolAssignmentStore } from '../../tools/tool-assignments.ts';
import { TOOL_NAME_PATTERN } from '../../tools/tool-provider.ts';
import { REASON_PROVIDER_UNAVAILABLE, type RegistryToolMetadata, type ToolAssignment, type ToolRegistry } from '../../tools/tool-registry.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireUser } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import type { ToolFamilyGate } from '../../bots/tool-family-gate.ts';
import type { ActingUser } from '../../nextcloud/identity.ts';
import { requireActingUser } from '../request-auth.ts';
import { collectFieldErrors } from '../../validation/field-errors.ts';
import { jsonBody } from '../json-body.ts';

export interface ToolsApiDeps {
  registry: ToolRegistry;
  assignments: ToolAssignmentStore;
  bots: BotStore;
  adminCheck: AdminCheck;
  logger: Logger;
  /** The admin-registered MCP servers, so an unavailable tool gets a precise reason. */
  mcp?: { store: McpServerStore; manager: McpProviderManager };
  /** How long the catalogue waits for providers to list before answering from metadata (default 3 s). */
  refreshTimeoutMs?: number;
  /** The personal choice of first-party tool families (issue 7): enforced on save, reported in the catalogue. */
  toolFamilies?: { gate: ToolFamilyGate; enabled(user: ActingUser): Promise<Set<string>> };
  /** Called after a bot's assignments were replaced. */
  onAssignmentsChanged?: (botId: string) => void | Promise<void>;
}

export interface CatalogueTool {
  name: string;
  label: string;
  summary: string;
  family: string | null;
  provider: string;
  available: boolean;
  /** Why the tool cannot be used now; only when `available` is false. */
  reason?: string;
  pendingApproval?: boolean;
}

export interface BotToolView {
  name: string;
  config: Record<string, unknown>;
  /** false: no provider offers this name any more; the assignment is kept but inert. */
  known: boolean;
  label: string;
  available: boolean;
  reason?: string;
}

export const REASON_PENDING_APPROVAL = "This tool is new or changed on its tool server and waits for an administrator's approval.";
export const REASON_SERVER_DISABLED = 'An administrator disabled the tool server that offers this tool.';
export const REASON_TOOL_OFF = 'An administrator turned this tool off.';
export const REASON_UNKNOWN_TOOL = 'No tool provider offers this tool any more; the assignment is kept but does nothing.';

const BOT_ID = /^[A-Za-z0-9-]{1,36}$/;

const putSchema = z
  .object({
    tools: z
      .array(
        z
          .object({
            name: z.string({ error: 'Enter a tool name' }).regex(TOOL_NAME_PATTERN, 'Not a valid tool name'),
            config: z.record(z.string(), z.unknown(), { error: 'Must be an object' }).optional(),
          })
          .strict(),
        { error: 'Must be a list of tools' },
      )
      .max(MAX_ASSIGNMENTS_PER_BOT, `At most ${MAX_ASSIGNMENTS_PER_BOT} tools per bot`),
  })
  .strict();

const catalogueTool = z.object({
  name: z.string(),
  label: z.string(),
  summary: z.string(),
  family: z.string().nullable(),
  provider: z.string(),
  available: z.boolean(),
  reason: z.string().optional(),
  pendingApproval: z.boolean().optional(),
});
const botTool = z.object({
  name: z.string(),
  config: z.record(z.string(), z.unknown()),
  known: z.boolean(),
  label: z.string(),
  available: z.boolean(),
  reason: z.string().optional(),
});
const botToolsAnswer = z.object({ botId: z.string(), tools: z.array(botTool) });
const botParams = z.object({ id: z.string().regex(BOT_ID) });

export const TOOLS_API_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/api/v1/tools',
    operationId: 'listTools',
    summary: 'The tool catalogue (answers from metadata while a provider is down)',
    tag: 'tools',
    access: 'user',
    response: {
      status: 200,
      name: 'ToolCatalogue',
      schema: z.object({
        tools: z.array(catalogueTool),
        enabledFamilies: z
          .array(z.string())
          .optional()
          .describe('First-party tool families the caller enabled in their personal settings; tools of other families cannot be added to their bots'),
      }),
    },
  },
  {
    method: 'get',
    path: '/api/v1/bots/{id}/tools',
    operationId: 'getBotTools',
    summary: "A bot's tool assignments (owner or admin)",
    tag: 'tools',
    access: 'user',
    params: botParams,
    response: { status: 200, name: 'BotTools', schema: botToolsAnswer },
    errors: [403, 404, 503],
  },
  {
    method: 'put',
    path: '/api/v1/bots/{id}/tools',
    operationId: 'replaceBotTools',
    summary: "Replace a personal bot's tool assignments (shared bots change through review)",
    tag: 'tools',
    access: 'user',
    params: botParams,
    body: { name: 'BotToolsUpdate', schema: putSchema },
    response: { status: 200, name: 'BotToolsSaved', schema: botToolsAnswer },
    errors: [400, 403, 404, 409, 502, 503],
  },
];

function invalid(fields: Record<string, string>): HttpError {
  return new HttpError(400, 'invalid_tools', `Invalid tool assignments: ${Object.keys(fields).join(', ')}`, fields);
}

/** The registry's `<tool>[.<field>]` error keys as form fields `tools.<index>[.config[.<field>]]`. */
function fieldOf(key: string, indexByName: ReadonlyMap<string, number>): string {
  const dot = key.indexOf('.');
  const name = dot < 0 ? key : key.slice(0, dot);
  const rest = dot < 0 ? '' : key.slice(dot + 1);
  const index = indexByName.get(name);
  if (index === undefined) return 'tools';
  if (rest === '') return `tools.${index}.name`;
  return rest === 'config' ? `tools.${index}.config` : `tools.${index}.config.${rest}`;
}

/**
 * The tool catalogue for the bot editor and a bot's tool assignments. The
 * catalogue comes from provider metadata, so it answers while a provider is
 * down; assignments are stored by name and only the bot's owner or an admin
 * may read or change them.
 */
export function toolsApiRoutes(deps: ToolsApiDeps): Router {
  const router = Router();
  const user = [apiHeaders(), csrfGuard(), requireUser()];

  /** Lets providers list (bounded), so `available` is current; a slow or dead provider only costs the timeout. */
  async function refresh(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deps.refreshTimeoutMs ?? 3_000);
      timer.unref();
    });
    const listing = deps.registry.refreshAvailability().catch((err: unknown) => deps.logger.warn({ err }, 'tool availability refresh failed'));
    try {
      await Promise.race([listing, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function reasons(meta: Record<string, RegistryToolMetadata>): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const servers = new Map<string, { enabled: boolean; policies: Record<string, { policy: string }> }>();
    if (deps.mcp) {
      for (const server of await deps.mcp.store.list()) {
        const provider = deps.mcp.manager.provider(server.id);
        if (provider) servers.set(provider.id, { enabled: server.enabled, policies: server.toolPolicies });
      }
    }
    for (const [name, m] of Object.entries(meta)) {
      if (m.available) continue;
      const server = servers.get(m.provider);
      if (server && !server.enabled) out.set(name, REASON_SERVER_DISABLED);
      else if (server && Object.hasOwn(server.policies, name) && server.policies[name]?.policy === 'off') out.set(name, REASON_TOOL_OFF);
      else if (m.pendingApproval === true) out.set(name, REASON_PENDING_APPROVAL);
      else out.set(name, REASON_PROVIDER_UNAVAILABLE);
    }
    return out;
  }

  async function botFor(req: Request): Promise<Bot> {
    const id = req.params['id'];
    const bot = typeof id === 'string' && BOT_ID.test(id) ? await deps.bots.get(id) : null;
    if (!bot) throw new HttpError(404, 'not_found', 'No such bot');
    const acting = requireActingUser(req);
    if (bot.ownerUid === acting.uid) return bot;
    let admin: boolean;
    try {
      admin = await deps.adminCheck.isAdmin(acting);
    } catch (err) {
      deps.logger.warn({ err }, 'admin check failed');
      throw new HttpError(503, 'admin_check_failed', 'Could not confirm administrator rights with Nextcloud');
    }
    if (!admin) throw new HttpError(403, 'forbidden', "Only the bot's owner or an administrator may change its tools");
    return bot;
  }

  async function present(assignments: ToolAssignment[]): Promise<BotToolView[]> {
    const meta = deps.registry.metadata();
    const why = await reasons(meta);
    return assignments.map((a) => {
      const m = Object.hasOwn(meta, a.name) ? meta[a.name] : undefined;
      if (m === undefined) return { name: a.name, config: a.config, known: false, label: a.name, available: false, reason: REASON_UNKNOWN_TOOL };
      const item: BotToolView = { name: a.name, config: a.config, known: true, label: m.label, available: m.available };
      const reason = why.get(a.name);
      if (!m.available && reason !== undefined) item.reason = reason;
      return item;
    });
  }

  router.get('/api/v1/tools', ...user, async (req, res) => {
    await refresh();
    let enabledFamilies: string[] | undefined;
    if (deps.toolFamilies) {
      try {
        enabledFamilies = [...(await deps.toolFamilies.enabled(requireActingUser(req)))];
      } catch (err) {
        deps.logger.warn({ err }, 'could not read the personal tool families');
      }
    }
    const meta = deps.registry.metadata();
    const why = await reasons(meta);
    const tools = Object.entries(meta).map(([name, m]): CatalogueTool => {
      const item: CatalogueTool = { name, label: m.label, summary: m.summary, family: m.family ?? null, provider: m.provider, available: m.available };
      const reason = why.get(name);
      if (!m.available && reason !== undefined) item.reason = reason;
      if (m.pendingApproval !== undefined) item.pendingApproval = m.pendingApproval;
      return item;
    });
    res.json(enabledFamilies === undefined ? { tools } : { tools, enabledFamilies });
  });

  router.get('/api/v1/bots/:id/tools', ...user, async (req, res) => {
    const bot = await botFor(req);
    res.json({ botId: bot.id, tools: await present(await deps.assignments.list(bot.id)) });
  });

  router.put('/api/v1/bots/:id/tools', ...user, jsonBody({ limit: '256kb' }), async (req, res) => {
    const bot = await botFor(req);
    // A shared bot's tools are part of its reviewed configuration (S10): they change through the bot editor.
    if (bot.visibility !== 'personal') {
      throw new HttpError(
        409,
        'review_required',
        'Tools of a shared bot change through the bot editor (PUT /api/v1/bots/{id}), so that the change is reviewed',
      );
    }
    const parsed = putSchema.safeParse(req.body);
    const fields: Record<string, string> = {};
    if (!parsed.success) {
      collectFieldErrors(parsed.error.issues, fields);
      throw invalid(fields);
    }
    const wanted = parsed.data.tools.map((t) => ({ name: t.name, config: t.config ?? {} }));
    const catalogue = deps.registry.metadata();
    // A name already assigned stays acceptable after its provider went away (kept inert, with its stored config); new names must exist.
    const inert = new Map((await deps.assignments.list(bot.id)).filter((a) => !Object.hasOwn(catalogue, a.name)).map((a) => [a.name, a.config]));
    const indexByName = new Map<string, number>();
    wanted.forEach((a, i) => {
      if (indexByName.has(a.name)) fields[`tools.${i}.name`] = 'Listed twice';
      else if (!Object.hasOwn(catalogue, a.name) && !inert.has(a.name)) fields[`tools.${i}.name`] = 'Unknown tool';
      else indexByName.set(a.name, i);
    });
    if (Object.keys(fields).length > 0) throw invalid(fields);
    if (deps.toolFamilies) {
      const had = new Set((await deps.assignments.list(bot.id)).map((a) => a.name));
      Object.assign(
        fields,
        await deps.toolFamilies.gate.problems(
          bot.ownerUid,
          wanted.filter((a) => !had.has(a.name)),
        ),
      );
      if (Object.keys(fields).length > 0) throw invalid(fields);
    }

    const checked = deps.registry.validateAssignments(wanted.filter((a) => !inert.has(a.name)));
    if (!checked.ok) {
      for (const [key, message] of Object.entries(checked.errors)) fields[fieldOf(key, indexByName)] ??= message;
      throw invalid(fields);
    }
    const valid = new Map(checked.assignments.map((a) => [a.name, a]));
    const next = wanted.map((a) => valid.get(a.name) ?? { name: a.name, config: inert.get(a.name) ?? {} });
    let stored: ToolAssignment[];
    try {
      stored = await deps.assignments.replace(bot.id, next);
    } catch (error) {
      if (error instanceof ToolAssignmentError) throw invalid({ tools: error.message });
      throw error;
    }
    deps.logger.info({ bot: bot.id, tools: stored.map((a) => a.name) }, 'bot tools updated');
    await deps.onAssignmentsChanged?.(bot.id);
    res.json({ botId: bot.id, tools: await present(stored) });
  });

  return router;
}
