// /api/v1 for knowledge: a bot's sources (files and folders picked by path and
// resolved as the bot's owner, web URLs), their status, progress and per-file
// errors, reindexing; and the admin's knowledge settings (keys write-only,
// masked), reindex-all, and endpoint tests that report a status only (S18).
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import { botIdParams } from '../../bots/bot-schemas.ts';
import type { Bot } from '../../bots/bot-store.ts';
import { GovernanceError } from '../../bots/governance.ts';
import type { KnowledgeModule } from '../../knowledge/knowledge-module.ts';
import { SourceError, type SourceView } from '../../knowledge/source-model.ts';
import type { Logger } from '../../log/logger.ts';
import { NextcloudForbiddenError, UnsafeRequestError } from '../../nextcloud/errors.ts';
import type { ActingUser } from '../../nextcloud/identity.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin, requireUser } from '../middleware/access.ts';
import { expressPath, type RouteSpec } from '../openapi.ts';
import { requireActingUser } from '../request-auth.ts';
import { jsonBody } from '../json-body.ts';

export interface KnowledgeApiDeps {
  knowledge: Pick<KnowledgeModule, 'settings' | 'sources' | 'embeddings' | 'vision' | 'speech' | 'docling'>;
  /** The bot access helpers of the bots API: the bot, and whether this user manages it (owner, admin, scope manager). */
  bots: { require(botId: string): Promise<Bot>; canManage(user: ActingUser, bot: Bot): Promise<boolean> };
  adminCheck: AdminCheck;
  logger: Logger;
}

type Op =
  | 'listKnowledgeSources'
  | 'addKnowledgeSource'
  | 'getKnowledgeSource'
  | 'deleteKnowledgeSource'
  | 'reindexKnowledgeSource'
  | 'getKnowledgeSettings'
  | 'updateKnowledgeSettings'
  | 'reindexAllKnowledge'
  | 'testKnowledgeEndpoint';

// ---- schemas (validation and the OpenAPI document) ----

const sourceParams = botIdParams.extend({
  sourceId: z.coerce
    .number({ error: 'Must be a source id' })
    .int()
    .positive()
    .max(2 ** 31),
});
export const KNOWLEDGE_SERVICES = ['embeddings', 'vision', 'speech', 'docling'] as const;
const serviceParams = z.object({ service: z.enum(KNOWLEDGE_SERVICES) });

const pathField = z
  .string({ error: 'Must be a path in your files' })
  .trim()
  .min(1, 'Enter the path of a file or folder in your files')
  .max(4096, 'At most 4096 characters')
  .refine((p) => !/[\u0000-\u001f\u007f\\]/.test(p), 'Must not contain control characters or backslashes')
  .refine((p) => p.split('/').every((s) => s !== '.' && s !== '..'), 'Must not contain "." or ".." segments');
const urlField = z.string({ error: 'Must be a web address' }).trim().min(1, 'Enter a web address').max(2048, 'At most 2048 characters');

export const sourceCreateSchema = z
  .object({
    path: pathField.optional().describe("A file or folder in the bot owner's files, e.g. /Documents/Course (folders are read recursively)"),
    url: urlField.optional().describe('An http(s) web page or document'),
  })
  .strict()
  .superRefine((v, ctx) => {
    const given = (v.path !== undefined ? 1 : 0) + (v.url !== undefined ? 1 : 0);
    if (given === 0) ctx.addIssue({ code: 'custom', path: ['path'], message: 'Give either path or url' });
    if (given > 1) ctx.addIssue({ code: 'custom', path: ['url'], message: 'Give either path or url, not both' });
  });

const progress = z.object({ current: z.number(), total: z.number(), percent: z.number() });
const sourceAnswer = z.object({
  id: z.number(),
  botId: z.string(),
  ownerUid: z.string(),
  kind: z.enum(['file', 'folder', 'url']),
  label: z.string(),
  fileId: z.string().nullable(),
  url: z.string().nullable(),
  status: z.enum(['pending', 'indexing', 'ready', 'error']),
  stage: z.enum(['queued', 'collecting', 'extracting', 'chunking', 'embedding', 'storing', 'ready']).nullable(),
  progress,
  message: z.string().nullable(),
  files: z.number(),
  errors: z.number(),
  chunks: z.number(),
  embeddingModel: z.string().nullable(),
  lastIndexedAt: z.number().nullable(),
  /** Indexed with another embedding model than the current one: search finds nothing until it is reindexed. */
  needsReindex: z.boolean(),
});
const sourceListAnswer = z.object({
  sources: z.array(sourceAnswer),
  embeddingModel: z.string().nullable().describe('The embedding model new chunks are stored under; null when none is configured'),
  warning: z.string().nullable(),
});
const sourceAddedAnswer = z.object({
  source: sourceAnswer,
  created: z.boolean().describe('false: the same file, folder or URL was already a source; the existing one is returned'),
});
const sourceDetailAnswer = z.object({
  source: sourceAnswer,
  files: z.array(z.object({ fileKey: z.string(), path: z.string(), status: z.enum(['ready', 'error']), error: z.string().nullable(), chunks: z.number() })),
});
const sourceDeletedAnswer = z.object({ success: z.literal(true) });
const sourceReindexAnswer = z.object({ source: sourceAnswer });

const settingsAnswer = z.object({
  settings: z.record(z.string(), z.unknown()).describe('Knowledge settings; embeddingKey, visionKey, speechKey and doclingKey appear only as {set, masked}'),
});
const settingsBody = z
  .record(z.string(), z.unknown())
  .describe('Any subset of the knowledge settings. Keys (embeddingKey, visionKey, speechKey, doclingKey) are write-only: a string sets, "" keeps, null clears');
const settingsSavedAnswer = z.object({
  settings: z.record(z.string(), z.unknown()),
  embeddingChanged: z.boolean(),
  warning: z.string().nullable().describe('Set when the embedding model or endpoint changed: stored vectors no longer match until everything is reindexed'),
});
const reindexAllAnswer = z.object({ queued: z.number(), message: z.string() });
const testAnswer = z.object({
  service: z.enum(KNOWLEDGE_SERVICES),
  ok: z.boolean(),
  status: z.number().nullable(),
  message: z.string().describe("A status line; never the provider's answer"),
});

const sourceBodySpec = { name: 'KnowledgeSourceCreate', schema: sourceCreateSchema };

export const KNOWLEDGE_API_SPECS: Array<RouteSpec & { operationId: Op }> = [
  {
    method: 'get',
    path: '/api/v1/bots/{id}/knowledge/sources',
    operationId: 'listKnowledgeSources',
    summary: "A bot's knowledge sources with status and progress",
    tag: 'knowledge',
    access: 'user',
    params: botIdParams,
    response: { status: 200, name: 'KnowledgeSourceList', schema: sourceListAnswer },
    errors: [403, 404],
  },
  {
    method: 'post',
    path: '/api/v1/bots/{id}/knowledge/sources',
    operationId: 'addKnowledgeSource',
    summary: "Add a file or folder (by path, resolved as the bot's owner) or a web URL; indexing runs in the background",
    tag: 'knowledge',
    access: 'user',
    params: botIdParams,
    body: sourceBodySpec,
    response: {
      status: 201,
      name: 'KnowledgeSourceAdded',
      schema: sourceAddedAnswer,
      description: 'Added (200 with created=false when it was already a source)',
    },
    errors: [400, 403, 404, 502],
  },
  {
    method: 'get',
    path: '/api/v1/bots/{id}/knowledge/sources/{sourceId}',
    operationId: 'getKnowledgeSource',
    summary: 'One source: status, progress and the result of each file',
    tag: 'knowledge',
    access: 'user',
    params: sourceParams,
    response: { status: 200, name: 'KnowledgeSourceDetail', schema: sourceDetailAnswer },
    errors: [403, 404],
  },
  {
    method: 'delete',
    path: '/api/v1/bots/{id}/knowledge/sources/{sourceId}',
    operationId: 'deleteKnowledgeSource',
    summary: 'Remove a source and its chunks',
    tag: 'knowledge',
    access: 'user',
    params: sourceParams,
    response: { status: 200, name: 'KnowledgeSourceDeleted', schema: sourceDeletedAnswer },
    errors: [403, 404],
  },
  {
    method: 'post',
    path: '/api/v1/bots/{id}/knowledge/sources/{sourceId}/reindex',
    operationId: 'reindexKnowledgeSource',
    summary: 'Read and embed a source again, changed or not',
    tag: 'knowledge',
    access: 'user',
    params: sourceParams,
    response: { status: 200, name: 'KnowledgeSourceReindexed', schema: sourceReindexAnswer },
    errors: [403, 404],
  },
  {
    method: 'get',
    path: '/api/v1/admin/knowledge/settings',
    operationId: 'getKnowledgeSettings',
    summary: 'Knowledge settings: embeddings, chunking, vision, speech, Docling (keys masked)',
    tag: 'admin',
    access: 'admin',
    response: { status: 200, name: 'KnowledgeSettings', schema: settingsAnswer },
    errors: [503],
  },
  {
    method: 'put',
    path: '/api/v1/admin/knowledge/settings',
    operationId: 'updateKnowledgeSettings',
    summary: 'Change knowledge settings; warns when the embedding model changed',
    tag: 'admin',
    access: 'admin',
    body: { name: 'KnowledgeSettingsUpdate', schema: settingsBody },
    response: { status: 200, name: 'KnowledgeSettingsSaved', schema: settingsSavedAnswer },
    errors: [400, 503],
  },
  {
    method: 'post',
    path: '/api/v1/admin/knowledge/reindex-all',
    operationId: 'reindexAllKnowledge',
    summary: 'Embed every source of every bot again (after the embedding model changed)',
    tag: 'admin',
    access: 'admin',
    response: { status: 200, name: 'KnowledgeReindexAll', schema: reindexAllAnswer },
    errors: [503],
  },
  {
    method: 'post',
    path: '/api/v1/admin/knowledge/test/{service}',
    operationId: 'testKnowledgeEndpoint',
    summary: 'Test the saved embeddings, vision, speech or Docling endpoint; reports a status, never a body',
    tag: 'admin',
    access: 'admin',
    params: serviceParams,
    response: { status: 200, name: 'KnowledgeEndpointTest', schema: testAnswer },
    errors: [404, 503],
  },
];

// ---- helpers ----

type Handler = (req: Request, res: Response, user: ActingUser) => Promise<void>;

function fieldsOf(error: z.ZodError): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) fields[k] ??= 'Unknown field';
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

function toHttp(err: unknown): unknown {
  if (err instanceof SourceError)
    return new HttpError(err.status, err.status === 404 ? 'not_found' : err.status === 403 ? 'forbidden' : 'invalid_source', err.message);
  if (err instanceof GovernanceError) return new HttpError(err.status, err.code, err.message);
  if (err instanceof UnsafeRequestError) return invalid({ path: 'Not a path inside your files' });
  if (err instanceof NextcloudForbiddenError) return new HttpError(403, 'nextcloud_forbidden', 'Nextcloud refused this for your account');
  // Settings errors: one message per field, in the shape every other route uses.
  if (err instanceof HttpError && err.code === 'invalid_settings' && err.details && typeof err.details === 'object') {
    return new HttpError(400, 'validation', err.message, { fields: err.details });
  }
  return err;
}

export function knowledgeApiRoutes(deps: KnowledgeApiDeps): Router {
  const router = Router();
  const k = deps.knowledge;

  const managedBot = async (req: Request, user: ActingUser): Promise<Bot> => {
    const parsed = botIdParams.safeParse(req.params);
    if (!parsed.success) throw new HttpError(404, 'not_found', 'Bot not found');
    const bot = await deps.bots.require(parsed.data.id);
    if (!(await deps.bots.canManage(user, bot)))
      throw new HttpError(403, 'forbidden', 'Only the bot\u2019s owner or an administrator may manage its knowledge');
    return bot;
  };

  const sourceOf = async (req: Request, bot: Bot): Promise<SourceView> => {
    const parsed = sourceParams.safeParse(req.params);
    const source = parsed.success ? await k.sources.get(parsed.data.sourceId) : null;
    // Another bot's source is "not found" here: ids do not reveal what other bots have.
    if (!source || source.botId !== bot.id) throw new HttpError(404, 'not_found', 'Source not found');
    return source;
  };

  const present = (s: SourceView, model: string | null) => ({ ...s, needsReindex: model !== null && s.embeddingModel !== null && s.embeddingModel !== model });

  const activeModel = () => k.embeddings.activeModel();

  const handlers: Record<Op, Handler> = {
    listKnowledgeSources: async (req, res, user) => {
      const bot = await managedBot(req, user);
      const model = await activeModel();
      const sources = (await k.sources.list(bot.id)).map((s) => present(s, model));
      const stale = sources.filter((s) => s.needsReindex).length;
      const warning =
        model === null
          ? 'No embedding model is configured, so nothing can be indexed or searched; ask an administrator to set one.'
          : stale > 0
            ? `${stale} source(s) were indexed with another embedding model and cannot be searched until they are reindexed.`
            : null;
      res.json({ sources, embeddingModel: model, warning });
    },
    addKnowledgeSource: async (req, res, user) => {
      const bot = await managedBot(req, user);
      const parsed = sourceCreateSchema.safeParse(req.body ?? {});
      if (!parsed.success) throw invalid(fieldsOf(parsed.error));
      const before = new Set((await k.sources.list(bot.id)).map((s) => s.id));
      let source: SourceView;
      if (parsed.data.path !== undefined) {
        // Files are read as the bot's owner later on; only the owner can pick them, in their own files (S11).
        if (user.uid !== bot.ownerUid) throw new HttpError(403, 'owner_only', "Only the bot's owner can add files or folders: they are read as the owner");
        source = await k.sources.addPath(bot.id, user, parsed.data.path).catch((err: unknown) => {
          if (err instanceof SourceError && err.status === 400) throw invalid({ path: err.message });
          throw err;
        });
      } else {
        source = await k.sources.addUrl(bot.id, user, parsed.data.url ?? '').catch((err: unknown) => {
          if (err instanceof SourceError && err.status === 400) throw invalid({ url: err.message });
          throw err;
        });
      }
      const created = !before.has(source.id);
      deps.logger.info({ botId: bot.id, sourceId: source.id, kind: source.kind, created }, 'knowledge source added');
      res.status(created ? 201 : 200).json({ source: present(source, await activeModel()), created });
    },
    getKnowledgeSource: async (req, res, user) => {
      const bot = await managedBot(req, user);
      const source = await sourceOf(req, bot);
      res.json({ source: present(source, await activeModel()), files: await k.sources.files(source.id) });
    },
    deleteKnowledgeSource: async (req, res, user) => {
      const bot = await managedBot(req, user);
      const source = await sourceOf(req, bot);
      await k.sources.remove(source.id);
      deps.logger.info({ botId: bot.id, sourceId: source.id }, 'knowledge source removed');
      res.json({ success: true });
    },
    reindexKnowledgeSource: async (req, res, user) => {
      const bot = await managedBot(req, user);
      const source = await sourceOf(req, bot);
      await k.sources.reindex(source.id);
      const now = (await k.sources.get(source.id)) ?? source;
      res.json({ source: present(now, await activeModel()) });
    },
    getKnowledgeSettings: async (_req, res) => {
      res.json({ settings: await k.settings.toPublic(await k.settings.get()) });
    },
    updateKnowledgeSettings: async (req, res) => {
      const patch: unknown = req.body;
      const result = await k.settings.update(patch);
      // Field names only: values may hold keys.
      deps.logger.info(
        { fields: typeof patch === 'object' && patch !== null ? Object.keys(patch) : [], embeddingChanged: result.embeddingChanged },
        'knowledge settings updated',
      );
      res.json({
        settings: await k.settings.toPublic(result.settings),
        embeddingChanged: result.embeddingChanged,
        warning: result.embeddingChanged
          ? 'The embedding model or endpoint changed. Documents indexed before cannot be searched until they are reindexed: use "reindex all" (POST /api/v1/admin/knowledge/reindex-all).'
          : null,
      });
    },
    reindexAllKnowledge: async (_req, res) => {
      const queued = await k.sources.reindexAll();
      deps.logger.info({ queued }, 'all knowledge sources queued for reindexing');
      res.json({ queued, message: `${queued} source(s) queued for reindexing. Documents and images posted in rooms are not reindexed; they expire.` });
    },
    testKnowledgeEndpoint: async (req, res) => {
      const parsed = serviceParams.safeParse(req.params);
      if (!parsed.success) throw new HttpError(404, 'not_found', 'Unknown service: use embeddings, vision, speech or docling');
      const service = parsed.data.service;
      const result =
        service === 'vision'
          ? await k.vision.test()
          : service === 'speech'
            ? await k.speech.test()
            : service === 'docling'
              ? await k.docling.test()
              : await testEmbeddings(k.embeddings);
      res.json({ service, ok: result.ok, status: result.status, message: result.message });
    },
  };

  const userAccess = [apiHeaders(), csrfGuard(), requireUser()];
  const adminAccess = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];
  const json = jsonBody({ limit: '64kb' });
  for (const spec of KNOWLEDGE_API_SPECS) {
    const handler = handlers[spec.operationId];
    const chain: RequestHandler[] = [...(spec.access === 'admin' ? adminAccess : userAccess)];
    if (spec.body) chain.push(json);
    chain.push(async (req: Request, res: Response, next: NextFunction) => {
      try {
        await handler(req, res, requireActingUser(req));
      } catch (err) {
        next(toHttp(err));
      }
    });
    router[spec.method](expressPath(spec.path), ...chain);
  }
  return router;
}

/** Embeds one short text with the saved settings; the status only (S18). */
async function testEmbeddings(embeddings: KnowledgeModule['embeddings']): Promise<{ ok: boolean; status: number | null; message: string }> {
  const model = await embeddings.activeModel();
  if (model === null) return { ok: false, status: null, message: 'no embedding model is configured' };
  try {
    const r = await embeddings.embed(['Talk AI embedding test'], { maxRetries: 0 });
    return { ok: true, status: 200, message: `the embedding model ${r.model} answered with ${r.dimensions}-dimensional vectors` };
  } catch (err) {
    const status =
      typeof (err as { status?: unknown }).status === 'number' && (err as { status: number }).status > 0 ? (err as { status: number }).status : null;
    return { ok: false, status, message: err instanceof Error ? err.message.slice(0, 200) : 'the test failed' };
  }
}
