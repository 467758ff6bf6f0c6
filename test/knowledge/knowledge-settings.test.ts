import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEgressFetch } from '../../lib/egress/egress-fetch.ts';
import { LlmSettingsService } from '../../lib/llm/llm-settings.ts';
import { DoclingClient } from '../../lib/knowledge/extract/docling.ts';
import { Extractor } from '../../lib/knowledge/extract/extractor.ts';
import { KnowledgeSettingsService } from '../../lib/knowledge/knowledge-settings.ts';
import { HttpError } from '../../lib/errors/http-error.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { FakeKnowledgeEndpoints } from '../fakes/openai/fake-knowledge-endpoints.ts';
import { makePdf } from './helpers/documents.ts';

test('knowledge settings: validation, write-only keys, fallback to the primary endpoint', async () => {
  const tdb = await createTestDatabase('sqlite');
  try {
    const store = new SettingsStore(tdb.db);
    const vault = new Vault(tdb.db, new Uint8Array(32).fill(3));
    const llm = new LlmSettingsService(store, vault);
    const s = new KnowledgeSettingsService({ settings: store, vault, llmSettings: llm });
    await assert.rejects(
      s.update({ chunkSizeChars: 500, chunkOverlapChars: 500 }),
      (e: unknown) => e instanceof HttpError && /smaller than the chunk size/.test(JSON.stringify(e)),
    );
    await assert.rejects(
      s.update({ doclingEnabled: true }),
      (e: unknown) => e instanceof HttpError && /required while Docling is enabled/.test(JSON.stringify(e)),
    );
    await assert.rejects(s.update({ embeddingEndpoint: 'ftp://x' }), HttpError);
    await assert.rejects(s.update({ nope: 1 }), HttpError);
    assert.equal((await s.get()).chunkSizeChars, 750, 'nothing written after a refused patch');

    assert.equal(await s.embeddingEndpoint(), null, 'no model: no embeddings (no silent fallback to the chat model)');
    await llm.update({ primaryEndpoint: 'https://llm.example/v1', primaryKey: 'sk-primary' });
    const r = await s.update({ embeddingModel: 'nomic-embed', embeddingKey: 'sk-embed' });
    assert.equal(r.embeddingChanged, true);
    assert.deepEqual(await s.embeddingEndpoint(), { endpoint: 'https://llm.example/v1', key: 'sk-embed', model: 'nomic-embed', timeoutMs: 120_000 });
    const pub = await s.toPublic(await s.get());
    assert.deepEqual(pub.embeddingKey, { set: true, masked: '********' });
    assert.ok(!JSON.stringify(pub).includes('sk-embed'));
    assert.equal((await s.update({ chunkSizeChars: 1000 })).embeddingChanged, false);
    await s.update({ visionModel: 'llava' });
    assert.equal((await s.visionEndpoint())?.key, 'sk-primary', 'an unset key falls back to the primary key');
  } finally {
    await tdb.drop();
  }
});

test('Docling gets bytes through the egress module; local reading is the fallback', async () => {
  const fake = await FakeKnowledgeEndpoints.start();
  const egress = createEgressFetch({ allowList: () => ['127.0.0.1'], timeoutMs: null });
  let config: { endpoint: string; key: string | null; timeoutSeconds: number } | null = { endpoint: fake.doclingUrl, key: 'dk', timeoutSeconds: 30 };
  const docling = new DoclingClient({ fetch: egress, config: async () => config });
  const extractor = new Extractor({ docling });
  try {
    const pdf = await makePdf([['Scanned text for Docling']]);
    const viaDocling = await extractor.extract({ bytes: pdf, name: 'scan.pdf', mimeType: 'application/pdf' });
    assert.equal(viaDocling.via, 'docling');
    assert.match(viaDocling.text, /^# Converted by Docling/);
    assert.deepEqual(fake.doclingCalls.at(-1), { name: 'scan.pdf', size: pdf.length, apiKey: 'dk' });
    const plain = await extractor.extract({ bytes: new TextEncoder().encode('plain text'), name: 'a.txt', mimeType: 'text/plain' });
    assert.equal(plain.via, 'local', 'plain text never needs Docling');
    const test1 = await docling.test();
    assert.deepEqual([test1.ok, test1.status], [true, 200]);
    assert.ok(!JSON.stringify(test1).includes('Converted'), 'the test reports a status, not the body');

    config = { endpoint: 'http://10.0.0.9:5001', key: null, timeoutSeconds: 5 };
    const fallback = await extractor.extract({ bytes: pdf, name: 'scan.pdf', mimeType: 'application/pdf' });
    assert.equal(fallback.via, 'local');
    assert.match(fallback.warnings.join(' '), /Docling could not be reached: refused.*private.*read locally instead/);
    assert.equal((await docling.test()).ok, false);
  } finally {
    await extractor.close();
    await egress.close();
    await fake.close();
  }
});
