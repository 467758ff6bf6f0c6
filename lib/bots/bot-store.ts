// Bots as configured by their owners: validation, storage and lookup by mention.
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import { validateQuestionTree, type QuestionTree } from '../router/onboarding.ts';
import type { BotsTable, Database } from '../storage/schema.ts';

export interface Bot {
  id: string;
  ownerUid: string;
  displayName: string;
  /** Lowercase, without the leading '@'. */
  mention: string;
  description: string;
  systemPrompt: string;
  model: string | null;
  /** null = the admin default. */
  temperature: number | null;
  active: boolean;
  onboardingQuestions: QuestionTree | null;
  createdAt: number;
  updatedAt: number;
}

export interface BotInput {
  displayName: string;
  /** `@Tutor` and `tutor` are the same mention. */
  mention: string;
  description?: string;
  systemPrompt?: string;
  model?: string | null;
  temperature?: number | null;
  active?: boolean;
  onboardingQuestions?: QuestionTree | null;
}

export type BotPatch = Partial<BotInput>;

/** Invalid input; `fields` maps each offending field (or `field.path`) to a message for the form. */
export class BotValidationError extends Error {
  override name = 'BotValidationError';
  readonly fields: Record<string, string>;

  constructor(fields: Record<string, string>) {
    super(`Invalid bot: ${Object.entries(fields).map(([k, v]) => `${k}: ${v}`).join('; ')}`);
    this.fields = fields;
  }
}

export const MENTION_PATTERN = /^[a-z0-9_-]{1,100}$/;
const MENTION_TAKEN = 'This mention is already used by another bot';

/** Lowercases and strips one leading '@'. */
export function normalizeMention(mention: string): string {
  const t = mention.trim().toLowerCase();
  return t.startsWith('@') ? t.slice(1) : t;
}

const fieldSchemas = {
  displayName: z
    .string({ error: 'Must be a text' })
    .trim()
    .min(1, 'Enter a name')
    .max(200, 'At most 200 characters'),
  mention: z
    .string({ error: 'Must be a text' })
    .transform(normalizeMention)
    .pipe(z.string().regex(MENTION_PATTERN, 'Use 1 to 100 letters, digits, "_" or "-"')),
  description: z.string({ error: 'Must be a text' }).max(2000, 'At most 2000 characters'),
  systemPrompt: z.string({ error: 'Must be a text' }).max(20000, 'At most 20000 characters'),
  model: z
    .string({ error: 'Must be a text or empty' })
    .trim()
    .max(255, 'At most 255 characters')
    .nullable()
    .transform((v) => (v === '' ? null : v)),
  temperature: z
    .number({ error: 'Must be a number between 0 and 1, or empty' })
    .min(0, 'Must be between 0 and 1')
    .max(1, 'Must be between 0 and 1')
    .nullable()
    .transform((v) => (v === null ? null : roundTemperature(v))),
  active: z.boolean({ error: 'Must be true or false' }),
};

const createSchema = z.object({
  ...fieldSchemas,
  description: fieldSchemas.description.default(''),
  systemPrompt: fieldSchemas.systemPrompt.default(''),
  model: fieldSchemas.model.default(null),
  temperature: fieldSchemas.temperature.default(null),
  active: fieldSchemas.active.default(true),
});
const patchSchema = z.object(fieldSchemas).partial();

function roundTemperature(t: number): number {
  return Math.round(t * 100) / 100;
}

function collect(issues: readonly z.core.$ZodIssue[], fields: Record<string, string>): void {
  for (const issue of issues) {
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : 'input';
    if (!(key in fields)) fields[key] = issue.message;
  }
}

// The question tree is checked by its own validator, so its errors carry paths inside the tree.
function checkQuestions(value: unknown, fields: Record<string, string>): QuestionTree | null {
  if (value === null || value === undefined) return null;
  const result = validateQuestionTree(value);
  if (result.ok) return result.tree;
  const first = Object.entries(result.errors)[0];
  fields.onboardingQuestions = first ? `${first[0] || 'tree'}: ${first[1]}` : 'Invalid question tree';
  for (const [path, message] of Object.entries(result.errors)) {
    if (path !== '') fields[`onboardingQuestions.${path}`] = message;
  }
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** better-sqlite3 and pg report the unique index on `bots.mention` differently. */
function isMentionConflict(error: unknown): boolean {
  if (!isObject(error)) return false;
  const code = error.code;
  const text = [error.message, error.constraint, error.detail].filter((v) => typeof v === 'string').join(' ');
  if (code === 'SQLITE_CONSTRAINT_UNIQUE') return /\bbots\.mention\b/.test(text);
  if (code === '23505') return /mention/.test(text);
  return false;
}

function parseTree(text: string | null): QuestionTree | null {
  if (text === null) return null;
  try {
    const result = validateQuestionTree(JSON.parse(text));
    return result.ok ? result.tree : null;
  } catch {
    return null;
  }
}

function toBot(row: Selectable<BotsTable>): Bot {
  return {
    id: row.id,
    ownerUid: row.owner_uid,
    displayName: row.display_name,
    mention: row.mention,
    description: row.description,
    systemPrompt: row.system_prompt,
    model: row.model,
    // PostgreSQL `real` is single precision; the stored value is two decimals.
    temperature: row.temperature === null ? null : roundTemperature(Number(row.temperature)),
    active: Number(row.active) === 1,
    onboardingQuestions: parseTree(row.onboarding_questions),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export class BotStore {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async create(input: BotInput, ownerUid: string): Promise<Bot> {
    const fields: Record<string, string> = {};
    if (!isObject(input)) throw new BotValidationError({ input: 'Must be an object' });
    if (typeof ownerUid !== 'string' || ownerUid === '' || ownerUid.length > 64) fields.ownerUid = 'Must be a user id of 1 to 64 characters';
    const parsed = createSchema.safeParse(input);
    if (!parsed.success) collect(parsed.error.issues, fields);
    const questions = checkQuestions(input.onboardingQuestions, fields);
    // A taken mention is reported together with any other problem.
    const mention = fieldSchemas.mention.safeParse(input.mention);
    if (mention.success && (await this.#mentionTaken(mention.data, null))) fields.mention = MENTION_TAKEN;
    if (!parsed.success || Object.keys(fields).length > 0) throw new BotValidationError(fields);

    const now = this.#now();
    const v = parsed.data;
    const row: Selectable<BotsTable> = {
      id: randomUUID(),
      owner_uid: ownerUid,
      display_name: v.displayName,
      mention: v.mention,
      description: v.description,
      system_prompt: v.systemPrompt,
      model: v.model,
      temperature: v.temperature,
      active: v.active ? 1 : 0,
      onboarding_questions: questions === null ? null : JSON.stringify(questions),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.#db.insertInto('bots').values(row).execute();
    } catch (error) {
      // Another request took the mention between our check and the insert.
      if (isMentionConflict(error)) throw new BotValidationError({ mention: MENTION_TAKEN });
      throw error;
    }
    return toBot(row);
  }

  async get(id: string): Promise<Bot | null> {
    const row = await this.#db.selectFrom('bots').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toBot(row) : null;
  }

  /** Case-insensitive; a leading '@' is ignored. Inactive bots are returned too. */
  async getByMention(mention: string): Promise<Bot | null> {
    const normalized = normalizeMention(mention);
    if (!MENTION_PATTERN.test(normalized)) return null;
    const row = await this.#db.selectFrom('bots').selectAll().where('mention', '=', normalized).executeTakeFirst();
    return row ? toBot(row) : null;
  }

  async listActive(): Promise<Bot[]> {
    const rows = await this.#db.selectFrom('bots').selectAll().where('active', '=', 1).orderBy('mention').execute();
    return rows.map(toBot);
  }

  async listByOwner(uid: string): Promise<Bot[]> {
    const rows = await this.#db
      .selectFrom('bots')
      .selectAll()
      .where('owner_uid', '=', uid)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toBot);
  }

  /** Changes only the fields present in `patch`; null when the bot does not exist. */
  async update(id: string, patch: BotPatch): Promise<Bot | null> {
    if (!isObject(patch)) throw new BotValidationError({ input: 'Must be an object' });
    const existing = await this.get(id);
    if (!existing) return null;
    const fields: Record<string, string> = {};
    const parsed = patchSchema.safeParse(patch);
    if (!parsed.success) collect(parsed.error.issues, fields);
    const questions = patch.onboardingQuestions !== undefined ? checkQuestions(patch.onboardingQuestions, fields) : undefined;
    const mention = patch.mention !== undefined ? fieldSchemas.mention.safeParse(patch.mention) : null;
    if (mention?.success && mention.data !== existing.mention && (await this.#mentionTaken(mention.data, id))) fields.mention = MENTION_TAKEN;
    if (!parsed.success || Object.keys(fields).length > 0) throw new BotValidationError(fields);

    const v = parsed.data;
    const set: Partial<Selectable<BotsTable>> = { updated_at: this.#now() };
    if (v.displayName !== undefined) set.display_name = v.displayName;
    if (v.mention !== undefined) set.mention = v.mention;
    if (v.description !== undefined) set.description = v.description;
    if (v.systemPrompt !== undefined) set.system_prompt = v.systemPrompt;
    if (v.model !== undefined) set.model = v.model;
    if (v.temperature !== undefined) set.temperature = v.temperature;
    if (v.active !== undefined) set.active = v.active ? 1 : 0;
    if (questions !== undefined) set.onboarding_questions = questions === null ? null : JSON.stringify(questions);
    try {
      await this.#db.updateTable('bots').set(set).where('id', '=', id).execute();
    } catch (error) {
      if (isMentionConflict(error)) throw new BotValidationError({ mention: MENTION_TAKEN });
      throw error;
    }
    return this.get(id);
  }

  /** Removes the bot with its room states and conversation memory; false when it did not exist. */
  async delete(id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('room_states').where('bot_id', '=', id).execute();
      await trx.deleteFrom('conversation_messages').where('bot_id', '=', id).execute();
      const result = await trx.deleteFrom('bots').where('id', '=', id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /** mention → bot id of every active bot, for mention detection. */
  async activeMentions(): Promise<Map<string, string>> {
    const rows = await this.#db.selectFrom('bots').select(['mention', 'id']).where('active', '=', 1).execute();
    return new Map(rows.map((r) => [r.mention, r.id]));
  }

  async #mentionTaken(mention: string, exceptId: string | null): Promise<boolean> {
    const row = await this.#db
      .selectFrom('bots')
      .select('id')
      .where('mention', '=', mention)
      .$if(exceptId !== null, (qb) => qb.where('id', '!=', exceptId as string))
      .executeTakeFirst();
    return row !== undefined;
  }
}
