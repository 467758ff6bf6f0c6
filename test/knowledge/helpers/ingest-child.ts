// A separate process running the knowledge worker on a test database, so a test can SIGKILL it mid-job.
// Env KNOWLEDGE_CHILD: {"dialect","dataDir","databaseUrl","pgSchema","manifest","fakeUrl"}.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../../lib/storage/database.ts';
import type { FakeKnowledgeEndpoints } from '../../fakes/openai/fake-knowledge-endpoints.ts';
import { knowledgeOn } from './knowledge-harness.ts';
import { MemoryFiles } from './memory-files.ts';

const cfg = JSON.parse(process.env.KNOWLEDGE_CHILD ?? '{}') as {
  dialect: 'sqlite' | 'postgres';
  dataDir: string;
  databaseUrl: string | null;
  pgSchema?: string;
  manifest: string;
  fakeUrl: string;
};
const handle =
  cfg.dialect === 'sqlite'
    ? openDatabase({ sqlitePath: join(cfg.dataDir, 'educai.sqlite') })
    : openDatabase({ databaseUrl: cfg.databaseUrl, pgSchema: cfg.pgSchema, pgPoolSize: 2 });
const files = MemoryFiles.fromJSON(readFileSync(cfg.manifest, 'utf8'));
const k = await knowledgeOn({ ...handle, dataDir: cfg.dataDir }, { url: cfg.fakeUrl } as FakeKnowledgeEndpoints, files, { worker: { pollMs: 100 } });
await k.start();
process.stdout.write('started\n');
setInterval(() => undefined, 60_000);
