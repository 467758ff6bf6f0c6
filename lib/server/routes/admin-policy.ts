// Admin policies that are lists more than settings: the egress allow-list (S18), the agent loop's
// settings (iteration cap, forced-search phrases) and the hosts replies may link to (S8).
import { Router } from 'express';
import { z } from 'zod';
import { AGENT_DEFAULTS, loadAgentSettings, saveAgentSettings } from '../../agent/agent-settings.ts';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { EgressSettingsService } from '../../egress/egress-settings.ts';
import type { Logger } from '../../log/logger.ts';
import type { SettingsStore } from '../../storage/settings-store.ts';
import type { LinkAllowList } from '../../replies/link-allow-list.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { jsonBody } from '../json-body.ts';

export interface AdminPolicyDeps {
  settings: SettingsStore;
  egress: EgressSettingsService;
  links: LinkAllowList;
  adminCheck: AdminCheck;
  logger: Logger;
  /** After a change, so the other thread reads it too. */
  onChange?: () => void | Promise<void>;
}

const egressAnswer = z.object({
  allowList: z
    .array(z.string())
    .describe('Host names or CIDR ranges (a bare IP is a /32 or /128) that may be private: a local model server, an internal MCP server'),
});
const egressBody = z.object({ allowList: z.array(z.string()).max(100) }).describe('Replaces the list');
const phrases = z.record(z.string(), z.array(z.string()));
const agentSettings = z.object({
  maxIterations: z.number().int().min(1).max(50),
  forcedSearchPhrases: phrases.describe('Per language code, phrases that make the first model call use a read-only search tool'),
});
const agentAnswer = z.object({ settings: agentSettings, defaults: agentSettings });
const agentBody = agentSettings.partial().describe('Top-level fields replace the stored ones');
const linksAnswer = z.object({ hosts: z.array(z.string()).describe('Hosts (and their subdomains) replies may link to besides Nextcloud') });
const linksBody = z.object({ hosts: z.array(z.string()).max(100) }).describe('Replaces the list');

const admin = (s: Omit<RouteSpec, 'tag' | 'access'>): RouteSpec => ({ ...s, tag: 'admin', access: 'admin' });

export const ADMIN_POLICY_SPECS: RouteSpec[] = [
  admin({
    method: 'get',
    path: '/api/v1/admin/egress',
    operationId: 'getEgressSettings',
    summary: 'Private hosts and ranges that model providers, MCP servers and URL sources may reach (S18)',
    response: { status: 200, name: 'EgressSettings', schema: egressAnswer },
    errors: [503],
  }),
  admin({
    method: 'put',
    path: '/api/v1/admin/egress',
    operationId: 'updateEgressSettings',
    summary: 'Replace the egress allow-list',
    body: { name: 'EgressSettingsUpdate', schema: egressBody },
    response: { status: 200, name: 'EgressSettingsSaved', schema: egressAnswer },
    errors: [400, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/agent',
    operationId: 'getAgentSettings',
    summary: 'Agent loop settings: iteration cap and forced-search phrases per language',
    response: { status: 200, name: 'AgentSettings', schema: agentAnswer },
    errors: [503],
  }),
  admin({
    method: 'put',
    path: '/api/v1/admin/agent',
    operationId: 'updateAgentSettings',
    summary: 'Change the agent loop settings',
    body: { name: 'AgentSettingsUpdate', schema: agentBody },
    response: { status: 200, name: 'AgentSettingsSaved', schema: agentAnswer },
    errors: [400, 503],
  }),
  admin({
    method: 'get',
    path: '/api/v1/admin/reply-links',
    operationId: 'getReplyLinkHosts',
    summary: 'Hosts replies may link to besides Nextcloud (S8)',
    response: { status: 200, name: 'ReplyLinkHosts', schema: linksAnswer },
    errors: [503],
  }),
  admin({
    method: 'put',
    path: '/api/v1/admin/reply-links',
    operationId: 'updateReplyLinkHosts',
    summary: 'Replace the hosts replies may link to',
    body: { name: 'ReplyLinkHostsUpdate', schema: linksBody },
    response: { status: 200, name: 'ReplyLinkHostsSaved', schema: linksAnswer },
    errors: [400, 503],
  }),
];

/** GET/PUT /api/v1/admin/{egress,agent,reply-links}. Logs name the changed fields, never values. */
export function adminPolicyRoutes(deps: AdminPolicyDeps): Router {
  const router = Router();
  const guard = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];
  const json = jsonBody({ limit: '256kb' });
  const changed = async () => {
    try {
      await deps.onChange?.();
    } catch (err) {
      deps.logger.warn({ err }, 'could not propagate an admin policy change');
    }
  };

  router.get('/api/v1/admin/egress', ...guard, async (_req, res) => {
    res.json({ allowList: (await deps.egress.get()).allowList });
  });
  router.put('/api/v1/admin/egress', ...guard, json, async (req, res) => {
    const saved = await deps.egress.update(req.body);
    deps.logger.info({ entries: saved.allowList.length }, 'egress allow-list updated');
    await changed();
    res.json({ allowList: saved.allowList });
  });

  router.get('/api/v1/admin/agent', ...guard, async (_req, res) => {
    res.json({ settings: await loadAgentSettings(deps.settings), defaults: AGENT_DEFAULTS });
  });
  router.put('/api/v1/admin/agent', ...guard, json, async (req, res) => {
    const saved = await saveAgentSettings(deps.settings, req.body);
    if (!saved.ok) throw new HttpError(400, 'invalid_settings', `Invalid settings: ${Object.keys(saved.errors).join(', ')}`, saved.errors);
    deps.logger.info({ fields: Object.keys(req.body as object) }, 'agent settings updated');
    await changed();
    res.json({ settings: saved.settings, defaults: AGENT_DEFAULTS });
  });

  router.get('/api/v1/admin/reply-links', ...guard, async (_req, res) => {
    res.json({ hosts: await deps.links.load() });
  });
  router.put('/api/v1/admin/reply-links', ...guard, json, async (req, res) => {
    const hosts = await deps.links.update(req.body);
    deps.logger.info({ entries: hosts.length }, 'reply link hosts updated');
    await changed();
    res.json({ hosts });
  });

  return router;
}
