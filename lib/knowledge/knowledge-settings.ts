// Admin settings of the knowledge layer: embeddings, chunking, vision, speech,
// Docling and URL limits. Endpoint keys are write-only vault entries; an unset
// endpoint or key falls back to the primary model endpoint and its key.
import { z } from 'zod';
import { endpointField, intField, trimmedOrNull } from '../config/settings-fields.ts';
import type { LlmSettingsService } from '../llm/llm-settings.ts';
import { HttpError } from '../errors/http-error.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import { MASK, maskSecret, type Vault } from '../vault/vault.ts';
import { chunkOptionsProblem, MAX_CHUNK_SIZE_CHARS, MIN_CHUNK_SIZE_CHARS } from './chunker.ts';

export interface KnowledgeSettings {
  ragEnabled: boolean;
  /** null: the primary model endpoint. */
  embeddingEndpoint: string | null;
  /** Required for RAG: there is no silent fallback to the chat model (upstream did that). */
  embeddingModel: string | null;
  embeddingBatchSize: number;
  embeddingConcurrency: number;
  embeddingTimeoutSeconds: number;
  chunkSizeChars: number;
  chunkOverlapChars: number;
  visionEndpoint: string | null;
  visionModel: string | null;
  visionTimeoutSeconds: number;
  /** null: the primary endpoint's `/audio/transcriptions`. */
  speechEndpoint: string | null;
  speechModel: string | null;
  speechTimeoutSeconds: number;
  doclingEnabled: boolean;
  doclingEndpoint: string | null;
  doclingTimeoutSeconds: number;
  urlMaxBytes: number;
  urlTimeoutSeconds: number;
  maxFileBytes: number;
  roomRetentionDays: number;
  /** Documents plus images one bot keeps per room (S19 ingestion quota). */
  roomQuotaItems: number;
}

export type KeyName = 'embeddingKey' | 'visionKey' | 'speechKey' | 'doclingKey';

export type PublicKnowledgeSettings = KnowledgeSettings & Record<KeyName, { set: boolean; masked: typeof MASK | '' }>;

export const KNOWLEDGE_SETTINGS_KEY = 'knowledge.settings';
const VAULT_NAMES: Readonly<Record<KeyName, string>> = {
  embeddingKey: 'knowledge.embedding.key',
  visionKey: 'knowledge.vision.key',
  speechKey: 'knowledge.speech.key',
  doclingKey: 'knowledge.docling.key',
};

export const KNOWLEDGE_DEFAULTS: Readonly<KnowledgeSettings> = Object.freeze({
  ragEnabled: true,
  embeddingEndpoint: null,
  embeddingModel: null,
  embeddingBatchSize: 64,
  embeddingConcurrency: 2,
  embeddingTimeoutSeconds: 120,
  chunkSizeChars: 750,
  chunkOverlapChars: 50,
  visionEndpoint: null,
  visionModel: null,
  visionTimeoutSeconds: 120,
  speechEndpoint: null,
  speechModel: null,
  speechTimeoutSeconds: 180,
  doclingEnabled: false,
  doclingEndpoint: null,
  doclingTimeoutSeconds: 300,
  urlMaxBytes: 10 * 1024 * 1024,
  urlTimeoutSeconds: 30,
  maxFileBytes: 50 * 1024 * 1024,
  roomRetentionDays: 30,
  roomQuotaItems: 200,
});

const modelField = z
  .string({ error: 'must be a model name or null' })
  .nullable()
  .transform(trimmedOrNull)
  .refine((v) => v === null || (v.length <= 255 && !/[\u0000-\u001f]/.test(v)), 'must be at most 255 printable characters');
const bool = z.boolean({ error: 'must be true or false' });

const FIELDS = {
  ragEnabled: bool,
  embeddingEndpoint: endpointField,
  embeddingModel: modelField,
  embeddingBatchSize: intField(1, 2048, 'inputs'),
  embeddingConcurrency: intField(1, 8, 'requests'),
  embeddingTimeoutSeconds: intField(5, 900, 'seconds'),
  chunkSizeChars: intField(MIN_CHUNK_SIZE_CHARS, MAX_CHUNK_SIZE_CHARS, 'characters'),
  chunkOverlapChars: intField(0, MAX_CHUNK_SIZE_CHARS - 1, 'characters'),
  visionEndpoint: endpointField,
  visionModel: modelField,
  visionTimeoutSeconds: intField(5, 900, 'seconds'),
  speechEndpoint: endpointField,
  speechModel: modelField,
  speechTimeoutSeconds: intField(5, 900, 'seconds'),
  doclingEnabled: bool,
  doclingEndpoint: endpointField,
  doclingTimeoutSeconds: intField(5, 1800, 'seconds'),
  urlMaxBytes: intField(1024, 100 * 1024 * 1024, 'bytes'),
  urlTimeoutSeconds: intField(1, 300, 'seconds'),
  maxFileBytes: intField(1024, 500 * 1024 * 1024, 'bytes'),
  roomRetentionDays: intField(1, 3650, 'days'),
  roomQuotaItems: intField(1, 100_000, 'items'),
} satisfies { [K in keyof KnowledgeSettings]: z.ZodType<KnowledgeSettings[K], unknown> };

type Field = keyof typeof FIELDS;

const KEEP = Symbol('keep');
const keyField = z
  .string({ error: 'must be a key string, "" to keep the stored key, or null to clear it' })
  .nullable()
  .transform((v): string | null | typeof KEEP => (v === null ? null : v.trim() === '' || v === MASK ? KEEP : v.trim()))
  .superRefine((v, ctx) => {
    if (typeof v !== 'string') return;
    if (v.length > 4096) ctx.addIssue({ code: 'custom', message: 'must be at most 4096 characters' });
    else if (!/^[\x21-\x7e]+$/.test(v)) ctx.addIssue({ code: 'custom', message: 'must contain only printable ASCII characters without spaces' });
  });

/** Where one OpenAI-compatible capability is reached. */
export interface ResolvedEndpoint {
  endpoint: string;
  key: string | null;
  model: string;
  timeoutMs: number;
}

export interface UpdateResult {
  settings: KnowledgeSettings;
  /** The embedding model or endpoint changed: stored vectors no longer match; reindex everything. */
  embeddingChanged: boolean;
}

export class KnowledgeSettingsService {
  readonly #store: SettingsStore;
  readonly #vault: Vault;
  readonly #llm: LlmSettingsService | null;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: { settings: SettingsStore; vault: Vault; llmSettings?: LlmSettingsService | null }) {
    this.#store = options.settings;
    this.#vault = options.vault;
    this.#llm = options.llmSettings ?? null;
  }

  async get(): Promise<KnowledgeSettings> {
    const raw = await this.#store.get<Record<string, unknown>>(KNOWLEDGE_SETTINGS_KEY);
    const out: Record<string, unknown> = { ...KNOWLEDGE_DEFAULTS };
    if (raw && typeof raw === 'object') {
      for (const name of Object.keys(FIELDS) as Field[]) {
        if (!(name in raw)) continue;
        const r = FIELDS[name].safeParse(raw[name]);
        if (r.success) out[name] = r.data;
      }
    }
    const s = out as unknown as KnowledgeSettings;
    if (chunkOptionsProblem({ chunkSizeChars: s.chunkSizeChars, overlapChars: s.chunkOverlapChars })) {
      s.chunkSizeChars = KNOWLEDGE_DEFAULTS.chunkSizeChars;
      s.chunkOverlapChars = KNOWLEDGE_DEFAULTS.chunkOverlapChars;
    }
    return s;
  }

  async toPublic(settings: KnowledgeSettings): Promise<PublicKnowledgeSettings> {
    const out: Record<string, unknown> = { ...settings };
    for (const k of Object.keys(VAULT_NAMES) as KeyName[]) {
      const set = await this.#vault.has(VAULT_NAMES[k]);
      out[k] = { set, masked: maskSecret(set) };
    }
    return out as PublicKnowledgeSettings;
  }

  /** Validates the whole patch; nothing is written when a field is bad. */
  update(patch: unknown): Promise<UpdateResult> {
    const run = this.#queue.then(() => this.#update(patch));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #update(patch: unknown): Promise<UpdateResult> {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
      throw new HttpError(400, 'invalid_settings', 'The settings must be a JSON object', { body: 'must be a JSON object' });
    }
    const errors: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const keys: Partial<Record<KeyName, string | null>> = {};
    for (const [name, raw] of Object.entries(patch)) {
      if (raw === undefined) continue;
      if (Object.hasOwn(FIELDS, name)) {
        const r = FIELDS[name as Field].safeParse(raw);
        if (r.success) values[name] = r.data;
        else errors[name] = r.error.issues[0]?.message ?? 'is invalid';
      } else if (Object.hasOwn(VAULT_NAMES, name)) {
        const r = keyField.safeParse(raw);
        if (!r.success) errors[name] = r.error.issues[0]?.message ?? 'is invalid';
        else if (r.data !== KEEP) keys[name as KeyName] = r.data;
      } else {
        errors[name] = 'is not a known setting';
      }
    }
    const current = await this.get();
    const next = { ...current, ...values } as KnowledgeSettings;
    const chunkProblem = chunkOptionsProblem({ chunkSizeChars: next.chunkSizeChars, overlapChars: next.chunkOverlapChars });
    if (chunkProblem && !errors.chunkOverlapChars) errors.chunkOverlapChars = chunkProblem;
    if (next.doclingEnabled && next.doclingEndpoint === null && !errors.doclingEndpoint) errors.doclingEndpoint = 'is required while Docling is enabled';
    if (Object.keys(errors).length > 0) throw new HttpError(400, 'invalid_settings', `Invalid settings: ${Object.keys(errors).join(', ')}`, errors);
    for (const [field, value] of Object.entries(keys) as Array<[KeyName, string | null]>) {
      if (value === null) await this.#vault.delete(VAULT_NAMES[field]);
      else await this.#vault.put(VAULT_NAMES[field], value);
    }
    await this.#store.set(KNOWLEDGE_SETTINGS_KEY, next);
    const embeddingChanged = current.embeddingModel !== next.embeddingModel || current.embeddingEndpoint !== next.embeddingEndpoint;
    return { settings: next, embeddingChanged };
  }

  async #primary(): Promise<{ endpoint: string | null; key: string | null }> {
    if (!this.#llm) return { endpoint: null, key: null };
    const s = await this.#llm.get();
    return { endpoint: s.primaryEndpoint, key: s.primaryEndpoint ? await this.#llm.getKey('primary') : null };
  }

  async #resolve(endpoint: string | null, model: string | null, keyName: KeyName, timeoutSeconds: number): Promise<ResolvedEndpoint | null> {
    if (model === null) return null;
    const own = await this.#vault.get(VAULT_NAMES[keyName]);
    if (endpoint !== null) return { endpoint, key: own, model, timeoutMs: timeoutSeconds * 1000 };
    const primary = await this.#primary();
    if (primary.endpoint === null) return null;
    return { endpoint: primary.endpoint, key: own ?? primary.key, model, timeoutMs: timeoutSeconds * 1000 };
  }

  /** null while RAG is off or no embedding model is set. */
  async embeddingEndpoint(): Promise<ResolvedEndpoint | null> {
    const s = await this.get();
    if (!s.ragEnabled) return null;
    return this.#resolve(s.embeddingEndpoint, s.embeddingModel, 'embeddingKey', s.embeddingTimeoutSeconds);
  }

  async visionEndpoint(): Promise<ResolvedEndpoint | null> {
    const s = await this.get();
    return this.#resolve(s.visionEndpoint, s.visionModel, 'visionKey', s.visionTimeoutSeconds);
  }

  async speechEndpoint(): Promise<ResolvedEndpoint | null> {
    const s = await this.get();
    return this.#resolve(s.speechEndpoint, s.speechModel, 'speechKey', s.speechTimeoutSeconds);
  }

  async doclingConfig(): Promise<{ endpoint: string; key: string | null; timeoutSeconds: number } | null> {
    const s = await this.get();
    if (!s.doclingEnabled || s.doclingEndpoint === null) return null;
    return { endpoint: s.doclingEndpoint, key: await this.#vault.get(VAULT_NAMES.doclingKey), timeoutSeconds: s.doclingTimeoutSeconds };
  }
}
