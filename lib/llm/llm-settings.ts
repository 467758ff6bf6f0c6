import { z } from 'zod';
import { endpointField, endpointProblem, intField, trimmedOrNull } from '../config/settings-fields.ts';
import { HttpError } from '../errors/http-error.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import { MASK, maskSecret, type Vault } from '../vault/vault.ts';
import { modelRefProblem, parseModelRef, type EndpointName } from './model-ref.ts';

/** The model-provider settings as the server uses them. Keys stay in the vault; only whether one is set shows here. */
export interface LlmSettings {
  primaryEndpoint: string | null;
  primaryKeySet: boolean;
  secondaryEndpoint: string | null;
  secondaryKeySet: boolean;
  defaultModel: string | null;
  /** Empty: any model the endpoints list. */
  allowedModels: string[];
  fallbackModel: string | null;
  chatTimeoutSeconds: number;
  streamTimeoutSeconds: number;
  modelsTimeoutSeconds: number;
  defaultTemperature: number;
  maxTokens: number;
  conversationMemoryTokens: number;
  conversationRetentionDays: number;
}

export interface PublicKeyState {
  set: boolean;
  masked: typeof MASK | '';
}

/** What the admin API shows: the settings with each key replaced by its state. */
export type PublicLlmSettings = Omit<LlmSettings, 'primaryKeySet' | 'secondaryKeySet'> & { primaryKey: PublicKeyState; secondaryKey: PublicKeyState };

type StoredSettings = Omit<LlmSettings, 'primaryKeySet' | 'secondaryKeySet'>;

export const LLM_SETTINGS_KEY = 'llm.settings';
export const PRIMARY_KEY_NAME = 'llm.primary.key';
export const SECONDARY_KEY_NAME = 'llm.secondary.key';

export const LLM_DEFAULTS: Readonly<StoredSettings> = Object.freeze({
  primaryEndpoint: null,
  secondaryEndpoint: null,
  defaultModel: null,
  allowedModels: [],
  fallbackModel: null,
  chatTimeoutSeconds: 90,
  streamTimeoutSeconds: 240,
  modelsTimeoutSeconds: 20,
  defaultTemperature: 0.2,
  maxTokens: 2000,
  conversationMemoryTokens: 8000,
  conversationRetentionDays: 30,
});

export { endpointProblem };

const modelField = z
  .string({ error: 'must be a model name or null' })
  .nullable()
  .transform(trimmedOrNull)
  .superRefine((v, ctx) => {
    const problem = v === null ? null : modelRefProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const allowedModelsField = z
  .array(z.string({ error: 'every entry must be a model name' }), { error: 'must be a list of model names' })
  .max(500, 'must list at most 500 models')
  .transform((list) => [...new Set(list.map((m) => m.trim()).filter((m) => m !== ''))])
  .superRefine((list, ctx) => {
    for (const m of list) {
      const problem = modelRefProblem(m);
      if (problem) ctx.addIssue({ code: 'custom', message: `"${m.slice(0, 80)}" ${problem}` });
    }
  });

const timeoutField = intField(5, 900, 'seconds');

const STORED_FIELDS = {
  primaryEndpoint: endpointField,
  secondaryEndpoint: endpointField,
  defaultModel: modelField,
  allowedModels: allowedModelsField,
  fallbackModel: modelField,
  chatTimeoutSeconds: timeoutField,
  streamTimeoutSeconds: timeoutField,
  modelsTimeoutSeconds: timeoutField,
  defaultTemperature: z.number({ error: 'must be a number' }).min(0, 'must be at least 0').max(1, 'must be at most 1'),
  maxTokens: intField(16, 200_000, 'tokens'),
  conversationMemoryTokens: intField(1000, 1_000_000, 'tokens'),
  conversationRetentionDays: intField(1, 3650, 'days'),
} satisfies { [K in keyof StoredSettings]: z.ZodType<StoredSettings[K], unknown> };

// Empty string, absent, or the mask a UI might echo back: keep the stored key. null: clear it.
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

const KEY_FIELDS = { primaryKey: PRIMARY_KEY_NAME, secondaryKey: SECONDARY_KEY_NAME } as const;

type StoredField = keyof typeof STORED_FIELDS;
type KeyField = keyof typeof KEY_FIELDS;

function isStoredField(name: string): name is StoredField {
  return Object.hasOwn(STORED_FIELDS, name);
}

function isKeyField(name: string): name is KeyField {
  return Object.hasOwn(KEY_FIELDS, name);
}

/** Model references that name the secondary endpoint need one configured. */
function crossFieldProblems(s: StoredSettings): Record<string, string> {
  const problems: Record<string, string> = {};
  if (s.secondaryEndpoint !== null) return problems;
  const needsSecondary = (ref: string | null) => ref !== null && parseModelRef(ref).endpoint === 'secondary';
  const message = 'refers to the secondary endpoint, which is not configured';
  if (needsSecondary(s.defaultModel)) problems.defaultModel = message;
  if (needsSecondary(s.fallbackModel)) problems.fallbackModel = message;
  const bad = s.allowedModels.filter(needsSecondary);
  if (bad.length > 0)
    problems.allowedModels = `${bad.map((m) => `"${m.slice(0, 80)}"`).join(', ')} ${bad.length === 1 ? 'refers' : 'refer'} to the secondary endpoint, which is not configured`;
  return problems;
}

export function toPublic(settings: LlmSettings): PublicLlmSettings {
  const { primaryKeySet, secondaryKeySet, ...rest } = settings;
  return {
    ...rest,
    allowedModels: [...rest.allowedModels],
    primaryKey: { set: primaryKeySet, masked: maskSecret(primaryKeySet) as PublicKeyState['masked'] },
    secondaryKey: { set: secondaryKeySet, masked: maskSecret(secondaryKeySet) as PublicKeyState['masked'] },
  };
}

/**
 * Admin settings of the model-provider layer. Non-secret values live in the
 * settings store under one key, so an update is a single write; the endpoint
 * keys are write-only vault entries.
 */
const SNAPSHOT_MS = 1000;

export class LlmSettingsService {
  readonly #settings: SettingsStore;
  readonly #vault: Vault;
  // Updates read, merge and write; one at a time so two admins cannot interleave.
  #queue: Promise<unknown> = Promise.resolve();
  #cached: { value: Promise<LlmSettings>; until: number } | null = null;
  #generation = 0;

  constructor(settings: SettingsStore, vault: Vault) {
    this.#settings = settings;
    this.#vault = vault;
  }

  /**
   * Every model call of a turn asks for the settings (runner, client, catalogue): one read serves them
   * for a second. Updates here drop it at once; another thread's update arrives with `invalidate()`.
   */
  async get(): Promise<LlmSettings> {
    const now = Date.now();
    if (this.#cached && this.#cached.until > now) return this.#cached.value;
    const generation = this.#generation;
    const value = this.#load();
    this.#cached = { value, until: now + SNAPSHOT_MS };
    try {
      return await value;
    } catch (err) {
      if (this.#generation === generation) this.#cached = null;
      throw err;
    }
  }

  invalidate(): void {
    this.#generation += 1;
    this.#cached = null;
  }

  async #load(): Promise<LlmSettings> {
    const stored = await this.#readStored();
    const [primaryKeySet, secondaryKeySet] = await Promise.all([this.#vault.has(PRIMARY_KEY_NAME), this.#vault.has(SECONDARY_KEY_NAME)]);
    return { ...stored, primaryKeySet, secondaryKeySet };
  }

  /** The key of an endpoint, or null when none is stored. Never goes into an API answer. */
  async getKey(which: EndpointName): Promise<string | null> {
    return this.#vault.get(which === 'primary' ? PRIMARY_KEY_NAME : SECONDARY_KEY_NAME);
  }

  toPublic(settings: LlmSettings): PublicLlmSettings {
    return toPublic(settings);
  }

  /**
   * Validates the whole patch first and writes nothing when any field is bad;
   * the HttpError's details map each bad field to its problem.
   */
  update(patch: unknown): Promise<LlmSettings> {
    const run = this.#queue.then(() => this.#update(patch));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #update(patch: unknown): Promise<LlmSettings> {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
      throw new HttpError(400, 'invalid_settings', 'The settings must be a JSON object', { body: 'must be a JSON object' });
    }
    const errors: Record<string, string> = {};
    const values: Partial<Record<StoredField, unknown>> = {};
    const keys: Partial<Record<KeyField, string | null>> = {};
    for (const [name, raw] of Object.entries(patch)) {
      if (raw === undefined) continue;
      if (isStoredField(name)) {
        const result = STORED_FIELDS[name].safeParse(raw);
        if (result.success) values[name] = result.data;
        else errors[name] = result.error.issues[0]?.message ?? 'is invalid';
      } else if (isKeyField(name)) {
        const result = keyField.safeParse(raw);
        if (!result.success) errors[name] = result.error.issues[0]?.message ?? 'is invalid';
        else if (result.data !== KEEP) keys[name] = result.data;
      } else {
        errors[name] = 'is not a known setting';
      }
    }
    const current = await this.#readStored();
    const next = { ...current, ...values } as StoredSettings;
    if (Object.keys(errors).length === 0) Object.assign(errors, crossFieldProblems(next));
    if (Object.keys(errors).length > 0) {
      throw new HttpError(400, 'invalid_settings', `Invalid settings: ${Object.keys(errors).join(', ')}`, errors);
    }
    this.invalidate();
    for (const [field, value] of Object.entries(keys) as Array<[KeyField, string | null]>) {
      if (value === null) await this.#vault.delete(KEY_FIELDS[field]);
      else await this.#vault.put(KEY_FIELDS[field], value);
    }
    await this.#settings.set(LLM_SETTINGS_KEY, next);
    this.invalidate();
    return this.get();
  }

  /** Stored values over the defaults; a stored value that no longer validates falls back to its default. */
  async #readStored(): Promise<StoredSettings> {
    const raw = await this.#settings.get<Record<string, unknown>>(LLM_SETTINGS_KEY);
    const out: Record<string, unknown> = { ...LLM_DEFAULTS, allowedModels: [] };
    if (raw && typeof raw === 'object') {
      for (const name of Object.keys(STORED_FIELDS) as StoredField[]) {
        if (!(name in raw)) continue;
        const result = STORED_FIELDS[name].safeParse(raw[name]);
        if (result.success) out[name] = result.data;
      }
    }
    return out as unknown as StoredSettings;
  }
}
