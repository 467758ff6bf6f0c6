import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { issueForStoredPrincipal } from '../../lib/nextcloud/identity.ts';
import { createInvocationContext, type ToolResult } from '../../lib/tools/tool-provider.ts';
import type { KnowledgeModule } from '../../lib/knowledge/knowledge-module.ts';
import { SourceError } from '../../lib/knowledge/source-model.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { FakeKnowledgeEndpoints } from '../fakes/openai/fake-knowledge-endpoints.ts';
import { makeDocx, makePdf } from './helpers/documents.ts';
import { knowledgeOn } from './helpers/knowledge-harness.ts';
import { MemoryFiles } from './helpers/memory-files.ts';

const alice = issueForStoredPrincipal('alice');
const bob = issueForStoredPrincipal('bob');

function searchCtx(botId: string) {
  return createInvocationContext({ user: alice, actorKind: 'user', botId, roomToken: 'room1' });
}

function text(r: ToolResult): string {
  return r.content.map((c) => ('text' in c ? String(c.text ?? '') : '')).join('');
}

async function courseFolder(files: MemoryFiles): Promise<Record<string, string>> {
  const folder = files.folder('alice', 'Course');
  const ids: Record<string, string> = {
    folder,
    pdf: files.file(
      'alice',
      'Course/biology.pdf',
      await makePdf([['Photosynthesis converts light energy into chemical energy in chloroplasts.'], ['Plants release oxygen.']]),
      'application/pdf',
    ),
    docx: files.file('alice', 'Course/history.docx', makeDocx(['The Treaty of Westphalia was signed in 1648.', 'It ended the Thirty Years War.'])),
    md: files.file('alice', 'Course/readme.md', '# Course readme\n\nOffice hours are on Tuesday afternoons in room 204.', 'text/markdown'),
    broken: files.file('alice', 'Course/broken.docx', 'this is not really a docx'),
  };
  files.folder('alice', 'Course/extra');
  ids.nested = files.file('alice', 'Course/extra/glossary.txt', 'Osmosis: the movement of water across a membrane.', 'text/plain');
  return ids;
}

for (const dialect of DIALECTS) {
  describe(`knowledge ingestion on ${dialect}`, () => {
    let fake: FakeKnowledgeEndpoints;
    before(async () => {
      fake = await FakeKnowledgeEndpoints.start({ dimensions: 64 });
    });
    after(async () => {
      await fake.close();
    });

    async function setup(
      extra: Parameters<typeof knowledgeOn>[3] = {},
    ): Promise<{ tdb: TestDatabase; files: MemoryFiles; k: KnowledgeModule; stages: string[]; done(): Promise<void> }> {
      const tdb = await createTestDatabase(dialect);
      const files = new MemoryFiles();
      const stages: string[] = [];
      const k = await knowledgeOn(tdb, fake, files, { onProgress: (_id, stage) => void stages.push(stage), ...extra });
      return {
        tdb,
        files,
        k,
        stages,
        async done() {
          await k.close();
          await tdb.drop();
        },
      };
    }

    test('a folder of mixed types: statuses, progress, per-file errors, searchable text', async () => {
      // One file at a time, so the stages of a file can be read in order.
      const { files, k, stages, done } = await setup({ fileConcurrency: 1 });
      try {
        const ids = await courseFolder(files);
        const added = await k.sources.addNode('bot-1', alice, ids.folder!);
        assert.equal(added.status, 'pending');
        assert.equal(added.kind, 'folder');
        assert.equal(added.label, '/Course');
        assert.equal((await k.sources.addNode('bot-1', alice, ids.folder!)).id, added.id, 'adding it again returns the same source');
        await k.worker.drain();

        const src = (await k.sources.get(added.id))!;
        assert.equal(src.status, 'ready');
        assert.equal(src.stage, 'ready');
        assert.equal(src.progress.percent, 100);
        assert.equal(src.files, 5);
        assert.equal(src.errors, 1);
        assert.equal(src.message, '1 of 5 file(s) could not be indexed.');
        assert.equal(src.embeddingModel, 'fake-embed');
        const perFile = await k.sources.files(added.id);
        const broken = perFile.find((f) => f.path === 'Course/broken.docx')!;
        assert.equal(broken.status, 'error');
        assert.match(broken.error ?? '', /not a valid Office document/);
        assert.ok(perFile.filter((f) => f.status === 'ready').every((f) => f.chunks > 0));
        assert.equal(
          src.chunks,
          perFile.reduce((n, f) => n + f.chunks, 0),
        );

        assert.equal(stages[0], 'collecting');
        assert.equal(stages.at(-1), 'ready');
        const firstFile = stages.slice(stages.indexOf('extracting'), stages.indexOf('storing') + 1);
        assert.deepEqual(firstFile, ['extracting', 'chunking', 'embedding', 'storing']);

        const r = await k.provider.executeTool('rag_search_documents', { query: 'photosynthesis light energy chloroplasts', limit: 3 }, {}, searchCtx('bot-1'));
        assert.equal(r.isError, false);
        const out = text(r);
        assert.match(out, /^Found \d+ relevant document chunk\(s\) for: "photosynthesis light energy chloroplasts"/);
        assert.match(out, /\*\*Source 1:\*\* \/Course\/biology\.pdf \(chunk 0\) \[relevance: 0\.\d\d\]/);
        const nested = text(
          await k.provider.executeTool('rag_search_documents', { query: 'osmosis water membrane', limit: 1, min_score: 0.2 }, {}, searchCtx('bot-1')),
        );
        assert.match(nested, /Course\/extra\/glossary\.txt/);
        const none = text(await k.provider.executeTool('rag_search_documents', { query: 'anything' }, {}, searchCtx('other-bot')));
        assert.equal(none, 'No documents have been indexed for this bot yet.');
      } finally {
        await done();
      }
    });

    test('unchanged files are not read or embedded again; changed ones are, once', async () => {
      const { files, k, done } = await setup();
      try {
        const ids = await courseFolder(files);
        const src = await k.sources.addNode('bot-1', alice, ids.folder!);
        await k.worker.drain();
        const embedded = fake.embeddedInputs().length;
        const reads = files.reads.length;

        await k.queue.enqueue('source', src.id);
        await k.worker.drain();
        assert.equal(fake.embeddedInputs().length, embedded, 'nothing embedded again');
        // Unchanged etags: nothing is downloaded again, except the file that failed, which is retried.
        assert.deepEqual(
          files.reads.slice(reads).map((r) => r.fileId),
          [ids.broken],
        );

        files.touch(ids.md!);
        await k.queue.enqueue('source', src.id);
        await k.worker.drain();
        assert.equal(fake.embeddedInputs().length, embedded, 'same bytes under a new etag: downloaded, not embedded');

        files.write(ids.md!, '# Course readme\n\nOffice hours moved to Thursday mornings.');
        await k.queue.enqueue('source', src.id);
        await k.worker.drain();
        const newInputs = fake.embeddedInputs().slice(embedded);
        assert.equal(newInputs.length, 1);
        assert.match(newInputs[0]!, /Thursday mornings/);
        const hit = text(await k.provider.executeTool('rag_search_documents', { query: 'office hours Thursday', limit: 1 }, {}, searchCtx('bot-1')));
        assert.match(hit, /Thursday/);
        assert.doesNotMatch(hit, /Tuesday/);
        assert.equal(await k.index.countItems({ kind: 'bot', botId: 'bot-1' }, `src:${src.id}`, `node:${ids.md}`), 1, 'the old chunks were replaced');

        files.remove(ids.docx!);
        await k.queue.enqueue('source', src.id);
        await k.worker.drain();
        assert.equal(
          await k.index.countItems({ kind: 'bot', botId: 'bot-1' }, `src:${src.id}`, `node:${ids.docx}`),
          0,
          'a file gone from the folder takes its chunks',
        );
        assert.equal((await k.sources.get(src.id))!.files, 4);

        await k.sources.reindex(src.id);
        await k.worker.drain();
        assert.ok(fake.embeddedInputs().length > embedded + 1, 'a forced reindex embeds everything');
      } finally {
        await done();
      }
    });

    test('orphans: a deleted folder loses its chunks and the source says why', async () => {
      const { files, k, done } = await setup();
      try {
        const ids = await courseFolder(files);
        const src = await k.sources.addNode('bot-1', alice, ids.folder!);
        await k.worker.drain();
        assert.ok((await k.index.countItems({ kind: 'bot', botId: 'bot-1' }, `src:${src.id}`)) > 0);
        files.remove(ids.folder!);
        assert.equal(await k.sources.cleanupOrphans(), 1);
        const after = (await k.sources.get(src.id))!;
        assert.equal(after.status, 'error');
        assert.match(after.message ?? '', /no longer exists or is no longer accessible.*chunk\(s\) removed/);
        assert.equal(await k.index.countItems({ kind: 'bot', botId: 'bot-1' }, `src:${src.id}`), 0);
      } finally {
        await done();
      }
    });

    test('shared bots use only what the owner owns or may reshare (S11)', async () => {
      const personal = new Set(['personal-bot']);
      const { files, k, done } = await setup({ isPersonalBot: async (id) => personal.has(id) });
      try {
        const bobsNoReshare = files.folder('bob', 'Private');
        files.file('bob', 'Private/salaries.txt', 'Salary table: confidential.', 'text/plain');
        files.share(bobsNoReshare, 'alice', false);
        const bobsReshare = files.folder('bob', 'Public');
        files.file('bob', 'Public/handbook.txt', 'The handbook says hello.', 'text/plain');
        files.share(bobsReshare, 'alice', true);

        await assert.rejects(k.sources.addNode('shared-bot', alice, bobsNoReshare), (e: unknown) => e instanceof SourceError && e.status === 403);
        assert.equal((await k.sources.addNode('personal-bot', alice, bobsNoReshare)).status, 'pending', 'a personal bot may use what its owner sees');
        assert.equal((await k.sources.addNode('shared-bot', alice, bobsReshare)).status, 'pending');
        await assert.rejects(
          k.sources.addNode('shared-bot', bob, files.folder('alice', 'Elsewhere')),
          (e: unknown) => e instanceof SourceError && e.status === 404,
          'resolved as the adding owner',
        );

        // A non-reshareable share inside an owned folder is skipped file by file.
        const mine = files.folder('alice', 'Mixed');
        files.file('alice', 'Mixed/own.txt', 'My own notes about volcanoes.', 'text/plain');
        const sharedIn = files.file('bob', 'secret-plan.txt', 'Secret plan text about the merger.', 'text/plain');
        files.share(sharedIn, 'alice', false, 'Mixed/secret-plan.txt');
        const mixed = await k.sources.addNode('shared-bot', alice, mine);
        await k.worker.drain();
        const mixedFiles = await k.sources.files(mixed.id);
        assert.deepEqual(
          mixedFiles.map((f) => [f.path, f.status]),
          [
            ['Mixed/own.txt', 'ready'],
            ['Mixed/secret-plan.txt', 'error'],
          ],
        );
        assert.match(mixedFiles[1]!.error ?? '', /neither owned by the bot owner nor reshareable/);
        assert.ok(!files.reads.some((r) => r.fileId === sharedIn), 'the refused file is never downloaded');
        const merger = text(await k.provider.executeTool('rag_search_documents', { query: 'secret plan merger', min_score: 0 }, {}, searchCtx('shared-bot')));
        assert.doesNotMatch(merger, /text about the merger/);

        // Revoking reshare: the next orphan check removes the chunks.
        files.shares = files.shares.map((s) => (s.fileId === Number(bobsReshare) ? { ...s, reshare: false } : s));
        await k.sources.cleanupOrphans();
        const sharedSources = await k.sources.list('shared-bot');
        const handbook = sharedSources.find((s) => s.label === '/Public')!;
        assert.equal(handbook.status, 'error');
        assert.match(handbook.message ?? '', /nor may they reshare/);
        const r = text(await k.provider.executeTool('rag_search_documents', { query: 'handbook hello', min_score: 0 }, {}, searchCtx('shared-bot')));
        assert.doesNotMatch(r, /handbook says hello/);
      } finally {
        await done();
      }
    });

    test('a URL source is fetched through the egress module', async () => {
      const page = http.createServer((req, res) => {
        if (req.url === '/doc') {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end('<html><body><nav>Menu Home</nav><main><h1>Volcanoes</h1><p>Magma rises through the crust.</p></main></body></html>');
        } else {
          res.writeHead(302, { location: 'http://127.0.0.2:9/private' }).end();
        }
      });
      await new Promise<void>((r) => page.listen(0, '127.0.0.1', () => r()));
      const port = (page.address() as AddressInfo).port;
      const { k, done } = await setup();
      try {
        const ok = await k.sources.addUrl('bot-u', alice, `http://127.0.0.1:${port}/doc#section`);
        assert.equal(ok.url, `http://127.0.0.1:${port}/doc`);
        const bad = await k.sources.addUrl('bot-u', alice, `http://127.0.0.1:${port}/redirect`);
        await assert.rejects(k.sources.addUrl('bot-u', alice, 'file:///etc/passwd'), SourceError);
        await k.worker.drain();
        assert.equal((await k.sources.get(ok.id))!.status, 'ready');
        const r = text(await k.provider.executeTool('rag_search_documents', { query: 'magma crust volcanoes' }, {}, searchCtx('bot-u')));
        assert.match(r, new RegExp(`http://127\\.0\\.0\\.1:${port}/doc`));
        assert.doesNotMatch(r, /Menu Home/);
        const refused = (await k.sources.get(bad.id))!;
        assert.equal(refused.status, 'error');
        assert.match(refused.message ?? '', /refused: 127\.0\.0\.2 is a loopback address/);
      } finally {
        await done();
        await new Promise<void>((r) => page.close(() => r()));
      }
    });
  });
}
