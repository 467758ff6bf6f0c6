// A bot's knowledge sources and their ingestion. Files and folders are read as
// the bot's owner (recorded from a verified request), URLs through the egress
// module. Each file goes extract → chunk → embed → store on its own and is
// recorded when stored, so a restarted job skips what is done and a
// re-processed file replaces its chunks instead of adding to them.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { fetchBytes, type EgressFetch } from '../egress/egress-fetch.ts';
import type { Logger } from '../log/logger.ts';
import { NextcloudAuthError, NextcloudForbiddenError } from '../nextcloud/errors.ts';
import { issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import type { Database } from '../storage/schema.ts';
import { chunkText } from './chunker.ts';
import { type EmbeddingsClient } from './embeddings.ts';
import { ExtractionError } from './extract/types.ts';
import type { Extractor } from './extract/extractor.ts';
import type { Job, KnowledgeJobQueue } from './ingestion-jobs.ts';
import { RetryableJobError } from './ingestion-jobs.ts';
import type { KnowledgeSettingsService } from './knowledge-settings.ts';
import type { SourceKind, SourceStage } from '../storage/tables/knowledge-tables.ts';
import { ownerMayShare, type FileAccess, type NodeInfo } from './nextcloud-files.ts';
import type { VectorIndex } from './vector-index.ts';
import {
  SourceError,
  botScope,
  isTransient,
  normalizeSourceUrl,
  sourceGroup,
  view,
  type SourceFileView,
  type SourceRow,
  type SourceView,
} from './source-model.ts';

export interface SourcesOptions {
  db: Kysely<Database>;
  files: FileAccess;
  index: VectorIndex;
  embeddings: EmbeddingsClient;
  extractor: Extractor;
  settings: KnowledgeSettingsService;
  /** Egress fetch for URL sources (S18), made per job with the current limits. */
  egressFor: (limits: { maxBytes: number; timeoutMs: number }) => EgressFetch;
  queue: KnowledgeJobQueue;
  logger: Logger;
  /** Personal bots may use whatever the owner sees; every other bot only what the owner owns or may reshare (S11). Default: none is personal. */
  isPersonalBot?: (botId: string) => Promise<boolean>;
  /** Woken after something was queued. */
  notify?: () => void;
  /** Every status change of a source (for live progress in a UI). */
  onProgress?: (sourceId: number, stage: SourceStage, current: number, total: number) => void;
  now?: () => number;
  maxFilesPerSource?: number;
  maxFolderDepth?: number;
  /** Files of one source processed at the same time. */
  fileConcurrency?: number;
}

interface Candidate {
  fileKey: string;
  path: string;
  node: NodeInfo | null;
  /** Set when the file is skipped without reading (S11, size). */
  refusal: string | null;
}

const USER_AGENT = 'EducAI-Bot/1.0 (Nextcloud RAG Indexer)';

function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export class KnowledgeSources {
  readonly #o: Required<Omit<SourcesOptions, 'notify' | 'isPersonalBot' | 'onProgress'>> &
    Pick<SourcesOptions, 'notify' | 'onProgress'> & { isPersonalBot: (botId: string) => Promise<boolean> };

  constructor(options: SourcesOptions) {
    this.#o = { now: Date.now, maxFilesPerSource: 5_000, maxFolderDepth: 25, fileConcurrency: 3, isPersonalBot: async () => false, ...options };
  }

  // ---- managing sources ----

  /** A Nextcloud file or folder, resolved as `owner` (an identity from a verified request). A second add returns the existing source. */
  async addNode(botId: string, owner: ActingUser, fileId: string): Promise<SourceView> {
    if (!/^\d{1,20}$/.test(fileId)) throw new SourceError(400, 'the file id must be a number');
    return this.#addFound(botId, owner, await this.#o.files.findById(owner, fileId));
  }

  /** A file or folder picked by its path in the owner's home (resolved as `owner`, then kept by file id). */
  async addPath(botId: string, owner: ActingUser, path: string): Promise<SourceView> {
    const clean = path.replace(/^\/+|\/+$/g, '');
    if (clean === '' || clean.split('/').some((s) => s === '' || s === '.' || s === '..') || /[\u0000-\u001f\u007f\\]/.test(clean)) {
      throw new SourceError(400, 'the path must name a file or folder inside your files, without "." or ".." segments');
    }
    if (!this.#o.files.findByPath) throw new SourceError(400, 'files cannot be picked by path here');
    return this.#addFound(botId, owner, await this.#o.files.findByPath(owner, clean));
  }

  async #addFound(botId: string, owner: ActingUser, node: NodeInfo | null): Promise<SourceView> {
    if (!node) throw new SourceError(404, 'the file or folder was not found in your files');
    if (!(await this.#o.isPersonalBot(botId)) && !ownerMayShare(node, owner.uid)) {
      throw new SourceError(403, 'this bot is shared, so it can only use files you own or may reshare');
    }
    return this.#insert(botId, owner.uid, node.folder ? 'folder' : 'file', `node:${node.fileId}`, { file_id: node.fileId, url: null, label: `/${node.path}` });
  }

  async addUrl(botId: string, owner: ActingUser, rawUrl: string): Promise<SourceView> {
    const url = normalizeSourceUrl(rawUrl);
    return this.#insert(botId, owner.uid, 'url', `url:${sha256(url)}`, { file_id: null, url, label: url });
  }

  async #insert(
    botId: string,
    ownerUid: string,
    kind: SourceKind,
    key: string,
    fields: { file_id: string | null; url: string | null; label: string },
  ): Promise<SourceView> {
    const existing = await this.#o.db.selectFrom('knowledge_sources').selectAll().where('bot_id', '=', botId).where('source_key', '=', key).executeTakeFirst();
    if (existing) return view(existing as SourceRow);
    const now = this.#o.now();
    const row = await this.#o.db
      .insertInto('knowledge_sources')
      .values({
        bot_id: botId,
        owner_uid: ownerUid,
        kind,
        source_key: key,
        ...fields,
        status: 'pending',
        stage: 'queued',
        progress_current: 0,
        progress_total: 0,
        message: null,
        file_count: 0,
        error_count: 0,
        chunk_count: 0,
        checksum: null,
        embedding_model: null,
        last_indexed_at: null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['bot_id', 'source_key']).doNothing())
      .returningAll()
      .executeTakeFirst();
    const stored =
      row ?? (await this.#o.db.selectFrom('knowledge_sources').selectAll().where('bot_id', '=', botId).where('source_key', '=', key).executeTakeFirstOrThrow());
    await this.#o.queue.enqueue('source', stored.id);
    this.#o.notify?.();
    return view(stored as SourceRow);
  }

  async list(botId: string): Promise<SourceView[]> {
    const rows = await this.#o.db.selectFrom('knowledge_sources').selectAll().where('bot_id', '=', botId).orderBy('id').execute();
    return rows.map((r) => view(r as SourceRow));
  }

  async get(sourceId: number): Promise<SourceView | null> {
    const r = await this.#o.db.selectFrom('knowledge_sources').selectAll().where('id', '=', sourceId).executeTakeFirst();
    return r ? view(r as SourceRow) : null;
  }

  async files(sourceId: number): Promise<SourceFileView[]> {
    const rows = await this.#o.db.selectFrom('knowledge_source_files').selectAll().where('source_id', '=', sourceId).orderBy('path').execute();
    return rows.map((r) => ({ fileKey: r.file_key, path: r.path, status: r.status, error: r.error, chunks: r.chunk_count }));
  }

  async reindex(sourceId: number): Promise<void> {
    const now = this.#o.now();
    const r = await this.#o.db
      .updateTable('knowledge_sources')
      .set({ status: 'pending', stage: 'queued', updated_at: now })
      .where('id', '=', sourceId)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) throw new SourceError(404, 'no such source');
    await this.#o.queue.enqueue('source', sourceId, { force: true });
    this.#o.notify?.();
  }

  /** After the embedding model changed: every source of every bot is embedded again. Room documents and images are not (they expire). */
  async reindexAll(): Promise<number> {
    const rows = await this.#o.db.selectFrom('knowledge_sources').select('id').execute();
    await this.#o.db.updateTable('knowledge_sources').set({ status: 'pending', stage: 'queued', updated_at: this.#o.now() }).execute();
    for (const r of rows) await this.#o.queue.enqueue('source', r.id, { force: true });
    this.#o.notify?.();
    return rows.length;
  }

  async remove(sourceId: number): Promise<void> {
    const src = await this.#o.db.selectFrom('knowledge_sources').select(['id', 'bot_id']).where('id', '=', sourceId).executeTakeFirst();
    if (!src) return;
    await this.#o.queue.cancel('source', [sourceId]);
    await this.#o.index.deleteItems(botScope(src.bot_id), sourceGroup(sourceId));
    await this.#o.db.deleteFrom('knowledge_source_files').where('source_id', '=', sourceId).execute();
    await this.#o.db.deleteFrom('knowledge_sources').where('id', '=', sourceId).execute();
  }

  /** Everything a deleted bot had. */
  async forgetBot(botId: string): Promise<void> {
    const ids = (await this.#o.db.selectFrom('knowledge_sources').select('id').where('bot_id', '=', botId).execute()).map((r) => r.id);
    await this.#o.queue.cancel('source', ids);
    if (ids.length > 0) await this.#o.db.deleteFrom('knowledge_source_files').where('source_id', 'in', ids).execute();
    await this.#o.db.deleteFrom('knowledge_sources').where('bot_id', '=', botId).execute();
    await this.#o.index.deleteScope(botId);
  }

  /**
   * File and folder sources whose node is gone or no longer visible to the
   * owner (or, for shared bots, no longer theirs to share): chunks go, and the
   * source says why.
   */
  async cleanupOrphans(): Promise<number> {
    const rows = (await this.#o.db
      .selectFrom('knowledge_sources')
      .selectAll()
      .where('kind', 'in', ['file', 'folder'])
      .where('status', 'in', ['ready', 'error'])
      .execute()) as SourceRow[];
    let cleaned = 0;
    for (const r of rows) {
      const owner = issueForStoredPrincipal(r.owner_uid);
      let node: NodeInfo | null;
      try {
        node = await this.#o.files.findById(owner, r.file_id ?? '');
      } catch (err) {
        if (err instanceof NextcloudAuthError || err instanceof NextcloudForbiddenError) node = null;
        else continue;
      }
      const allowed = node !== null && ((await this.#o.isPersonalBot(r.bot_id)) || ownerMayShare(node, r.owner_uid));
      if (allowed) continue;
      if (r.chunk_count === 0 && r.status === 'error') continue;
      await this.#orphan(
        r,
        node === null
          ? 'The file or folder no longer exists or is no longer accessible to its owner.'
          : 'The file or folder is no longer owned by the bot owner, nor may they reshare it.',
      );
      cleaned++;
    }
    return cleaned;
  }

  async #orphan(r: SourceRow, why: string): Promise<void> {
    const removed = await this.#o.index.deleteItems(botScope(r.bot_id), sourceGroup(r.id));
    await this.#o.db.deleteFrom('knowledge_source_files').where('source_id', '=', r.id).execute();
    await this.#o.db
      .updateTable('knowledge_sources')
      .set({
        status: 'error',
        stage: null,
        message: `${why} ${removed} chunk(s) removed. You can remove this source.`,
        chunk_count: 0,
        file_count: 0,
        error_count: 0,
        updated_at: this.#o.now(),
      })
      .where('id', '=', r.id)
      .execute();
  }

  // ---- the job ----

  readonly #lastWrite = new Map<number, number>();

  /** Reports every stage; writes it to the database at most every 250 ms per source (a UI polls every few seconds). */
  async #progress(id: number, stage: SourceStage, current: number, total: number): Promise<void> {
    this.#o.onProgress?.(id, stage, current, total);
    const now = this.#o.now();
    const last = this.#lastWrite.get(id);
    if (stage !== 'collecting' && last !== undefined && now - last < 250 && now >= last) return;
    this.#lastWrite.set(id, now);
    await this.#o.db
      .updateTable('knowledge_sources')
      .set({ status: 'indexing', stage, progress_current: current, progress_total: total, updated_at: this.#o.now() })
      .where('id', '=', id)
      .execute();
  }

  /** Handler of 'source' jobs. */
  async runJob(job: Job, signal: AbortSignal): Promise<void> {
    const r = (await this.#o.db.selectFrom('knowledge_sources').selectAll().where('id', '=', job.refId).executeTakeFirst()) as SourceRow | undefined;
    if (!r) return;
    const model = await this.#o.embeddings.activeModel();
    if (!model) {
      await this.#o.db
        .updateTable('knowledge_sources')
        .set({ status: 'error', stage: null, message: 'No embedding model is configured; ask an admin to set one.', updated_at: this.#o.now() })
        .where('id', '=', r.id)
        .execute();
      return;
    }
    const owner = issueForStoredPrincipal(r.owner_uid);
    const personal = await this.#o.isPersonalBot(r.bot_id);
    await this.#progress(r.id, 'collecting', 0, 0);

    let candidates: Candidate[];
    try {
      candidates = await this.#collect(r, owner, personal);
    } catch (err) {
      if (err instanceof SourceError) {
        await this.#orphan(r, err.message);
        return;
      }
      if (isTransient(err)) throw new RetryableJobError(err instanceof Error ? err.message : String(err));
      throw err;
    }

    // Files that left the folder take their chunks with them.
    const known = await this.#o.db.selectFrom('knowledge_source_files').selectAll().where('source_id', '=', r.id).execute();
    const present = new Set(candidates.map((c) => c.fileKey));
    for (const k of known) {
      if (present.has(k.file_key)) continue;
      await this.#o.index.deleteItems(botScope(r.bot_id), sourceGroup(r.id), k.file_key);
      await this.#o.db.deleteFrom('knowledge_source_files').where('source_id', '=', r.id).where('file_key', '=', k.file_key).execute();
    }
    const previous = new Map(known.map((k) => [k.file_key, k]));
    const settings = await this.#o.settings.get();
    const total = candidates.length;
    let next = 0;
    let finished = 0;
    let failure: unknown = null;
    // A few files in flight: one extracts while another waits for its embeddings.
    const lane = async () => {
      while (failure === null && next < candidates.length) {
        const c = candidates[next++]!;
        try {
          await this.#processFile(r, c, previous.get(c.fileKey), model, job.force, settings, owner, signal, () => finished, total);
        } catch (err) {
          failure ??= err;
        }
        finished++;
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.#o.fileConcurrency, candidates.length)) }, lane));
    if (failure !== null) throw failure;
    await this.#finish(r, model);
  }

  async #processFile(
    r: SourceRow,
    c: Candidate,
    prev: { status: string; embedding_model: string | null; etag: string | null; content_hash: string | null } | undefined,
    model: string,
    force: boolean,
    settings: Awaited<ReturnType<KnowledgeSettingsService['get']>>,
    owner: ActingUser,
    signal: AbortSignal,
    done: () => number,
    total: number,
  ): Promise<void> {
    if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('stopped');
    if (c.refusal !== null) {
      await this.#fileError(r, c, c.refusal, prev !== undefined);
      return;
    }
    // Unchanged since the last run with this model: nothing to download.
    if (!force && prev && prev.status === 'ready' && prev.embedding_model === model && c.node && prev.etag === c.node.etag) return;
    await this.#progress(r.id, 'extracting', done(), total);
    try {
      const bytes = await this.#download(r, owner, c, settings.maxFileBytes, settings.urlMaxBytes, settings.urlTimeoutSeconds);
      const hash = sha256(bytes.bytes);
      if (!force && prev && prev.status === 'ready' && prev.embedding_model === model && prev.content_hash === hash) {
        await this.#o.db
          .updateTable('knowledge_source_files')
          .set({ etag: c.node?.etag ?? null, updated_at: this.#o.now() })
          .where('source_id', '=', r.id)
          .where('file_key', '=', c.fileKey)
          .execute();
        return;
      }
      const extracted = await this.#o.extractor.extract({ bytes: bytes.bytes, name: bytes.name, mimeType: bytes.mimeType });
      await this.#progress(r.id, 'chunking', done(), total);
      const chunks = chunkText(extracted.text, { chunkSizeChars: settings.chunkSizeChars, overlapChars: settings.chunkOverlapChars });
      if (chunks.length === 0) throw new ExtractionError('broken', 'no text could be found in the file');
      await this.#progress(r.id, 'embedding', done(), total);
      const embedded = await this.#o.embeddings.embed(
        chunks.map((ch) => ch.text),
        { signal },
      );
      await this.#progress(r.id, 'storing', done(), total);
      await this.#o.index.replaceItems(
        botScope(r.bot_id),
        embedded.model,
        sourceGroup(r.id),
        c.fileKey,
        chunks.map((ch, j) => ({
          seq: ch.index,
          text: ch.text,
          meta: { path: c.path, fileKey: c.fileKey, format: extracted.format, via: extracted.via },
          vector: embedded.vectors[j]!,
        })),
      );
      await this.#recordFile(r.id, c, { status: 'ready', error: extracted.warnings[0] ?? null, hash, model: embedded.model, chunks: chunks.length });
    } catch (err) {
      if (signal.aborted) throw err;
      if (isTransient(err)) throw new RetryableJobError(err instanceof Error ? err.message : String(err));
      await this.#fileError(r, c, err instanceof Error ? err.message : 'the file could not be read', true);
    }
  }

  async #collect(r: SourceRow, owner: ActingUser, personal: boolean): Promise<Candidate[]> {
    if (r.kind === 'url') return [{ fileKey: 'url', path: r.url ?? '', node: null, refusal: null }];
    const root = await this.#o.files.findById(owner, r.file_id ?? '');
    if (!root) throw new SourceError(404, 'The file or folder no longer exists or is no longer accessible to its owner.');
    const may = (n: NodeInfo) => personal || ownerMayShare(n, r.owner_uid);
    if (!may(root)) throw new SourceError(403, 'The file or folder is no longer owned by the bot owner, nor may they reshare it.');
    if (!root.folder) return [{ fileKey: `node:${root.fileId}`, path: root.path, node: root, refusal: null }];
    const out: Candidate[] = [];
    const queue: Array<{ node: NodeInfo; depth: number }> = [{ node: root, depth: 0 }];
    while (queue.length > 0) {
      const { node, depth } = queue.shift()!;
      const children = await this.#o.files.list(owner, node);
      await this.#o.db.updateTable('knowledge_sources').set({ progress_current: out.length, updated_at: this.#o.now() }).where('id', '=', r.id).execute();
      for (const child of children.sort((a, b) => a.path.localeCompare(b.path))) {
        if (child.folder) {
          if (depth + 1 <= this.#o.maxFolderDepth && may(child)) queue.push({ node: child, depth: depth + 1 });
          continue;
        }
        if (out.length >= this.#o.maxFilesPerSource) break;
        out.push({
          fileKey: `node:${child.fileId}`,
          path: child.path,
          node: child,
          refusal: may(child) ? null : 'skipped: this bot is shared, and the file is neither owned by the bot owner nor reshareable by them',
        });
      }
    }
    return out;
  }

  async #download(
    r: SourceRow,
    owner: ActingUser,
    c: Candidate,
    maxFileBytes: number,
    urlMaxBytes: number,
    urlTimeoutSeconds: number,
  ): Promise<{ bytes: Uint8Array; name: string; mimeType: string }> {
    if (r.kind === 'url') {
      const egress = this.#o.egressFor({ maxBytes: urlMaxBytes, timeoutMs: urlTimeoutSeconds * 1000 });
      let got;
      try {
        got = await fetchBytes(egress, r.url ?? '', {
          headers: {
            'user-agent': USER_AGENT,
            accept: 'text/html,application/xhtml+xml,application/pdf,text/plain,application/json,application/xml;q=0.9,*/*;q=0.5',
          },
        });
      } finally {
        await egress.close().catch(() => undefined);
      }
      const name = new URL(got.finalUrl).pathname.split('/').pop() || 'index.html';
      const mime = got.contentType.split(';')[0]?.trim() ?? '';
      // A page without an extension is named after its type, so the reader is chosen by content type.
      return {
        bytes: got.bytes,
        name: /\.[a-z0-9]{2,5}$/i.test(name)
          ? name
          : `${name}.${mime.includes('html') ? 'html' : mime.includes('json') ? 'json' : mime.includes('xml') ? 'xml' : mime.includes('pdf') ? 'pdf' : 'txt'}`,
        mimeType: mime,
      };
    }
    const node = c.node!;
    return { bytes: await this.#o.files.read(owner, node, maxFileBytes), name: node.name, mimeType: node.mimeType };
  }

  async #recordFile(
    sourceId: number,
    c: Candidate,
    v: { status: 'ready' | 'error'; error: string | null; hash: string | null; model: string | null; chunks: number },
  ): Promise<void> {
    const row = {
      source_id: sourceId,
      file_key: c.fileKey,
      path: c.path,
      etag: c.node?.etag ?? null,
      content_hash: v.hash,
      embedding_model: v.model,
      status: v.status,
      error: v.error,
      chunk_count: v.chunks,
      updated_at: this.#o.now(),
    };
    await this.#o.db
      .insertInto('knowledge_source_files')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['source_id', 'file_key'])
          .doUpdateSet({
            path: row.path,
            etag: row.etag,
            content_hash: row.content_hash,
            embedding_model: row.embedding_model,
            status: row.status,
            error: row.error,
            chunk_count: row.chunk_count,
            updated_at: row.updated_at,
          }),
      )
      .execute();
  }

  async #fileError(r: SourceRow, c: Candidate, message: string, dropOld: boolean): Promise<void> {
    if (dropOld) await this.#o.index.deleteItems(botScope(r.bot_id), sourceGroup(r.id), c.fileKey);
    await this.#recordFile(r.id, c, { status: 'error', error: message.slice(0, 500), hash: null, model: null, chunks: 0 });
  }

  async #finish(r: SourceRow, model: string): Promise<void> {
    const files = await this.#o.db.selectFrom('knowledge_source_files').selectAll().where('source_id', '=', r.id).orderBy('file_key').execute();
    const ready = files.filter((f) => f.status === 'ready');
    const errors = files.filter((f) => f.status === 'error');
    const chunks = ready.reduce((n, f) => n + f.chunk_count, 0);
    const checksum = sha256(ready.map((f) => `${f.file_key}:${f.content_hash}`).join('\n'));
    const allFailed = ready.length === 0;
    const message =
      files.length === 0
        ? 'The folder contains no files.'
        : allFailed
          ? `Nothing could be indexed: ${errors[0]?.error ?? 'unknown error'}`
          : errors.length > 0
            ? `${errors.length} of ${files.length} file(s) could not be indexed.`
            : null;
    await this.#o.db
      .updateTable('knowledge_sources')
      .set({
        status: allFailed && files.length > 0 ? 'error' : 'ready',
        stage: allFailed && files.length > 0 ? null : 'ready',
        progress_current: files.length,
        progress_total: files.length,
        message,
        file_count: files.length,
        error_count: errors.length,
        chunk_count: chunks,
        checksum,
        embedding_model: model,
        last_indexed_at: this.#o.now(),
        updated_at: this.#o.now(),
      })
      .where('id', '=', r.id)
      .execute();
    this.#lastWrite.delete(r.id);
    this.#o.onProgress?.(r.id, 'ready', files.length, files.length);
  }
}
