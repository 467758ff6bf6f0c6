// Bots as configured by their owners: validation, storage and lookup by mention.
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import { validateQuestionTree, type QuestionTree } from './question-tree.ts';
import type { BotsTable, Database } from '../storage/schema.ts';
import type { ApprovalStatus, TeamMembers, Visibility } from '../storage/tables/governance-tables.ts';
import { parseStringList } from '../storage/json-columns.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';
import { collectFieldErrors } from '../validation/field-errors.ts';

export type { ApprovalStatus, TeamMembers, Visibility };

/** What a bot's owner tells reviewers when submitting it (upstream's four questions). */
export interface Questionnaire {
  reason: string;
  capabilities: string;
  knowledgeDescription: string;
  testingNotes: string;
}

export interface Bot extends BotState {
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
  visibility: Visibility;
  allowedGroups: string[];
  allowedTeams: string[];
  knowledgeEnabled: boolean;
  /** Guests and federated users may use it (global bots only, S4). */
  guestsAllowed: boolean;
  createdAt: number;
  updatedAt: number;
}

/** Review state, written only by the governance service. */
export interface BotState {
  approvalStatus: ApprovalStatus;
  teamMembers: TeamMembers;
  approvedVersionId: number | null;
  pendingVersionId: number | null;
  submittedAt: number | null;
  approvedBy: string | null;
  approvedAt: number | null;
  rejectionReason: string | null;
  testerUid: string | null;
  questionnaire: Questionnaire | null;
}

/** A new bot's review state, and what a bot returns to when it becomes personal again. */
export const INITIAL_STATE: Readonly<BotState> = {
  approvalStatus: 'personal',
  teamMembers: 'direct',
  approvedVersionId: null,
  pendingVersionId: null,
  submittedAt: null,
  approvedBy: null,
  approvedAt: null,
  rejectionReason: null,
  testerUid: null,
  questionnaire: null,
};

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
  visibility?: Visibility;
  allowedGroups?: string[];
  allowedTeams?: string[];
  knowledgeEnabled?: boolean;
  guestsAllowed?: boolean;
}

export type BotPatch = Partial<BotInput>;

/** Invalid input; `fields` maps each offending field (or `field.path`) to a message for the form. */
export class BotValidationError extends Error {
  override name = 'BotValidationError';
  readonly fields: Record<string, string>;

  constructor(fields: Record<string, string>) {
    super(
      `Invalid bot: ${Object.entries(fields)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ')}`,
    );
    this.fields = fields;
  }
}

export const MENTION_PATTERN = /^[a-z0-9_-]{1,100}$/;
export const MENTION_TAKEN = 'This mention is already used by another bot';
/** Words Talk gives a meaning of its own after '@' (or that read like one); a bot cannot take them. */
export const RESERVED_MENTIONS: ReadonlySet<string> = new Set([
  'all',
  'here',
  'everyone',
  'everybody',
  'channel',
  'room',
  'call',
  'user',
  'users',
  'guest',
  'guests',
  'group',
  'groups',
  'team',
  'teams',
  'circle',
  'circles',
  'email',
  'emails',
  'federated_user',
  'federated_users',
  'bot',
  'bots',
  'system',
  'deleted_users',
  'talk_bot',
]);
export const MENTION_RESERVED = 'This word is reserved by Talk; choose another mention';
/** Team (circle) ids are 31 random letters and digits (S2). */
export const TEAM_ID_PATTERN = /^[A-Za-z0-9]{31}$/;
// Group ids are free text in Nextcloud; control characters and slashes never belong in one.
const GROUP_ID_PATTERN = /^[^\u0000-\u001f\u007f/\\]{1,255}$/;

/** Lowercases and strips one leading '@'. */
export function normalizeMention(mention: string): string {
  const t = mention.trim().toLowerCase();
  return t.startsWith('@') ? t.slice(1) : t;
}

/** One schema per stored field; the API composes its request bodies from them. */
export const BOT_FIELD_SCHEMAS = {
  displayName: z.string({ error: 'Must be a text' }).trim().min(1, 'Enter a name').max(200, 'At most 200 characters'),
  mention: z
    .string({ error: 'Must be a text' })
    .transform(normalizeMention)
    .pipe(
      z
        .string()
        .regex(MENTION_PATTERN, 'Use 1 to 100 letters, digits, "_" or "-"')
        .refine((m) => !RESERVED_MENTIONS.has(m), MENTION_RESERVED),
    ),
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
  visibility: z.enum(['personal', 'groups', 'teams', 'global'], { error: 'Must be personal, groups, teams or global' }),
  allowedGroups: z
    .array(z.string({ error: 'Must be a group id' }).regex(GROUP_ID_PATTERN, 'Not a valid group id'), { error: 'Must be a list of group ids' })
    .max(100, 'At most 100 groups')
    .transform(unique),
  allowedTeams: z
    .array(z.string({ error: 'Must be a team id' }).regex(TEAM_ID_PATTERN, 'Not a valid team id'), { error: 'Must be a list of team ids' })
    .max(100, 'At most 100 teams')
    .transform(unique),
  knowledgeEnabled: z.boolean({ error: 'Must be true or false' }),
  guestsAllowed: z.boolean({ error: 'Must be true or false' }),
};

const fieldSchemas = BOT_FIELD_SCHEMAS;

function unique(list: string[]): string[] {
  return [...new Set(list)];
}

const createSchema = z.object({
  ...fieldSchemas,
  description: fieldSchemas.description.default(''),
  systemPrompt: fieldSchemas.systemPrompt.default(''),
  model: fieldSchemas.model.default(null),
  temperature: fieldSchemas.temperature.default(null),
  active: fieldSchemas.active.default(true),
  visibility: fieldSchemas.visibility.default('personal'),
  allowedGroups: fieldSchemas.allowedGroups.default([]),
  allowedTeams: fieldSchemas.allowedTeams.default([]),
  knowledgeEnabled: fieldSchemas.knowledgeEnabled.default(false),
  guestsAllowed: fieldSchemas.guestsAllowed.default(false),
});
const patchSchema = z.object(fieldSchemas).partial();

function roundTemperature(t: number): number {
  return Math.round(t * 100) / 100;
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

function parseQuestionnaire(text: string | null): Questionnaire | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<Questionnaire> | null;
    if (!isObject(v)) return null;
    const s = (x: unknown) => (typeof x === 'string' ? x : '');
    return { reason: s(v.reason), capabilities: s(v.capabilities), knowledgeDescription: s(v.knowledgeDescription), testingNotes: s(v.testingNotes) };
  } catch {
    return null;
  }
}

function nullableNumber(v: number | null): number | null {
  return v === null ? null : Number(v);
}

function stateColumns(state: Partial<BotState>): Partial<Selectable<BotsTable>> {
  const set: Partial<Selectable<BotsTable>> = {};
  if (state.approvalStatus !== undefined) set.approval_status = state.approvalStatus;
  if (state.teamMembers !== undefined) set.team_members = state.teamMembers;
  if (state.approvedVersionId !== undefined) set.approved_version_id = state.approvedVersionId;
  if (state.pendingVersionId !== undefined) set.pending_version_id = state.pendingVersionId;
  if (state.submittedAt !== undefined) set.submitted_at = state.submittedAt;
  if (state.approvedBy !== undefined) set.approved_by = state.approvedBy;
  if (state.approvedAt !== undefined) set.approved_at = state.approvedAt;
  if (state.rejectionReason !== undefined) set.rejection_reason = state.rejectionReason;
  if (state.testerUid !== undefined) set.tester_uid = state.testerUid;
  if (state.questionnaire !== undefined) set.questionnaire = state.questionnaire === null ? null : JSON.stringify(state.questionnaire);
  return set;
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
    visibility: row.visibility,
    allowedGroups: parseStringList(row.allowed_groups),
    allowedTeams: parseStringList(row.allowed_teams),
    knowledgeEnabled: Number(row.knowledge_enabled) === 1,
    guestsAllowed: Number(row.guests_allowed) === 1,
    approvalStatus: row.approval_status,
    teamMembers: row.team_members === 'all' ? 'all' : 'direct',
    approvedVersionId: nullableNumber(row.approved_version_id),
    pendingVersionId: nullableNumber(row.pending_version_id),
    submittedAt: nullableNumber(row.submitted_at),
    approvedBy: row.approved_by,
    approvedAt: nullableNumber(row.approved_at),
    rejectionReason: row.rejection_reason,
    testerUid: row.tester_uid,
    questionnaire: parseQuestionnaire(row.questionnaire),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

// Read on every Talk turn: prepared once (storage/prepared-query.ts).
const BOT_BY_ID = new PreparedQuery((db, p: { id: string }) => db.selectFrom('bots').selectAll().where('id', '=', p.id));
const BOT_BY_MENTION = new PreparedQuery((db, p: { mention: string }) => db.selectFrom('bots').selectAll().where('mention', '=', p.mention));
const ACTIVE_MENTIONS = new PreparedQuery((db, _p: Record<string, never>) => db.selectFrom('bots').select(['mention', 'id']).where('active', '=', 1));

export class BotStore {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  /** `state` is for the governance service; without it a bot starts personal. */
  async create(input: BotInput, ownerUid: string, state: Partial<BotState> = {}): Promise<Bot> {
    const fields: Record<string, string> = {};
    if (!isObject(input)) throw new BotValidationError({ input: 'Must be an object' });
    if (typeof ownerUid !== 'string' || ownerUid === '' || ownerUid.length > 64) fields.ownerUid = 'Must be a user id of 1 to 64 characters';
    const parsed = createSchema.safeParse(input);
    if (!parsed.success) collectFieldErrors(parsed.error.issues, fields);
    const questions = checkQuestions(input.onboardingQuestions, fields);
    // A taken mention is reported together with any other problem.
    const mention = fieldSchemas.mention.safeParse(input.mention);
    if (mention.success && (await this.#mentionTaken(mention.data, null))) fields.mention = MENTION_TAKEN;
    if (!parsed.success || Object.keys(fields).length > 0) throw new BotValidationError(fields);

    const now = this.#now();
    const v = parsed.data;
    const st = { ...INITIAL_STATE, ...state };
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
      visibility: v.visibility,
      allowed_groups: JSON.stringify(v.allowedGroups),
      allowed_teams: JSON.stringify(v.allowedTeams),
      knowledge_enabled: v.knowledgeEnabled ? 1 : 0,
      guests_allowed: v.guestsAllowed ? 1 : 0,
      approval_status: st.approvalStatus,
      team_members: st.teamMembers,
      approved_version_id: st.approvedVersionId,
      pending_version_id: st.pendingVersionId,
      submitted_at: st.submittedAt,
      approved_by: st.approvedBy,
      approved_at: st.approvedAt,
      rejection_reason: st.rejectionReason,
      tester_uid: st.testerUid,
      questionnaire: st.questionnaire === null ? null : JSON.stringify(st.questionnaire),
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
    const row = await BOT_BY_ID.first(this.#db, { id });
    return row ? toBot(row) : null;
  }

  /** Case-insensitive; a leading '@' is ignored. Inactive bots are returned too. */
  async getByMention(mention: string): Promise<Bot | null> {
    const normalized = normalizeMention(mention);
    if (!MENTION_PATTERN.test(normalized)) return null;
    const row = await BOT_BY_MENTION.first(this.#db, { mention: normalized });
    return row ? toBot(row) : null;
  }

  async listActive(): Promise<Bot[]> {
    const rows = await this.#db.selectFrom('bots').selectAll().where('active', '=', 1).orderBy('mention').execute();
    return rows.map(toBot);
  }

  async listByOwner(uid: string): Promise<Bot[]> {
    const rows = await this.#db.selectFrom('bots').selectAll().where('owner_uid', '=', uid).orderBy('created_at').orderBy('id').execute();
    return rows.map(toBot);
  }

  /** Changes only the fields present in `patch`; null when the bot does not exist. */
  async update(id: string, patch: BotPatch): Promise<Bot | null> {
    if (!isObject(patch)) throw new BotValidationError({ input: 'Must be an object' });
    const existing = await this.get(id);
    if (!existing) return null;
    const fields: Record<string, string> = {};
    const parsed = patchSchema.safeParse(patch);
    if (!parsed.success) collectFieldErrors(parsed.error.issues, fields);
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
    if (v.visibility !== undefined) set.visibility = v.visibility;
    if (v.allowedGroups !== undefined) set.allowed_groups = JSON.stringify(v.allowedGroups);
    if (v.allowedTeams !== undefined) set.allowed_teams = JSON.stringify(v.allowedTeams);
    if (v.knowledgeEnabled !== undefined) set.knowledge_enabled = v.knowledgeEnabled ? 1 : 0;
    if (v.guestsAllowed !== undefined) set.guests_allowed = v.guestsAllowed ? 1 : 0;
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

  /** Sets review state; does not touch `updatedAt` (the configuration did not change). */
  async setState(id: string, state: Partial<BotState>): Promise<Bot | null> {
    const set = stateColumns(state);
    if (Object.keys(set).length > 0) await this.#db.updateTable('bots').set(set).where('id', '=', id).execute();
    return this.get(id);
  }

  async listAll(): Promise<Bot[]> {
    const rows = await this.#db.selectFrom('bots').selectAll().orderBy('mention').execute();
    return rows.map(toBot);
  }

  async listByStatus(status: ApprovalStatus): Promise<Bot[]> {
    const rows = await this.#db.selectFrom('bots').selectAll().where('approval_status', '=', status).orderBy('submitted_at').orderBy('mention').execute();
    return rows.map(toBot);
  }

  /** Whether another bot holds the mention (normalised). */
  async mentionTaken(mention: string, exceptId: string | null = null): Promise<boolean> {
    return this.#mentionTaken(normalizeMention(mention), exceptId);
  }

  /** mention → bot id of every active bot, for mention detection. */
  async activeMentions(): Promise<Map<string, string>> {
    const rows = await ACTIVE_MENTIONS.rows(this.#db, {});
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
