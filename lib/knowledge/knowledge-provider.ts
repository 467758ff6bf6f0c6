// The knowledge tools as a ToolProvider: document search over the bot's
// sources, search over documents and images posted in the room, and image
// analysis and audio transcription of the current message's attachments.
// Attachments are read as the invoking user by file id (S15); guests get
// knowledge only from bots flagged for them (S11).
import type { ActingUser } from '../nextcloud/identity.ts';
import { analyzePolicy, searchPolicy, transcribePolicy } from '../tools/tool-policy.ts';
import {
  errorResult,
  textResult,
  type InvocationAttachment,
  type InvocationContext,
  type ToolDefinition,
  type ToolMetadata,
  type ToolProvider,
  type ToolResult,
} from '../tools/tool-provider.ts';
import type { EmbeddingsClient } from './embeddings.ts';
import type { Extractor } from './extract/extractor.ts';
import type { KnowledgeSettingsService } from './knowledge-settings.ts';
import type { SpeechClient, VisionClient } from './media-clients.ts';
import type { FileAccess } from './nextcloud-files.ts';
import type { RoomItemKind, RoomKnowledge } from './room-knowledge.ts';
import { botScope } from './source-model.ts';
import type { SearchHit, VectorIndex } from './vector-index.ts';

export const RAG_SEARCH = 'rag_search_documents';
export const ROOM_DOCS = 'room_search_documents';
export const ROOM_IMAGES = 'room_search_images';
export const ANALYZE_IMAGE = 'attachment_analyze_image';
export const TRANSCRIBE_AUDIO = 'attachment_transcribe_audio';

const NAMES = [RAG_SEARCH, ROOM_DOCS, ROOM_IMAGES, ANALYZE_IMAGE, TRANSCRIBE_AUDIO] as const;

const SEARCH_SCHEMA = {
  type: 'object',
  properties: {
    query: { type: 'string', description: 'What to look for. Use the key terms of the question; rephrase with synonyms if a first search finds nothing.' },
    limit: { type: 'integer', default: 5, description: 'How many chunks to return, 1–20.' },
    min_score: { type: 'number', default: 0.3, description: 'Minimum relevance 0–1: 0.3 broad, 0.5 relevant, 0.7 only close matches.' },
  },
  required: ['query'],
};

const TOOLS: Record<(typeof NAMES)[number], Omit<ToolDefinition, 'name'>> = {
  [RAG_SEARCH]: {
    description:
      "Always use this FIRST when the user asks anything the knowledge base might answer. Searches the bot's documents (files, folders and web pages its owner added) and returns the most relevant passages with their source.",
    schema: SEARCH_SCHEMA,
    policy: searchPolicy(),
    label: 'Document Search (RAG)',
  },
  [ROOM_DOCS]: {
    description:
      'Searches the documents that were uploaded in this Talk conversation for this bot (kept 30 days). Use it when the user refers to a file shared in the chat.',
    schema: SEARCH_SCHEMA,
    policy: searchPolicy(),
    label: 'Room Document Search',
  },
  [ROOM_IMAGES]: {
    description:
      'Searches descriptions of images shared earlier in this Talk conversation (kept 30 days). Give image_name to prefer an image by its file name.',
    schema: {
      ...SEARCH_SCHEMA,
      properties: { ...SEARCH_SCHEMA.properties, image_name: { type: 'string', description: 'File name (or part of it) of the image.' } },
    },
    policy: searchPolicy(),
    label: 'Room Image Search',
  },
  [ANALYZE_IMAGE]: {
    description:
      'Analyses an image attached to the current message with a vision model. Optionally give a question and the attachment name; without a name the first image is used.',
    schema: { type: 'object', properties: { question: { type: 'string' }, attachment_name: { type: 'string' } } },
    policy: analyzePolicy(),
    label: 'Image Attachment Analysis',
    requiresUser: true,
  },
  [TRANSCRIBE_AUDIO]: {
    description: 'Transcribes an audio or voice message attached to the current message. Use it first when the message is a voice message.',
    schema: { type: 'object', properties: { attachment_name: { type: 'string' } } },
    policy: transcribePolicy(),
    label: 'Audio Attachment Transcription',
    requiresUser: true,
  },
};

const DEFAULT_QUESTION = 'Describe this image in detail and highlight any relevant text or visual details.';
const MAX_AUDIO_BYTES = 25 * 1024 * 1024;

export interface KnowledgeProviderOptions {
  settings: KnowledgeSettingsService;
  embeddings: EmbeddingsClient;
  index: VectorIndex;
  rooms: RoomKnowledge;
  files: FileAccess;
  extractor: Extractor;
  vision: VisionClient;
  speech: SpeechClient;
  /** Whether guests and other non-users may get this bot's knowledge (S11: only bots flagged public). Default: no. */
  guestsMayUse?: (botId: string) => Promise<boolean>;
  /** How long a room search waits for this message's uploads to be indexed. */
  waitForUploadsMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

function clampLimit(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) ? Math.min(20, Math.max(1, Math.round(n))) : 5;
}

function clampScore(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0.3;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v.trim() : '';
}

function header(count: number, query: string, more: number): string {
  const moreText = more > 0 ? ` (${more} more available, increase limit to see more)` : '';
  return `Found ${count} relevant document chunk(s) for: "${query}"${moreText}`;
}

function pick(attachments: ReadonlyArray<InvocationAttachment>, kind: string, name: string): InvocationAttachment | null {
  const candidates = attachments.filter((a) => a.kind === kind);
  if (name === '') return candidates[0] ?? null;
  const lower = name.toLowerCase();
  return candidates.find((a) => a.name.toLowerCase() === lower) ?? candidates.find((a) => a.name.toLowerCase().includes(lower)) ?? null;
}

export class KnowledgeProvider implements ToolProvider {
  readonly id = 'knowledge';
  readonly #o: KnowledgeProviderOptions & { sleep: (ms: number) => Promise<void>; now: () => number; waitForUploadsMs: number };

  constructor(options: KnowledgeProviderOptions) {
    this.#o = { sleep: (ms) => new Promise((r) => setTimeout(r, ms)), now: Date.now, waitForUploadsMs: 60_000, ...options };
  }

  providesTool(name: string): boolean {
    return (NAMES as readonly string[]).includes(name);
  }

  getToolMetadata(): Record<string, ToolMetadata> {
    const out: Record<string, ToolMetadata> = {};
    for (const n of NAMES) out[n] = { label: TOOLS[n].label ?? n, summary: TOOLS[n].description.split('. ')[0] ?? '', family: 'knowledge' };
    return out;
  }

  async getTools(ctx: InvocationContext | null): Promise<ToolDefinition[]> {
    const s = await this.#o.settings.get();
    const embeddings = s.ragEnabled && (await this.#o.embeddings.activeModel()) !== null;
    const vision = (await this.#o.vision.model()) !== null;
    const speech = (await this.#o.speech.model()) !== null;
    const available: Record<(typeof NAMES)[number], boolean> = {
      [RAG_SEARCH]: embeddings,
      [ROOM_DOCS]: embeddings && (ctx === null || ctx.roomToken !== null),
      [ROOM_IMAGES]: embeddings && vision && (ctx === null || ctx.roomToken !== null),
      [ANALYZE_IMAGE]: vision,
      [TRANSCRIBE_AUDIO]: speech,
    };
    return NAMES.filter((n) => available[n]).map((name) => ({ name, ...TOOLS[name] }));
  }

  async executeTool(name: string, args: Record<string, unknown>, _config: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    if (
      (name === RAG_SEARCH || name === ROOM_DOCS || name === ROOM_IMAGES) &&
      ctx.actorKind !== 'user' &&
      !(await (this.#o.guestsMayUse?.(ctx.botId) ?? Promise.resolve(false)))
    ) {
      return errorResult('This bot does not share its knowledge with guests.');
    }
    switch (name) {
      case RAG_SEARCH:
        return this.#ragSearch(args, ctx);
      case ROOM_DOCS:
        return this.#roomSearch('doc', args, ctx);
      case ROOM_IMAGES:
        return this.#roomSearch('image', args, ctx);
      case ANALYZE_IMAGE:
        return this.#analyze(args, ctx);
      case TRANSCRIBE_AUDIO:
        return this.#transcribe(args, ctx);
      default:
        return errorResult('Tool not available');
    }
  }

  async #embedQuery(query: string, ctx: InvocationContext): Promise<{ model: string; vector: Float32Array }> {
    const r = await this.#o.embeddings.embed([query], {
      uid: ctx.user?.uid ?? null,
      guestRoom: ctx.user === null ? ctx.roomToken : null,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    return { model: r.model, vector: r.vectors[0]! };
  }

  async #ragSearch(args: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    const query = str(args.query);
    if (query === '') return errorResult('The query must not be empty.');
    const limit = clampLimit(args.limit);
    const minScore = clampScore(args.min_score);
    const { model, vector } = await this.#embedQuery(query, ctx);
    const result = await this.#o.index.search(botScope(ctx.botId), model, vector, { limit, minScore });
    if (result.hits.length === 0) {
      const counts = await this.#o.index.counts(botScope(ctx.botId));
      if (counts.length === 0) return textResult('No documents have been indexed for this bot yet.');
      if (!counts.some((c) => c.model === model)) {
        return textResult(
          `The documents of this bot were indexed with another embedding model (${counts.map((c) => c.model).join(', ')}); they must be reindexed before they can be searched.`,
        );
      }
      return textResult(`No document chunks matched "${query}" with a relevance of at least ${minScore}. Try other keywords or a lower min_score.`);
    }
    const parts = [header(result.hits.length, query, result.moreAvailable)];
    result.hits.forEach((h, i) => {
      const path = typeof h.meta.path === 'string' ? (h.meta.path.startsWith('http') ? h.meta.path : `/${h.meta.path}`) : h.group;
      parts.push(`---\n**Source ${i + 1}:** ${path} (chunk ${h.seq}) [relevance: ${h.score.toFixed(2)}]\n\n${h.text}`);
    });
    return textResult(parts.join('\n\n'));
  }

  /** Waits (bounded) until this message's uploads of `kind` are indexed; returns their row ids. */
  async #awaitUploads(kind: RoomItemKind, ctx: InvocationContext): Promise<number[]> {
    const fileIds = ctx.attachments.filter((a) => (kind === 'doc' ? a.kind === 'document' : a.kind === 'image')).map((a) => a.fileId);
    if (fileIds.length === 0 || ctx.roomToken === null) return [];
    const deadline = this.#o.now() + this.#o.waitForUploadsMs;
    for (;;) {
      const rows = await this.#o.rooms.statusOf(kind, ctx.botId, ctx.roomToken, fileIds);
      if (rows.every((r) => r.status !== 'pending') || this.#o.now() >= deadline || ctx.signal?.aborted)
        return rows.filter((r) => r.status === 'ready').map((r) => r.id);
      await this.#o.sleep(500);
    }
  }

  async #roomSearch(kind: RoomItemKind, args: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    if (ctx.roomToken === null) return errorResult('This tool needs a Talk conversation.');
    const query = str(args.query);
    if (query === '') return errorResult('The query must not be empty.');
    const limit = clampLimit(args.limit);
    const minScore = clampScore(args.min_score);
    const imageName = kind === 'image' ? str(args.image_name).toLowerCase() : '';
    const current = await this.#awaitUploads(kind, ctx);
    const { model, vector } = await this.#embedQuery(query, ctx);
    const room = ctx.roomToken;
    const run = async (min: number, ids?: number[]) => {
      // With a name boost, look further and let the boost reorder.
      const res = await this.#o.rooms.search(kind, ctx.botId, room, model, vector, {
        limit: imageName ? Math.min(60, limit * 4) : limit,
        minScore: imageName ? -1 : min,
        ...(ids ? { ids } : {}),
      });
      let hits = res.hits;
      if (imageName) {
        hits = hits
          .map((h) => {
            const name = String(h.meta.name ?? '').toLowerCase();
            const boost = name === imageName ? 0.2 : name.includes(imageName) ? 0.1 : 0;
            return { ...h, score: boost > 0 ? Math.max(min, Math.min(1, h.score + boost)) : h.score };
          })
          .filter((h) => h.score >= min)
          .sort((a, b) => b.score - a.score);
        return { hits: hits.slice(0, limit), more: Math.max(0, hits.length - limit) };
      }
      return { hits, more: res.moreAvailable };
    };
    let found = await run(minScore);
    // Upstream's fallbacks: a lower threshold on this turn's uploads, then on the whole room.
    if (found.hits.length === 0 && current.length > 0) found = await run(Math.min(minScore, 0.2), current);
    if (found.hits.length === 0) found = await run(Math.min(minScore, 0.2));
    if (found.hits.length === 0) {
      const models = await this.#o.rooms.modelsIn(kind, ctx.botId, room);
      if (models.length === 0)
        return textResult(
          kind === 'doc'
            ? 'No documents have been shared with this bot in this conversation yet.'
            : 'No images have been indexed for this bot in this conversation yet.',
        );
      return textResult(`Nothing in this conversation matched "${query}". Try other keywords.`);
    }
    return textResult(kind === 'doc' ? this.#formatDocs(query, found.hits, found.more) : this.#formatImages(query, found.hits, found.more));
  }

  #formatDocs(query: string, hits: SearchHit[], more: number): string {
    const parts = [header(hits.length, query, more)];
    hits.forEach((h, i) =>
      parts.push(`---\n**Source ${i + 1}:** ${String(h.meta.name ?? 'document')} (chunk ${h.seq}) [relevance: ${h.score.toFixed(2)}]\n\n${h.text}`),
    );
    return parts.join('\n\n');
  }

  #formatImages(query: string, hits: SearchHit[], more: number): string {
    const parts = [`Found ${hits.length} matching image(s) for: "${query}"${more > 0 ? ` (${more} more available, increase limit to see more)` : ''}`];
    hits.forEach((h, i) => {
      const at = typeof h.meta.indexedAt === 'number' ? new Date(h.meta.indexedAt).toISOString() : 'unknown';
      parts.push(
        `---\n**Image ${i + 1}:** ${String(h.meta.name ?? 'image')} [relevance: ${h.score.toFixed(2)}]\nTalk message: ${String(h.meta.messageId ?? '')} · uploaded by ${String(h.meta.author ?? '')} · indexed ${at}\n\n${h.text}`,
      );
    });
    return parts.join('\n\n');
  }

  async #attachmentBytes(user: ActingUser, a: InvocationAttachment, maxBytes: number): Promise<Uint8Array | null> {
    const node = await this.#o.files.findById(user, a.fileId);
    if (!node || node.folder) return null;
    return this.#o.files.read(user, node, maxBytes);
  }

  async #analyze(args: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    if (ctx.user === null) return errorResult('Image analysis needs a signed-in Nextcloud user.');
    const a = pick(ctx.attachments, 'image', str(args.attachment_name));
    if (!a)
      return errorResult(
        str(args.attachment_name) ? `No image named "${str(args.attachment_name)}" is attached to this message.` : 'No image is attached to this message.',
      );
    const settings = await this.#o.settings.get();
    const bytes = await this.#attachmentBytes(ctx.user, a, settings.maxFileBytes);
    if (!bytes) return errorResult(`The image "${a.name}" is not available to you.`);
    const image = await this.#o.extractor.transcodeImage(bytes);
    const question = str(args.question) || DEFAULT_QUESTION;
    const answer = await this.#o.vision.analyze({ bytes: image.bytes, mimeType: image.mimeType, name: a.name }, question, ctx.signal);
    return textResult(`Analysis of ${a.name}:\n\n${answer.text}`);
  }

  async #transcribe(args: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    if (ctx.user === null) return errorResult('Transcription needs a signed-in Nextcloud user.');
    const a = pick(ctx.attachments, 'audio', str(args.attachment_name));
    if (!a)
      return errorResult(
        str(args.attachment_name)
          ? `No audio file named "${str(args.attachment_name)}" is attached to this message.`
          : 'No audio or voice message is attached to this message.',
      );
    const bytes = await this.#attachmentBytes(ctx.user, a, MAX_AUDIO_BYTES);
    if (!bytes) return errorResult(`The audio file "${a.name}" is not available to you.`);
    const text = await this.#o.speech.transcribe({ bytes, mimeType: a.mimeType, name: a.name }, ctx.signal);
    return textResult(`Transcript for ${a.name}:\n\n${text === '' ? '(no speech recognised)' : text}`);
  }
}

/** Upstream's rule for voice messages: exactly one audio attachment and nothing else forces transcription first. */
export function isVoiceOnly(attachments: ReadonlyArray<InvocationAttachment>): boolean {
  return attachments.length === 1 && attachments[0]!.kind === 'audio';
}
