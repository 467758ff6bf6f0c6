// Agent profiles (admin only): CRUD with write-only credentials, grants to bots or owners with a
// maximum scope, the tool-call audit and its retention, the delegated-admin groups setting, and
// for a bot's owner the profiles they may choose. Credentials never leave through any answer.
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { AccountCheck } from '../../agent-profiles/account-check.ts';
import { TOOL_SERVER_FAMILY } from '../../agent-profiles/profile-coverage.ts';
import { CredentialMissingError, type AgentProfile, type AgentProfileGrant, type AgentProfileStore } from '../../agent-profiles/profile-store.ts';
import type { ToolAudit } from '../../agent-profiles/tool-audit.ts';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { Logger } from '../../log/logger.ts';
import type { SettingsStore } from '../../storage/settings-store.ts';
import { ResourceScope } from '../../tools/resource-scope.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin, requireUser } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { requireActingUser } from '../request-auth.ts';
import { jsonBody } from '../json-body.ts';

export const DELEGATED_ADMIN_GROUPS_KEY = 'agent-profiles.delegated-admin-groups';

export interface AgentProfilesApiDeps {
  profiles: AgentProfileStore;
  accounts: AccountCheck;
  audit: ToolAudit;
  settings: SettingsStore;
  bots: { get(id: string): Promise<{ id: string; ownerUid: string } | null> };
  adminCheck: AdminCheck;
  logger: Logger;
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BOT_ID = /^[A-Za-z0-9-]{1,36}$/;
const FAMILIES = ['files', 'sharing', 'calendar', 'deck', 'collectives'] as const;
const noControl = (v: string) => !/[\u0000-\u001f\u007f]/.test(v);
const uid = z
  .string()
  .min(1, 'Required')
  .max(64, 'At most 64 characters')
  .refine((v) => noControl(v) && !/[/\\]/.test(v), 'Not a Nextcloud user id');
const groupId = z.string().min(1).max(255).refine(noControl, 'No control characters');
const credentialName = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'Letters, digits, dot, dash or underscore (at most 64)');

const scopeSchema = z
  .object({
    folders: z.array(z.string().max(1024)).max(50).optional(),
    calendars: z.array(z.string().max(128)).max(50).optional(),
    boards: z.array(z.number().int().positive()).max(50).optional(),
    collectives: z.array(z.number().int().positive()).max(50).optional(),
  })
  .strict()
  .describe("Folder prefixes (relative to the account's home), calendar ids, Deck board ids, collective ids; a kind left out is unrestricted");

const profileBody = z
  .object({
    label: z.string().trim().min(1, 'Required').max(200, 'At most 200 characters'),
    accountUid: uid.describe('The unprivileged Nextcloud account the profile acts as (must exist, be enabled, not be an admin or sub-admin)'),
    scopeDescription: z.string().max(2000, 'At most 2000 characters'),
    toolFamilies: z
      .array(z.union([z.enum(FAMILIES), z.string().regex(TOOL_SERVER_FAMILY, 'A tool family, or a tool server as mcp:<server id>')]))
      .max(FAMILIES.length + 20)
      .describe('First-party families, and tool servers (MCP, companions) as mcp:<server id>'),
    triggerGroups: z.array(groupId).max(50).describe('Groups whose members may trigger the profile'),
    confirmGroups: z.array(groupId).max(50).describe('Groups whose members may confirm its destructive actions'),
    enabled: z.boolean(),
    credentials: z
      .array(
        z.object({ name: credentialName, value: z.string().min(1).max(4096).optional().describe('Write-only; leave out to keep the stored value') }).strict(),
      )
      .max(20)
      .optional()
      .describe("For what AppAPI cannot reach (a bridge's external endpoint); names not listed are removed; left out: unchanged"),
  })
  .strict();

const profileView = z.object({
  id: z.string(),
  label: z.string(),
  accountUid: z.string(),
  scopeDescription: z.string(),
  toolFamilies: z.array(z.string()),
  triggerGroups: z.array(z.string()),
  confirmGroups: z.array(z.string()),
  enabled: z.boolean(),
  credentials: z.array(z.object({ name: z.string(), set: z.literal(true) })).describe('Values are never returned'),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
});
const grantBody = z
  .object({ botId: z.string().regex(BOT_ID).optional(), ownerUid: uid.optional(), maxScope: scopeSchema })
  .strict()
  .describe('Exactly one of botId and ownerUid: which bot (or all bots of which owner) may use the profile');
const grantView = z.object({
  id: z.string(),
  botId: z.string().nullable(),
  ownerUid: z.string().nullable(),
  maxScope: scopeSchema,
  approvedBy: z.string(),
  createdAt: z.number().int(),
});
const grantsAnswer = z.object({ grants: z.array(grantView) });
const auditEntry = z.object({
  id: z.string(),
  at: z.number().int(),
  mode: z.enum(['user', 'agent']),
  profileId: z.string().nullable(),
  invokerUid: z.string().nullable(),
  actingUid: z.string().nullable(),
  botId: z.string(),
  roomToken: z.string().nullable(),
  tool: z.string(),
  argsHash: z.string(),
  outcome: z.enum(['ok', 'error', 'refused', 'confirmation-requested']),
  detail: z.string(),
});
const instant = z
  .string()
  .regex(/^\d{1,15}$/, 'Milliseconds since 1970')
  .transform(Number);
const short = (max: number) => z.string().max(max).refine(noControl, 'No control characters');
const auditQuery = z
  .object({
    botId: short(64),
    uid: short(64),
    profileId: short(64),
    mode: z.enum(['user', 'agent']),
    tool: short(64),
    outcome: z.enum(['ok', 'error', 'refused', 'confirmation-requested']),
    from: instant,
    to: instant,
    limit: z
      .string()
      .regex(/^\d{1,3}$/, 'A whole number from 1 to 200')
      .transform(Number)
      .pipe(z.number().min(1).max(200)),
    before: z.string().regex(/^\d{1,15}$/, 'The next cursor of the previous page'),
  })
  .partial()
  .strict();
const retention = z.object({ retentionDays: z.number().int().min(1).max(3650) }).strict();
const profileSettings = z
  .object({
    delegatedAdminGroups: z
      .array(groupId)
      .max(100)
      .describe('Groups that hold delegated admin rights ("Administration privileges"); Nextcloud has no API that lists them'),
  })
  .strict();
const idParams = z.object({ id: z.string().regex(ID) });
const grantParams = z.object({ id: z.string().regex(ID), grantId: z.string().regex(ID) });
const botParams = z.object({ botId: z.string().regex(BOT_ID) });
const botProfile = z.object({
  id: z.string(),
  label: z.string(),
  accountUid: z.string(),
  scopeDescription: z.string(),
  toolFamilies: z.array(z.string()),
  maxScope: scopeSchema,
});

const admin = (s: Omit<RouteSpec, 'tag' | 'access'>): RouteSpec => ({ ...s, tag: 'admin', access: 'admin' });
const profileAnswer = { status: 200, name: 'AgentProfile', schema: z.object({ profile: profileView }) };

export const AGENT_PROFILES_API_SPECS: RouteSpec[] = [
  admin({
    method: 'get',
    path: '/api/v1/admin/agent-profiles',
    operationId: 'listAgentProfiles',
    summary: 'Agent profiles (service accounts bots may act as)',
    response: { status: 200, name: 'AgentProfileList', schema: z.object({ profiles: z.array(profileView) }) },
    errors: [503],
  }),
  admin({
    method: 'post',
    path: '/api/v1/admin/agent-profiles',
    operationId: 'createAgentProfile',
    summary: 'Create an agent profile (the account is checked, S13)',
    body: { name: 'AgentProfileCreate', schema: profileBody },
    response: { ...profileAnswer, name: 'AgentProfileCreated' },
    errors: [400, 502, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/agent-profiles/{id}',
    operationId: 'getAgentProfile',
    summary: 'One agent profile',
    params: idParams,
    response: profileAnswer,
    errors: [404, 503],
  }),
  admin({
    method: 'put',
    path: '/api/v1/admin/agent-profiles/{id}',
    operationId: 'updateAgentProfile',
    summary: 'Replace an agent profile (the account is checked again)',
    params: idParams,
    body: { name: 'AgentProfileUpdate', schema: profileBody },
    response: { ...profileAnswer, name: 'AgentProfileSaved' },
    errors: [400, 404, 502, 503],
  }),
  admin({
    method: 'delete',
    path: '/api/v1/admin/agent-profiles/{id}',
    operationId: 'deleteAgentProfile',
    summary: 'Delete an agent profile with its grants and credentials',
    params: idParams,
    response: { status: 200, name: 'AgentProfileDeleted', schema: z.object({ deleted: z.literal(true) }) },
    errors: [404, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/agent-profiles/{id}/grants',
    operationId: 'listAgentProfileGrants',
    summary: 'Which bots or owners may use a profile, within which scope',
    params: idParams,
    response: { status: 200, name: 'AgentProfileGrants', schema: grantsAnswer },
    errors: [404, 503],
  }),
  admin({
    method: 'post',
    path: '/api/v1/admin/agent-profiles/{id}/grants',
    operationId: 'addAgentProfileGrant',
    summary: 'Let a bot (or all bots of an owner) use a profile within a maximum scope',
    params: idParams,
    body: { name: 'AgentProfileGrantCreate', schema: grantBody },
    response: { status: 200, name: 'AgentProfileGrantsSaved', schema: grantsAnswer },
    errors: [400, 404, 503],
  }),
  admin({
    method: 'delete',
    path: '/api/v1/admin/agent-profiles/{id}/grants/{grantId}',
    operationId: 'deleteAgentProfileGrant',
    summary: 'Withdraw a grant (calls stop at once)',
    params: grantParams,
    response: { status: 200, name: 'AgentProfileGrantsLeft', schema: grantsAnswer },
    errors: [404, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/agent-profile-settings',
    operationId: 'getAgentProfileSettings',
    summary: 'Groups with delegated admin rights (their members cannot back a profile)',
    response: { status: 200, name: 'AgentProfileSettings', schema: profileSettings },
    errors: [503],
  }),
  admin({
    method: 'put',
    path: '/api/v1/admin/agent-profile-settings',
    operationId: 'updateAgentProfileSettings',
    summary: 'Replace the delegated admin groups',
    body: { name: 'AgentProfileSettingsUpdate', schema: profileSettings },
    response: { status: 200, name: 'AgentProfileSettingsSaved', schema: profileSettings },
    errors: [400, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/audit',
    operationId: 'listToolAudit',
    summary: 'Tool calls: mode, profile, invoker, acting account, bot, room, tool, argument hash, outcome (newest first)',
    query: auditQuery,
    response: {
      status: 200,
      name: 'ToolAuditPage',
      schema: z.object({ entries: z.array(auditEntry), next: z.string().nullable().describe('Pass as `before` for the next page') }),
    },
    errors: [400, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/audit/settings',
    operationId: 'getToolAuditSettings',
    summary: 'How long the tool audit is kept',
    response: { status: 200, name: 'ToolAuditSettings', schema: retention },
    errors: [503],
  }),
  admin({
    method: 'put',
    path: '/api/v1/admin/audit/settings',
    operationId: 'updateToolAuditSettings',
    summary: 'Change how long the tool audit is kept',
    body: { name: 'ToolAuditSettingsUpdate', schema: retention },
    response: { status: 200, name: 'ToolAuditSettingsSaved', schema: retention },
    errors: [400, 503],
  }),
  {
    method: 'get',
    path: '/api/v1/bots/{botId}/agent-profiles',
    operationId: 'listBotAgentProfiles',
    summary: 'Enabled agent profiles granted to this bot or its owner (owner or admin)',
    tag: 'tools',
    access: 'user',
    params: botParams,
    response: { status: 200, name: 'BotAgentProfiles', schema: z.object({ profiles: z.array(botProfile) }) },
    errors: [403, 404, 503],
  },
];

function fieldsOf(error: z.ZodError): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) fields[[...issue.path.map(String), key].join('.')] ??= 'Unknown field';
      continue;
    }
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : 'input';
    fields[key] ??= issue.message;
  }
  return fields;
}

function invalid(fields: Record<string, string>): HttpError {
  return new HttpError(
    400,
    'validation',
    `Invalid input: ${Object.entries(fields)
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ')}`,
    { fields },
  );
}

function parse<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw invalid(fieldsOf(parsed.error));
  return parsed.data;
}

function param(req: Request, name: string, pattern: RegExp, what: string): string {
  const v = req.params[name];
  if (typeof v !== 'string' || !pattern.test(v)) throw new HttpError(404, 'not_found', `${what} not found`);
  return v;
}

function query(req: Request): z.output<typeof auditQuery> {
  const raw: Record<string, unknown> = {};
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.query)) {
    if (Array.isArray(v)) fields[k] = 'Give this parameter once';
    else raw[k] = v;
  }
  const parsed = auditQuery.safeParse(raw);
  if (!parsed.success) Object.assign(fields, fieldsOf(parsed.error));
  if (!parsed.success || Object.keys(fields).length > 0)
    throw new HttpError(400, 'invalid_query', `Invalid query: ${Object.keys(fields).join(', ')}`, { fields });
  return parsed.data;
}

export function agentProfilesApiRoutes(deps: AgentProfilesApiDeps): Router {
  const router = Router();
  const guard = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];
  const user = [apiHeaders(), csrfGuard(), requireUser()];
  const json = jsonBody({ limit: '64kb' });
  const { profiles } = deps;

  const view = async (p: AgentProfile) => ({
    id: p.id,
    label: p.label,
    accountUid: p.accountUid,
    scopeDescription: p.scopeDescription,
    toolFamilies: p.toolFamilies,
    triggerGroups: p.triggerGroups,
    confirmGroups: p.confirmGroups,
    enabled: p.enabled,
    credentials: (await profiles.credentialNames(p.id)).map((name) => ({ name, set: true as const })),
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  });
  const grantOut = (g: AgentProfileGrant) => ({
    id: g.id,
    botId: g.botId,
    ownerUid: g.ownerUid,
    maxScope: g.maxScope,
    approvedBy: g.approvedBy,
    createdAt: g.createdAt,
  });
  const requireProfile = async (req: Request): Promise<AgentProfile> => {
    const found = await profiles.get(param(req, 'id', ID, 'Agent profile'));
    if (!found) throw new HttpError(404, 'not_found', 'Agent profile not found');
    return found;
  };

  /** S13 at save, as the saving admin; a refusal is a field error on accountUid. */
  const checkAccount = async (req: Request, accountUid: string): Promise<void> => {
    // A Nextcloud failure here is 502, from the app's error handler.
    const problem = await deps.accounts.atSave(requireActingUser(req), accountUid);
    if (problem) throw invalid({ accountUid: problem });
  };
  const credentialsOf = async (id: string | null, body: z.output<typeof profileBody>): Promise<void> => {
    const names = new Set<string>();
    const existing = id === null ? [] : await profiles.credentialNames(id);
    body.credentials?.forEach((c, i) => {
      if (names.has(c.name)) throw invalid({ [`credentials.${i}.name`]: 'Listed twice' });
      names.add(c.name);
      if (c.value === undefined && !existing.includes(c.name)) throw invalid({ [`credentials.${i}.value`]: 'A new credential needs a value' });
    });
  };

  router.get('/api/v1/admin/agent-profiles', ...guard, async (_req, res) => {
    res.json({ profiles: await Promise.all((await profiles.list()).map(view)) });
  });

  router.post('/api/v1/admin/agent-profiles', ...guard, json, async (req, res) => {
    const body = parse(profileBody, req.body);
    await credentialsOf(null, body);
    await checkAccount(req, body.accountUid);
    const created = await profiles.create(body, requireActingUser(req).uid);
    if (body.credentials) await profiles.setCredentials(created.id, body.credentials);
    deps.logger.info({ profile: created.id, account: created.accountUid, admin: requireActingUser(req).uid }, 'agent profile created');
    res.json({ profile: await view(created) });
  });

  router.get('/api/v1/admin/agent-profiles/:id', ...guard, async (req, res) => {
    res.json({ profile: await view(await requireProfile(req)) });
  });

  router.put('/api/v1/admin/agent-profiles/:id', ...guard, json, async (req, res) => {
    const current = await requireProfile(req);
    const body = parse(profileBody, req.body);
    await credentialsOf(current.id, body);
    await checkAccount(req, body.accountUid);
    const updated = await profiles.update(current.id, body);
    if (!updated) throw new HttpError(404, 'not_found', 'Agent profile not found');
    try {
      if (body.credentials) await profiles.setCredentials(current.id, body.credentials);
    } catch (err) {
      if (err instanceof CredentialMissingError) throw invalid({ credentials: err.message });
      throw err;
    }
    deps.accounts.forget(current.accountUid);
    deps.logger.info({ profile: current.id, enabled: updated.enabled, admin: requireActingUser(req).uid }, 'agent profile updated');
    res.json({ profile: await view(updated) });
  });

  router.delete('/api/v1/admin/agent-profiles/:id', ...guard, async (req, res) => {
    const current = await requireProfile(req);
    await profiles.delete(current.id);
    deps.logger.info({ profile: current.id, admin: requireActingUser(req).uid }, 'agent profile deleted');
    res.json({ deleted: true });
  });

  router.get('/api/v1/admin/agent-profiles/:id/grants', ...guard, async (req, res) => {
    const p = await requireProfile(req);
    res.json({ grants: (await profiles.grants(p.id)).map(grantOut) });
  });

  router.post('/api/v1/admin/agent-profiles/:id/grants', ...guard, json, async (req, res) => {
    const p = await requireProfile(req);
    const body = parse(grantBody, req.body);
    if ((body.botId === undefined) === (body.ownerUid === undefined)) throw invalid({ botId: 'Give exactly one of botId and ownerUid' });
    if (body.botId !== undefined && !(await deps.bots.get(body.botId))) throw invalid({ botId: 'No such bot' });
    let scope: ResourceScope;
    try {
      scope = new ResourceScope(body.maxScope);
    } catch (err) {
      throw invalid({ maxScope: err instanceof Error ? err.message : 'Invalid scope' });
    }
    const target = body.botId !== undefined ? { botId: body.botId } : { ownerUid: body.ownerUid as string };
    const grant = await profiles.addGrant(p.id, target, scope, requireActingUser(req).uid);
    deps.logger.info({ profile: p.id, grant: grant.id, ...target, admin: requireActingUser(req).uid }, 'agent profile granted');
    res.json({ grants: (await profiles.grants(p.id)).map(grantOut) });
  });

  router.delete('/api/v1/admin/agent-profiles/:id/grants/:grantId', ...guard, async (req, res) => {
    const p = await requireProfile(req);
    const grantId = param(req, 'grantId', ID, 'Grant');
    if (!(await profiles.deleteGrant(p.id, grantId))) throw new HttpError(404, 'not_found', 'Grant not found');
    deps.logger.info({ profile: p.id, grant: grantId, admin: requireActingUser(req).uid }, 'agent profile grant withdrawn');
    res.json({ grants: (await profiles.grants(p.id)).map(grantOut) });
  });

  router.get('/api/v1/admin/agent-profile-settings', ...guard, async (_req, res) => {
    res.json({ delegatedAdminGroups: (await deps.settings.get<string[]>(DELEGATED_ADMIN_GROUPS_KEY)) ?? [] });
  });

  router.put('/api/v1/admin/agent-profile-settings', ...guard, json, async (req, res) => {
    const body = parse(profileSettings, req.body);
    await deps.settings.set(DELEGATED_ADMIN_GROUPS_KEY, [...new Set(body.delegatedAdminGroups)]);
    deps.accounts.forget();
    res.json({ delegatedAdminGroups: [...new Set(body.delegatedAdminGroups)] });
  });

  router.get('/api/v1/admin/audit', ...guard, async (req, res) => {
    const q = query(req);
    res.json(await deps.audit.query(q));
  });

  router.get('/api/v1/admin/audit/settings', ...guard, async (_req, res) => {
    res.json({ retentionDays: await deps.audit.retentionDays() });
  });

  router.put('/api/v1/admin/audit/settings', ...guard, json, async (req, res) => {
    const body = parse(retention, req.body);
    await deps.audit.setRetentionDays(body.retentionDays);
    res.json({ retentionDays: body.retentionDays });
  });

  router.get('/api/v1/bots/:botId/agent-profiles', ...user, async (req, res) => {
    const me = requireActingUser(req);
    const bot = await deps.bots.get(param(req, 'botId', BOT_ID, 'Bot'));
    if (!bot) throw new HttpError(404, 'not_found', 'Bot not found');
    if (bot.ownerUid !== me.uid && !(await deps.adminCheck.isAdmin(me)))
      throw new HttpError(403, 'forbidden', "Only the bot's owner or an administrator can see its agent profiles");
    const granted = await profiles.grantedTo(bot);
    res.json({
      profiles: granted.map(({ profile, grant }) => ({
        id: profile.id,
        label: profile.label,
        accountUid: profile.accountUid,
        scopeDescription: profile.scopeDescription,
        toolFamilies: profile.toolFamilies,
        maxScope: grant.maxScope,
      })),
    });
  });

  return router;
}
