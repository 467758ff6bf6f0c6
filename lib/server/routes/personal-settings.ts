// GET/PUT /api/v1/me/settings: the personal settings on the app page. Nextcloud 29 refuses a
// non-admin's save on a personal declarative form (test/fixtures/nextcloud29/86-appapi-declarative-settings.json), so the page offers the same choice
// and we write it as that user through AppAPI's preferences, where the form reads it too.
import { Router } from 'express';
import { z } from 'zod';
import { TOOL_FAMILIES } from '../../appapi/settings-forms.ts';
import type { ToolFamilyChoice, ToolFamilyPreferences } from '../../appapi/tool-family-preferences.ts';
import type { Logger } from '../../log/logger.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireUser } from '../middleware/access.ts';
import type { RouteSpec } from '../openapi.ts';
import { requireActingUser } from '../request-auth.ts';
import { jsonBody } from '../json-body.ts';

const families = z.object(
  Object.fromEntries(TOOL_FAMILIES.map((f) => [f, z.boolean({ error: 'Must be true or false' })])) as Record<(typeof TOOL_FAMILIES)[number], z.ZodBoolean>,
);
const answer = z.object({ toolFamilies: families.describe('First-party tool families my bots may use') });
const body = z.object({ toolFamilies: families.partial().strict() }).strict();

export const PERSONAL_SETTINGS_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/api/v1/me/settings',
    operationId: 'getPersonalSettings',
    summary: 'My personal settings: the tool families my bots may use',
    tag: 'session',
    access: 'user',
    response: { status: 200, name: 'PersonalSettings', schema: answer },
    errors: [502],
  },
  {
    method: 'put',
    path: '/api/v1/me/settings',
    operationId: 'updatePersonalSettings',
    summary: 'Change my personal settings (stored as my AppAPI preference, like the personal settings form)',
    tag: 'session',
    access: 'user',
    body: { name: 'PersonalSettingsUpdate', schema: body },
    response: { status: 200, name: 'PersonalSettingsSaved', schema: answer },
    errors: [400, 502],
  },
];

export function personalSettingsRoutes(deps: { preferences: ToolFamilyPreferences; logger: Logger }): Router {
  const router = Router();
  const user = [apiHeaders(), csrfGuard(), requireUser()];

  router.get('/api/v1/me/settings', ...user, async (req, res) => {
    const toolFamilies = await deps.preferences.get(requireActingUser(req));
    res.json({ toolFamilies });
  });

  router.put('/api/v1/me/settings', ...user, jsonBody({ limit: '4kb' }), async (req, res) => {
    const parsed = body.safeParse(req.body);
    if (!parsed.success) {
      const fields: Record<string, string> = {};
      for (const issue of parsed.error.issues) {
        const keys =
          issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path.map(String), k].join('.')) : [issue.path.map(String).join('.') || 'input'];
        for (const k of keys) fields[k] ??= issue.code === 'unrecognized_keys' ? 'Unknown field' : issue.message;
      }
      throw new HttpError(400, 'invalid_settings', `Invalid settings: ${Object.keys(fields).join(', ')}`, { fields });
    }
    const acting = requireActingUser(req);
    const current = await deps.preferences.get(acting);
    const next: ToolFamilyChoice = { ...current, ...parsed.data.toolFamilies };
    const toolFamilies = await deps.preferences.set(acting, next);
    res.json({ toolFamilies });
  });

  return router;
}
