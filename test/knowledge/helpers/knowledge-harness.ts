// A knowledge module on a test database, with in-memory files and the fake embedding/vision/speech endpoints.
import { join } from 'node:path';
import { createLogger } from '../../../lib/log/logger.ts';
import { LlmSettingsService } from '../../../lib/llm/llm-settings.ts';
import { NextcloudClient } from '../../../lib/nextcloud/client.ts';
import { SettingsStore } from '../../../lib/storage/settings-store.ts';
import { Vault } from '../../../lib/vault/vault.ts';
import { createKnowledgeModule, type KnowledgeModule, type KnowledgeModuleOptions } from '../../../lib/knowledge/knowledge-module.ts';
import type { TestDatabase } from '../../helpers/databases.ts';
import type { FakeKnowledgeEndpoints } from '../../fakes/openai/fake-knowledge-endpoints.ts';
import type { MemoryFiles } from './memory-files.ts';

export const EMBED_MODEL = 'fake-embed';

export async function knowledgeOn(
  tdb: Pick<TestDatabase, 'db' | 'intake' | 'dialect' | 'dataDir' | 'close'>,
  fake: FakeKnowledgeEndpoints,
  files: MemoryFiles,
  extra: Partial<KnowledgeModuleOptions> = {},
): Promise<KnowledgeModule> {
  const settings = new SettingsStore(tdb.db);
  const vault = new Vault(tdb.db, new Uint8Array(32).fill(7));
  const llmSettings = new LlmSettingsService(settings, vault);
  const k = createKnowledgeModule({
    database: tdb,
    sqliteVectorPath: join(tdb.dataDir, 'knowledge-vectors.sqlite'),
    settings,
    vault,
    llmSettings,
    nextcloud: new NextcloudClient({ baseUrl: 'http://127.0.0.1:9', appId: 'educai', appVersion: '1.0.0', appSecret: 'test-secret-0123456789' }),
    logger: createLogger({ level: 'silent' }),
    egressAllowList: () => ['127.0.0.1'],
    files,
    shareCheck: async () => true,
    extractor: { limits: { timeoutMs: 30_000 } },
    ...extra,
  });
  await k.settings.update({
    embeddingEndpoint: fake.url,
    embeddingModel: EMBED_MODEL,
    embeddingBatchSize: 4,
    embeddingConcurrency: 1,
    visionEndpoint: fake.url,
    visionModel: 'fake-vision',
    speechEndpoint: fake.url,
    speechModel: 'fake-whisper',
  });
  return k;
}
