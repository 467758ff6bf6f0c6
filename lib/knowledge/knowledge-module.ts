// Builds the knowledge layer from the application's parts, for lib/bootstrap.ts.
import type { Kysely } from 'kysely';
import { createEgressFetch, type EgressFetch, type Resolver } from '../egress/egress-fetch.ts';
import type { LlmSettingsService } from '../llm/llm-settings.ts';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';
import type { DatabaseHandle } from '../storage/database.ts';
import { isPostgres } from '../storage/migrations/dialect.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import { MessageVerifier } from '../talk/message-verifier.ts';
import type { Vault } from '../vault/vault.ts';
import { EmbeddingsClient } from './embeddings.ts';
import { DoclingClient } from './extract/docling.ts';
import { Extractor, type ExtractorOptions } from './extract/extractor.ts';
import { JobWorker, KnowledgeJobQueue } from './ingestion-jobs.ts';
import { KnowledgeProvider } from './knowledge-provider.ts';
import { KnowledgeSettingsService } from './knowledge-settings.ts';
import { SpeechClient, VisionClient } from './media-clients.ts';
import { DavFileAccess, type FileAccess } from './nextcloud-files.ts';
import { openVectorIndex } from './open-vector-index.ts';
import { RoomKnowledge, type RoomShareCheck } from './room-knowledge.ts';
import { KnowledgeSources, type SourcesOptions } from './sources.ts';
import type { VectorIndex, VectorIndexOptions } from './vector-index.ts';

export interface KnowledgeModuleOptions {
  database: DatabaseHandle;
  /** `<persistent storage>/knowledge-vectors.sqlite`; unused on PostgreSQL. */
  sqliteVectorPath: string;
  settings: SettingsStore;
  vault: Vault;
  llmSettings: LlmSettingsService;
  nextcloud: NextcloudClient;
  logger: Logger;
  /** Admin allow-list of private hosts/ranges for the egress module (S18). */
  egressAllowList: () => readonly string[] | Promise<readonly string[]>;
  limiter?: RateLimiter | null;
  /** S11: personal bots may use anything their owner sees. Default: no bot is personal. */
  isPersonalBot?: (botId: string) => Promise<boolean>;
  /** S11: knowledge reaches guests only for bots flagged for them. Default: never. */
  guestsMayUse?: (botId: string) => Promise<boolean>;
  /** Tests: another file access or share check, DNS answers. */
  files?: FileAccess;
  shareCheck?: RoomShareCheck;
  resolve?: Resolver;
  extractor?: ExtractorOptions;
  index?: VectorIndexOptions;
  worker?: { concurrency?: number; pollMs?: number; leaseMs?: number };
  onProgress?: SourcesOptions['onProgress'];
  /** Files of one source processed at the same time (default 3). */
  fileConcurrency?: number;
  now?: () => number;
}

export interface KnowledgeModule {
  settings: KnowledgeSettingsService;
  sources: KnowledgeSources;
  rooms: RoomKnowledge;
  queue: KnowledgeJobQueue;
  worker: JobWorker;
  provider: KnowledgeProvider;
  index: VectorIndex;
  extractor: Extractor;
  embeddings: EmbeddingsClient;
  vision: VisionClient;
  speech: SpeechClient;
  docling: DoclingClient;
  /** RESET in a room: its documents and image descriptions for this bot. */
  forgetRoom(botId: string, roomToken: string): Promise<void>;
  /** A deleted bot: its sources, room items and vectors. */
  forgetBot(botId: string): Promise<void>;
  /** Periodic: room retention, orphaned sources, finished jobs. */
  maintenance(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** S15: Talk confirms, read as the author, that the message still carries this file. */
export function talkShareCheck(nextcloud: NextcloudClient, logger: Logger): RoomShareCheck {
  const verifier = new MessageVerifier(nextcloud, logger);
  return async (author: ActingUser, roomToken: string, messageId: string, fileId: string) => {
    const r = await verifier.verify(roomToken, messageId, `users/${author.uid}`, null);
    return r.ok && r.message.attachments.some((a) => a.fileId === fileId);
  };
}

export function createKnowledgeModule(o: KnowledgeModuleOptions): KnowledgeModule {
  const db = o.database.db;
  const now = o.now ?? Date.now;
  const settings = new KnowledgeSettingsService({ settings: o.settings, vault: o.vault, llmSettings: o.llmSettings });
  // Providers, Docling and vision: bodies up to 64 MB, timeouts set per call.
  const providerEgress: EgressFetch = createEgressFetch({
    allowList: o.egressAllowList,
    maxBytes: 64 * 1024 * 1024,
    timeoutMs: null,
    ...(o.resolve ? { resolve: o.resolve } : {}),
  });
  const egressFor = (limits: { maxBytes: number; timeoutMs: number }) =>
    createEgressFetch({
      allowList: o.egressAllowList,
      maxBytes: limits.maxBytes,
      timeoutMs: limits.timeoutMs,
      userAgent: 'EducAI-Bot/1.0 (Nextcloud RAG Indexer)',
      ...(o.resolve ? { resolve: o.resolve } : {}),
    });
  const index = openVectorIndex(o.database, { sqlitePath: o.sqliteVectorPath, ...o.index });
  const docling = new DoclingClient({ fetch: providerEgress, config: () => settings.doclingConfig() });
  const extractor = new Extractor({ ...o.extractor, docling });
  const embeddings = new EmbeddingsClient({
    fetch: providerEgress,
    limiter: o.limiter ?? null,
    config: async () => {
      const e = await settings.embeddingEndpoint();
      if (!e) return null;
      const s = await settings.get();
      return { endpoint: e.endpoint, key: e.key, model: e.model, batchSize: s.embeddingBatchSize, concurrency: s.embeddingConcurrency, timeoutMs: e.timeoutMs };
    },
  });
  const vision = new VisionClient({ endpoint: () => settings.visionEndpoint(), fetch: providerEgress });
  const speech = new SpeechClient({ endpoint: () => settings.speechEndpoint(), fetch: providerEgress });
  const files = o.files ?? new DavFileAccess(o.nextcloud);
  const queue = new KnowledgeJobQueue(db, { now, ...(o.worker?.leaseMs ? { leaseMs: o.worker.leaseMs } : {}) });
  let worker: JobWorker | null = null;
  const notify = () => worker?.notify();
  const sources = new KnowledgeSources({
    db,
    files,
    index,
    embeddings,
    extractor,
    settings,
    egressFor,
    queue,
    logger: o.logger,
    notify,
    now,
    ...(o.isPersonalBot ? { isPersonalBot: o.isPersonalBot } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
    ...(o.fileConcurrency ? { fileConcurrency: o.fileConcurrency } : {}),
  });
  const rooms = new RoomKnowledge({
    db,
    files,
    index,
    embeddings,
    extractor,
    vision,
    settings,
    queue,
    shareCheck: o.shareCheck ?? talkShareCheck(o.nextcloud, o.logger),
    logger: o.logger,
    notify,
    now,
  });
  worker = new JobWorker({
    queue,
    logger: o.logger,
    concurrency: o.worker?.concurrency ?? 1,
    ...(o.worker?.pollMs ? { pollMs: o.worker.pollMs } : {}),
    // One process per SQLite file: what a previous process left running is ours to resume.
    releaseOnStart: !isPostgres(db as unknown as Kysely<unknown>),
    handlers: {
      source: (job, signal) => sources.runJob(job, signal),
      'room-doc': (job, signal) => rooms.runDocumentJob(job, signal),
      'room-image': (job, signal) => rooms.runImageJob(job, signal),
    },
  });
  const provider = new KnowledgeProvider({
    settings,
    embeddings,
    index,
    rooms,
    files,
    extractor,
    vision,
    speech,
    ...(o.guestsMayUse ? { guestsMayUse: o.guestsMayUse } : {}),
    now,
  });
  const w = worker;
  return {
    settings,
    sources,
    rooms,
    queue,
    worker: w,
    provider,
    index,
    extractor,
    embeddings,
    vision,
    speech,
    docling,
    forgetRoom: (botId, roomToken) => rooms.forgetRoom(botId, roomToken),
    forgetBot: async (botId) => {
      await sources.forgetBot(botId);
      for (const t of ['room_documents', 'room_images'] as const) await db.deleteFrom(t).where('bot_id', '=', botId).execute();
      await index.deleteScope(botId);
    },
    maintenance: async () => {
      await rooms.prune();
      await sources.cleanupOrphans();
      await queue.pruneFinished(7 * 86_400_000);
    },
    start: () => w.start(),
    close: async () => {
      await w.stop();
      await extractor.close();
      await providerEgress.close();
      await index.close();
    },
  };
}
