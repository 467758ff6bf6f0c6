// A bot's whole reviewable configuration as one immutable snapshot (S10), and which snapshot a turn runs against.
import type { Kysely } from 'kysely';
import type { QuestionTree } from './question-tree.ts';
import type { Database } from '../storage/schema.ts';
import type { ToolAssignment } from '../tools/tool-registry.ts';
import { ToolAssignmentStore } from '../tools/tool-assignments.ts';
import { withToolTables } from '../storage/tables/tool-tables.ts';
import type { BotActor } from './bot-access.ts';
import type { Bot, Visibility } from './bot-store.ts';

/** Everything a review covers. The mention is fixed, and `active` is an on/off switch outside review. */
export interface BotConfig {
  displayName: string;
  description: string;
  systemPrompt: string;
  model: string | null;
  temperature: number | null;
  visibility: Visibility;
  allowedGroups: string[];
  allowedTeams: string[];
  knowledgeEnabled: boolean;
  guestsAllowed: boolean;
  onboardingQuestions: QuestionTree | null;
  tools: ToolAssignment[];
}

/** The bot a turn runs: one snapshot's configuration and the tools that go with it. */
export interface EffectiveBot extends Bot {
  tools: ToolAssignment[];
  /** The bot_versions row it came from; null for the working copy of an unpublished bot. */
  versionId: number | null;
  /** The configuration waiting for review (owner or tester). */
  pending: boolean;
  /**
   * The tester (not the owner) is reviewing: no agent profile, and tools that
   * are not read-only run as dry runs (the call is shown, not executed; S10).
   */
  reviewMode: boolean;
}

export function configOf(bot: Bot, tools: ToolAssignment[]): BotConfig {
  return {
    displayName: bot.displayName,
    description: bot.description,
    systemPrompt: bot.systemPrompt,
    model: bot.model,
    temperature: bot.temperature,
    visibility: bot.visibility,
    allowedGroups: [...bot.allowedGroups],
    allowedTeams: [...bot.allowedTeams],
    knowledgeEnabled: bot.knowledgeEnabled,
    guestsAllowed: bot.guestsAllowed,
    onboardingQuestions: bot.onboardingQuestions,
    tools: tools.map((t) => ({ name: t.name, config: { ...t.config } })),
  };
}

/** The bot as this configuration describes it (identity and review state stay the bot's). */
export function withConfig(bot: Bot, config: BotConfig): Bot {
  return {
    ...bot,
    displayName: config.displayName,
    description: config.description,
    systemPrompt: config.systemPrompt,
    model: config.model,
    temperature: config.temperature,
    visibility: config.visibility,
    allowedGroups: [...config.allowedGroups],
    allowedTeams: [...config.allowedTeams],
    knowledgeEnabled: config.knowledgeEnabled,
    guestsAllowed: config.guestsAllowed,
    onboardingQuestions: config.onboardingQuestions,
  };
}

function parseConfig(text: string): BotConfig {
  const v = JSON.parse(text) as BotConfig;
  return { ...v, allowedGroups: v.allowedGroups ?? [], allowedTeams: v.allowedTeams ?? [], tools: v.tools ?? [] };
}

/** Stored snapshots. Rows are inserted and deleted, never updated. */
export class BotVersions {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async insert(botId: string, config: BotConfig, createdBy: string): Promise<number> {
    const row = await this.#db
      .insertInto('bot_versions')
      .values({ bot_id: botId, config: JSON.stringify(config), created_by: createdBy, created_at: this.#now() })
      .returning('id')
      .executeTakeFirstOrThrow();
    return Number(row.id);
  }

  async get(id: number): Promise<BotConfig | null> {
    const row = await this.#db.selectFrom('bot_versions').select('config').where('id', '=', id).executeTakeFirst();
    return row ? parseConfig(row.config) : null;
  }

  async removeBot(botId: string): Promise<number> {
    const r = await this.#db.deleteFrom('bot_versions').where('bot_id', '=', botId).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}

/** Tool assignments read inside the caller's transaction (ToolAssignmentStore opens its own). */
export async function readTools(db: Kysely<Database>, botId: string): Promise<ToolAssignment[]> {
  const rows = await withToolTables(db)
    .selectFrom('bot_tools')
    .select(['tool_name', 'config'])
    .where('bot_id', '=', botId)
    .orderBy('position')
    .orderBy('tool_name')
    .execute();
  return rows.map((r) => {
    let config: Record<string, unknown> = {};
    try {
      const v: unknown = JSON.parse(r.config);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) config = v as Record<string, unknown>;
    } catch {
      // An unreadable config counts as empty.
    }
    return { name: r.tool_name, config };
  });
}

/** Replaces a bot's tool rows inside the caller's transaction; assignments were validated before. */
export async function writeTools(db: Kysely<Database>, botId: string, tools: ReadonlyArray<ToolAssignment>, now: number): Promise<void> {
  const t = withToolTables(db);
  await t.deleteFrom('bot_tools').where('bot_id', '=', botId).execute();
  const seen = new Set<string>();
  const rows = [];
  for (const a of tools) {
    if (seen.has(a.name)) continue;
    seen.add(a.name);
    rows.push({ bot_id: botId, tool_name: a.name, config: JSON.stringify(a.config ?? {}), position: rows.length, created_at: now });
  }
  if (rows.length > 0) await t.insertInto('bot_tools').values(rows).execute();
}

/** S10: every turn is a reviewer's test (the terminal playground's REVIEW=1): no agent profile, writes are dry runs. */
export function asReviewer(resolver: BotConfigResolver): Pick<BotConfigResolver, 'effectiveBot'> {
  return { effectiveBot: async (bot, actor) => ({ ...(await resolver.effectiveBot(bot, actor)), reviewMode: true }) };
}

/**
 * Which configuration a turn runs against. Everyone gets the approved
 * snapshot; the owner and the enabled tester get the version waiting for
 * review. Guests and other non-users never get tools (S4).
 */
export class BotConfigResolver {
  readonly #versions: BotVersions;
  readonly #tools: ToolAssignmentStore;

  constructor(db: Kysely<Database>) {
    this.#versions = new BotVersions(db);
    this.#tools = new ToolAssignmentStore(db);
  }

  /** `actor` is a local user's uid, or the message's actor. */
  async effectiveBot(bot: Bot, actor: string | BotActor): Promise<EffectiveBot> {
    const person = typeof actor === 'string' ? { kind: 'user' as const, uid: actor } : actor;
    const localUser = person.kind === 'user' && person.uid !== '';
    const isOwner = localUser && person.uid === bot.ownerUid;
    const isTester = localUser && bot.testerUid !== null && person.uid === bot.testerUid;

    let result: EffectiveBot;
    const pendingId = bot.pendingVersionId;
    const pending = pendingId !== null && (isOwner || isTester) ? await this.#versions.get(pendingId) : null;
    const approved = pending === null && bot.approvedVersionId !== null ? await this.#versions.get(bot.approvedVersionId) : null;
    if (pending && pendingId !== null) {
      result = { ...withConfig(bot, pending), tools: pending.tools, versionId: pendingId, pending: true, reviewMode: isTester && !isOwner };
    } else if (approved && bot.approvedVersionId !== null) {
      result = { ...withConfig(bot, approved), tools: approved.tools, versionId: bot.approvedVersionId, pending: false, reviewMode: false };
    } else {
      // Never approved: the working copy. Only its owner and tester can reach it (see the access policy).
      const initialReview = bot.approvalStatus === 'pending' && isTester && !isOwner;
      result = { ...bot, tools: await this.#tools.list(bot.id), versionId: null, pending: bot.approvalStatus === 'pending', reviewMode: initialReview };
    }
    if (!localUser) result = { ...result, tools: [] };
    return result;
  }
}
