// Documents and images posted in a room, indexed in the background per
// (bot, room). Files are read as the message's author, by file id, and only
// after Talk confirms the file is still shared into that room (S15). Image
// memory keeps a vision description per image and reuses it for the same
// bytes. Everything expires after the retention period and goes on RESET.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import { NextcloudError, NextcloudNotFoundError } from '../nextcloud/errors.ts';
import { issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import type { Database } from '../storage/schema.ts';
import { chunkText } from './chunker.ts';
import { EmbeddingError, type EmbeddingsClient } from './embeddings.ts';
import { ExtractionError } from './extract/types.ts';
import type { Extractor } from './extract/extractor.ts';
import { RetryableJobError, type Job, type KnowledgeJobQueue } from './ingestion-jobs.ts';
import type { KnowledgeSettingsService } from './knowledge-settings.ts';
import type { RoomDocumentsTable } from '../storage/tables/knowledge-tables.ts';
import { IMAGE_MEMORY_PROMPT, MediaError, type VisionClient } from './media-clients.ts';
import type { FileAccess } from './nextcloud-files.ts';
import type { PartitionScope, SearchResult, VectorIndex } from './vector-index.ts';

/** Confirms, as the author, that the message still carries this file in this room. */
export type RoomShareCheck = (author: ActingUser, roomToken: string, messageId: string, fileId: string) => Promise<boolean>;

export interface RoomAttachment {
  fileId: string;
  name: string;
  mimeType: string;
  size: number;
  kind: 'image' | 'audio' | 'document' | 'unsupported' | string;
}

export interface RoomKnowledgeOptions {
  db: Kysely<Database>;
  files: FileAccess;
  index: VectorIndex;
  embeddings: EmbeddingsClient;
  extractor: Extractor;
  vision: VisionClient;
  settings: KnowledgeSettingsService;
  queue: KnowledgeJobQueue;
  shareCheck: RoomShareCheck;
  logger: Logger;
  notify?: () => void;
  now?: () => number;
}

export type RoomItemKind = 'doc' | 'image';

export function roomScope(kind: RoomItemKind, botId: string, roomToken: string): PartitionScope {
  return { kind: kind === 'doc' ? 'room-doc' : 'room-image', botId, roomToken };
}

export function roomGroup(kind: RoomItemKind, id: number): string {
  return `${kind === 'doc' ? 'rdoc' : 'rimg'}:${id}`;
}

type Row = RoomDocumentsTable & { id: number; vision_model?: string | null; description?: string | null };

const DAY = 86_400_000;

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function transient(err: unknown): boolean {
  if (err instanceof EmbeddingError) return err.retryable;
  if (err instanceof MediaError) return err.status === 0 || err.status === 429 || err.status >= 500;
  if (err instanceof NextcloudError) return err.status === 0 || err.status >= 500 || err.status === 429;
  return false;
}

export class RoomKnowledge {
  readonly #o: RoomKnowledgeOptions & { now: () => number };

  constructor(options: RoomKnowledgeOptions) {
    this.#o = { ...options, now: options.now ?? Date.now };
  }

  #table(kind: RoomItemKind): 'room_documents' | 'room_images' {
    return kind === 'doc' ? 'room_documents' : 'room_images';
  }

  /**
   * Called after Talk confirmed the message and its author. Queues documents
   * when the bot has room_search_documents and images when it has
   * room_search_images; returns the row ids per kind. The same file again
   * refreshes its retention and indexes it again only if it changed.
   */
  async onMessage(input: {
    botId: string;
    roomToken: string;
    messageId: string;
    author: ActingUser;
    attachments: readonly RoomAttachment[];
    documents: boolean;
    images: boolean;
  }): Promise<{ docs: number[]; images: number[] }> {
    const out = { docs: [] as number[], images: [] as number[] };
    const settings = await this.#o.settings.get();
    for (const a of input.attachments) {
      const kind: RoomItemKind | null = a.kind === 'document' && input.documents ? 'doc' : a.kind === 'image' && input.images ? 'image' : null;
      if (!kind || !/^\d{1,20}$/.test(a.fileId)) continue;
      const table = this.#table(kind);
      const now = this.#o.now();
      const existing = await this.#o.db
        .selectFrom(table)
        .select(['id'])
        .where('bot_id', '=', input.botId)
        .where('room_token', '=', input.roomToken)
        .where('file_id', '=', a.fileId)
        .executeTakeFirst();
      let id: number;
      if (existing) {
        id = existing.id;
        await this.#o.db
          .updateTable(table)
          .set({
            message_id: input.messageId,
            actor_uid: input.author.uid,
            name: a.name.slice(0, 255),
            mime_type: a.mimeType.slice(0, 255),
            size: a.size,
            status: 'pending',
            error: null,
            updated_at: now,
          })
          .where('id', '=', id)
          .execute();
      } else {
        const count = await this.#roomItemCount(input.botId, input.roomToken);
        const overQuota = count >= settings.roomQuotaItems;
        const row = await this.#o.db
          .insertInto(table)
          .values({
            bot_id: input.botId,
            room_token: input.roomToken,
            message_id: input.messageId,
            actor_uid: input.author.uid,
            file_id: a.fileId,
            name: a.name.slice(0, 255),
            mime_type: a.mimeType.slice(0, 255),
            size: a.size,
            checksum: null,
            status: overQuota ? 'error' : 'pending',
            error: overQuota ? `this room already has ${settings.roomQuotaItems} indexed files for this bot` : null,
            chunk_count: 0,
            embedding_model: null,
            created_at: now,
            updated_at: now,
          } as never)
          .returning('id')
          .executeTakeFirstOrThrow();
        id = row.id;
        if (overQuota) continue;
      }
      if (a.size > settings.maxFileBytes) {
        await this.#o.db.updateTable(table).set({ status: 'error', error: 'the file is too large to index' }).where('id', '=', id).execute();
        continue;
      }
      await this.#o.queue.enqueue(kind === 'doc' ? 'room-doc' : 'room-image', id);
      (kind === 'doc' ? out.docs : out.images).push(id);
    }
    if (out.docs.length + out.images.length > 0) this.#o.notify?.();
    return out;
  }

  async #roomItemCount(botId: string, roomToken: string): Promise<number> {
    let n = 0;
    for (const t of ['room_documents', 'room_images'] as const) {
      const r = await this.#o.db
        .selectFrom(t)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('bot_id', '=', botId)
        .where('room_token', '=', roomToken)
        .executeTakeFirstOrThrow();
      n += Number(r.n);
    }
    return n;
  }

  /** Status of this room's items for the given files (e.g. the current message's attachments). */
  async statusOf(
    kind: RoomItemKind,
    botId: string,
    roomToken: string,
    fileIds: readonly string[],
  ): Promise<Array<{ id: number; fileId: string; name: string; status: string; error: string | null }>> {
    if (fileIds.length === 0) return [];
    const rows = await this.#o.db
      .selectFrom(this.#table(kind))
      .select(['id', 'file_id', 'name', 'status', 'error'])
      .where('bot_id', '=', botId)
      .where('room_token', '=', roomToken)
      .where('file_id', 'in', [...fileIds])
      .execute();
    return rows.map((r) => ({ id: r.id, fileId: r.file_id, name: r.name, status: r.status, error: r.error }));
  }

  async search(
    kind: RoomItemKind,
    botId: string,
    roomToken: string,
    model: string,
    query: Float32Array,
    options: { limit: number; minScore: number; ids?: number[] },
  ): Promise<SearchResult> {
    return this.#o.index.search(roomScope(kind, botId, roomToken), model, query, {
      limit: options.limit,
      minScore: options.minScore,
      ...(options.ids ? { groups: options.ids.map((id) => roomGroup(kind, id)) } : {}),
    });
  }

  async modelsIn(kind: RoomItemKind, botId: string, roomToken: string): Promise<string[]> {
    return (await this.#o.index.counts(roomScope(kind, botId, roomToken))).map((c) => c.model);
  }

  /** RESET: the room's documents and image descriptions for this bot, with their vectors and pending jobs. */
  async forgetRoom(botId: string, roomToken: string): Promise<void> {
    for (const kind of ['doc', 'image'] as const) {
      const table = this.#table(kind);
      const ids = (await this.#o.db.selectFrom(table).select('id').where('bot_id', '=', botId).where('room_token', '=', roomToken).execute()).map((r) => r.id);
      await this.#o.queue.cancel(kind === 'doc' ? 'room-doc' : 'room-image', ids);
      await this.#o.db.deleteFrom(table).where('bot_id', '=', botId).where('room_token', '=', roomToken).execute();
    }
    await this.#o.index.deleteScope(botId, roomToken);
  }

  /** Message deleted in Talk: its documents and images go (S21). */
  async forgetMessage(roomToken: string, messageId: string): Promise<void> {
    for (const kind of ['doc', 'image'] as const) {
      const table = this.#table(kind);
      const rows = await this.#o.db
        .selectFrom(table)
        .select(['id', 'bot_id'])
        .where('room_token', '=', roomToken)
        .where('message_id', '=', messageId)
        .execute();
      for (const r of rows) {
        await this.#o.index.deleteItems(roomScope(kind, r.bot_id, roomToken), roomGroup(kind, r.id));
        await this.#o.db.deleteFrom(table).where('id', '=', r.id).execute();
      }
      await this.#o.queue.cancel(
        kind === 'doc' ? 'room-doc' : 'room-image',
        rows.map((r) => r.id),
      );
    }
  }

  /** Drops items not seen for the retention period (default 30 days). */
  async prune(): Promise<number> {
    const settings = await this.#o.settings.get();
    const cutoff = this.#o.now() - settings.roomRetentionDays * DAY;
    let removed = 0;
    for (const kind of ['doc', 'image'] as const) {
      const table = this.#table(kind);
      const rows = await this.#o.db.selectFrom(table).select(['id', 'bot_id', 'room_token']).where('updated_at', '<', cutoff).execute();
      for (const r of rows) {
        await this.#o.index.deleteItems(roomScope(kind, r.bot_id, r.room_token), roomGroup(kind, r.id));
        await this.#o.db.deleteFrom(table).where('id', '=', r.id).execute();
        removed++;
      }
      await this.#o.queue.cancel(
        kind === 'doc' ? 'room-doc' : 'room-image',
        rows.map((r) => r.id),
      );
    }
    return removed;
  }

  async #load(kind: RoomItemKind, id: number): Promise<Row | null> {
    return ((await this.#o.db.selectFrom(this.#table(kind)).selectAll().where('id', '=', id).executeTakeFirst()) as Row | undefined) ?? null;
  }

  async #fail(kind: RoomItemKind, row: Row, message: string): Promise<void> {
    await this.#o.index.deleteItems(roomScope(kind, row.bot_id, row.room_token), roomGroup(kind, row.id));
    await this.#o.db
      .updateTable(this.#table(kind))
      .set({ status: 'error', error: message.slice(0, 500), chunk_count: 0 })
      .where('id', '=', row.id)
      .execute();
  }

  /** Reads the attachment as its author after the share check; null (and the row marked) when it is not available. */
  async #fetch(kind: RoomItemKind, row: Row, maxBytes: number): Promise<Uint8Array | null> {
    const author = issueForStoredPrincipal(row.actor_uid);
    if (!(await this.#o.shareCheck(author, row.room_token, row.message_id, row.file_id))) {
      await this.#fail(kind, row, 'the file is no longer shared in this conversation');
      return null;
    }
    const node = await this.#o.files.findById(author, row.file_id);
    if (!node || node.folder) {
      await this.#fail(kind, row, 'the file is no longer available to its author');
      return null;
    }
    return this.#o.files.read(author, node, maxBytes);
  }

  async #guard<T>(kind: RoomItemKind, row: Row, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (err) {
      if (transient(err)) throw new RetryableJobError(err instanceof Error ? err.message : String(err));
      if (err instanceof NextcloudNotFoundError) {
        await this.#fail(kind, row, 'the file is no longer available');
        return undefined;
      }
      await this.#fail(kind, row, err instanceof Error ? err.message : 'the file could not be indexed');
      return undefined;
    }
  }

  /** Handler of 'room-doc' jobs. Plain text works without Docling. */
  async runDocumentJob(job: Job, signal: AbortSignal): Promise<void> {
    const row = await this.#load('doc', job.refId);
    if (!row || row.status !== 'pending') return;
    const settings = await this.#o.settings.get();
    await this.#guard('doc', row, async () => {
      const bytes = await this.#fetch('doc', row, settings.maxFileBytes);
      if (!bytes) return;
      const extracted = await this.#o.extractor.extract({ bytes, name: row.name, mimeType: row.mime_type });
      const chunks = chunkText(extracted.text, { chunkSizeChars: settings.chunkSizeChars, overlapChars: settings.chunkOverlapChars });
      if (chunks.length === 0) throw new ExtractionError('broken', 'no text could be found in the document');
      const embedded = await this.#o.embeddings.embed(
        chunks.map((c) => c.text),
        { signal },
      );
      await this.#o.index.replaceItems(
        roomScope('doc', row.bot_id, row.room_token),
        embedded.model,
        roomGroup('doc', row.id),
        'file',
        chunks.map((c, i) => ({
          seq: c.index,
          text: c.text,
          meta: { name: row.name, fileId: row.file_id, messageId: row.message_id, author: row.actor_uid },
          vector: embedded.vectors[i]!,
        })),
      );
      await this.#o.db
        .updateTable('room_documents')
        .set({ status: 'ready', error: null, checksum: sha256(bytes), chunk_count: chunks.length, embedding_model: embedded.model })
        .where('id', '=', row.id)
        .execute();
    });
  }

  /** Handler of 'room-image' jobs: describe once per distinct image, embed the description. */
  async runImageJob(job: Job, signal: AbortSignal): Promise<void> {
    const row = await this.#load('image', job.refId);
    if (!row || row.status !== 'pending') return;
    const settings = await this.#o.settings.get();
    await this.#guard('image', row, async () => {
      const bytes = await this.#fetch('image', row, settings.maxFileBytes);
      if (!bytes) return;
      const checksum = sha256(bytes);
      const visionModel = await this.#o.vision.model();
      if (!visionModel) throw new MediaError('image analysis is not configured', 400);
      const reuse = await this.#o.db
        .selectFrom('room_images')
        .select(['description'])
        .where('bot_id', '=', row.bot_id)
        .where('room_token', '=', row.room_token)
        .where('checksum', '=', checksum)
        .where('vision_model', '=', visionModel)
        .where('status', '=', 'ready')
        .where('description', 'is not', null)
        .executeTakeFirst();
      let description = reuse?.description ?? null;
      if (description === null) {
        const image = await this.#o.extractor.transcodeImage(bytes);
        description = (await this.#o.vision.analyze({ bytes: image.bytes, mimeType: image.mimeType, name: row.name }, IMAGE_MEMORY_PROMPT, signal)).text;
      }
      const text = `Image: ${row.name}\n\n${description}`;
      const embedded = await this.#o.embeddings.embed([text], { signal });
      await this.#o.index.replaceItems(roomScope('image', row.bot_id, row.room_token), embedded.model, roomGroup('image', row.id), 'file', [
        {
          seq: 0,
          text: description,
          meta: { name: row.name, fileId: row.file_id, messageId: row.message_id, author: row.actor_uid, indexedAt: this.#o.now() },
          vector: embedded.vectors[0]!,
        },
      ]);
      await this.#o.db
        .updateTable('room_images')
        .set({ status: 'ready', error: null, checksum, vision_model: visionModel, description, chunk_count: 1, embedding_model: embedded.model })
        .where('id', '=', row.id)
        .execute();
    });
  }
}
