import { Router } from 'express';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { LlmSettingsService } from '../../llm/llm-settings.ts';
import type { ModelCatalog } from '../../llm/model-catalog.ts';
import type { Logger } from '../../log/logger.ts';
import { apiHeaders, csrfGuard, requireAdmin, requireUser } from '../middleware/access.ts';
import { jsonBody } from '../json-body.ts';

export interface AdminSettingsDeps {
  llmSettings: LlmSettingsService;
  catalog: ModelCatalog;
  adminCheck: AdminCheck;
  logger: Logger;
}

/**
 * The admin's model-provider settings and the model lists. Keys are
 * write-only: answers carry `{set, masked}` only. Live listings report a
 * status, never a provider's body (S18).
 */
export function adminSettingsRoutes(deps: AdminSettingsDeps): Router {
  const router = Router();
  const admin = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];

  router.get('/api/v1/admin/settings', ...admin, async (_req, res) => {
    const settings = await deps.llmSettings.get();
    res.json({ settings: deps.llmSettings.toPublic(settings) });
  });

  router.put('/api/v1/admin/settings', ...admin, jsonBody({ limit: '64kb' }), async (req, res) => {
    const patch: unknown = req.body;
    const settings = await deps.llmSettings.update(patch);
    deps.catalog.invalidate();
    // Field names only: values may hold keys.
    deps.logger.info({ fields: typeof patch === 'object' && patch !== null ? Object.keys(patch) : [] }, 'model settings updated');
    res.json({ settings: deps.llmSettings.toPublic(settings) });
  });

  router.get('/api/v1/admin/models', ...admin, async (_req, res) => {
    const live = await deps.catalog.listLive();
    res.json({
      models: live.models,
      endpoints: live.endpoints.map((e) => ({
        endpoint: e.endpoint,
        configured: e.configured,
        ok: e.ok,
        count: e.models.length,
        ...(e.status === undefined ? {} : { status: e.status }),
        ...(e.error === undefined ? {} : { error: e.error }),
      })),
    });
  });

  router.get('/api/v1/models', apiHeaders(), requireUser(), async (_req, res) => {
    const allowed = await deps.catalog.allowed();
    res.json(allowed);
  });

  return router;
}
