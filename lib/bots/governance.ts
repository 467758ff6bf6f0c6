// Who may publish, submit, review and change a bot, and the transitions personal → draft → pending → approved.
import type { Kysely } from 'kysely';
import { LlmError } from '../llm/model-ref.ts';
import type { Logger } from '../log/logger.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { Database } from '../storage/schema.ts';
import { ToolAssignmentError, type AssignmentHooks } from '../tools/tool-assignments.ts';
import { createInvocationContext } from '../tools/tool-provider.ts';
import type { ToolAssignment, ToolRegistry } from '../tools/tool-registry.ts';
import { isPublished } from './bot-access.ts';
import { BotVersions, configOf, readTools, writeTools, type BotConfig } from './bot-config.ts';
import { botCreateSchema, botUpdateSchema, questionnaireSchema, type BotCreateBody, type BotUpdateBody } from './bot-schemas.ts';
import {
  BotStore,
  BotValidationError,
  INITIAL_STATE,
  MENTION_TAKEN,
  normalizeMention,
  type Bot,
  type BotState,
  type Questionnaire,
  type TeamMembers,
  type Visibility,
} from './bot-store.ts';
import { TEAM_MODERATOR_LEVEL, type Memberships, type MembershipService, type TeamMember } from './memberships.ts';
import type { ToolFamilyGate } from './tool-family-gate.ts';
import { collectFieldErrors } from '../validation/field-errors.ts';
import { asObject, configFields, mergeConfig, parseFields, treeFields } from './bot-input.ts';
import { ALLOW, manageRight, publishRight, reviewRight, scopeOf, type Compositions, type Right, type Scope } from './governance-rights.ts';
import { canonicalJson } from '../validation/canonical-json.ts';

export interface ToolGate {
  validate(assignments: ReadonlyArray<ToolAssignment>): { ok: true; assignments: ToolAssignment[] } | { ok: false; errors: Record<string, string> };
  writes(assignments: ReadonlyArray<ToolAssignment>, user: ActingUser): Promise<boolean>;
}

/** The registry's validation; a tool counts as writing unless its policy is read-only (unknown tools write). */
export function registryToolGate(registry: ToolRegistry): ToolGate {
  return {
    validate: (assignments) => registry.validateAssignments(assignments),
    async writes(assignments, user) {
      if (assignments.length === 0) return false;
      // S9: a bot that acts through an agent profile is never published without review.
      if (assignments.some((a) => a.config['agentProfile'] !== undefined)) return true;
      const ctx = createInvocationContext({ user, actorKind: 'user', botId: 'governance-check' });
      const loadout = await registry.loadout(ctx, assignments);
      return assignments.some((a) => loadout.policyOf(a.name)?.readOnly !== true);
    },
  };
}

/** Dedicated Talk bots of approved global bots (S14); unregistered when that stops being true. */
export interface DedicatedTalkBots {
  current(botId: string): Promise<{ route: string; name: string } | null>;
  register(bot: Bot, name?: string): Promise<{ route: string; name: string }>;
  unregister(botId: string): Promise<boolean>;
}

export class GovernanceError extends Error {
  override name = 'GovernanceError';
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export interface GovernanceDeps {
  db: Kysely<Database>;
  memberships: MembershipService;
  /** The server-side allowed-model check (ModelCatalog). */
  models: { assertAllowed(ref: string): Promise<unknown> };
  tools: ToolGate;
  /** Agent profiles on assignments: exist, enabled, granted to this bot or its owner, scope inside the grant (S13). */
  agentProfiles?: { problems(bot: { id: string | null; ownerUid: string }, tools: ToolAssignment[]): Promise<Record<string, string>> };
  /** The owner's personal choice of first-party tool families (issue 7); unset: every family. */
  toolFamilies?: ToolFamilyGate;
  dedicated?: DedicatedTalkBots;
  logger: Logger;
  now?: () => number;
}

export interface ReviewView {
  bot: Bot;
  target: BotConfig;
  isUpdate: boolean;
}

/**
 * The approval workflow. Configuration that others use is an immutable
 * snapshot (S10): editing an approved bot stores the change as a pending
 * version while the approved one keeps serving; the owner and the enabled
 * tester talk to the pending one.
 */
export class Governance {
  readonly #db: Kysely<Database>;
  readonly #bots: BotStore;
  readonly #versions: BotVersions;
  readonly #memberships: MembershipService;
  readonly #models: GovernanceDeps['models'];
  readonly #tools: ToolGate;
  readonly #toolFamilies: ToolFamilyGate | undefined;
  readonly #agentProfiles: GovernanceDeps['agentProfiles'];
  readonly #dedicated: DedicatedTalkBots | undefined;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #assignmentHooks: AssignmentHooks[] = [];

  constructor(deps: GovernanceDeps) {
    this.#db = deps.db;
    this.#now = deps.now ?? Date.now;
    this.#bots = new BotStore(deps.db, this.#now);
    this.#versions = new BotVersions(deps.db, this.#now);
    this.#memberships = deps.memberships;
    this.#models = deps.models;
    this.#tools = deps.tools;
    this.#toolFamilies = deps.toolFamilies;
    this.#agentProfiles = deps.agentProfiles;
    this.#dedicated = deps.dedicated;
    this.#logger = deps.logger;
  }

  /** The hooks ToolAssignmentStore runs (the wiki: all four tools, checked, initialised), for tools saved here too. */
  useAssignmentHooks(hooks: AssignmentHooks): void {
    this.#assignmentHooks.push(hooks);
  }

  memberships(user: ActingUser): Promise<Memberships> {
    return this.#memberships.forUser(user);
  }

  async get(botId: string): Promise<Bot | null> {
    return this.#bots.get(botId);
  }

  listOwned(uid: string): Promise<Bot[]> {
    return this.#bots.listByOwner(uid);
  }

  listActive(): Promise<Bot[]> {
    return this.#bots.listActive();
  }

  listAll(): Promise<Bot[]> {
    return this.#bots.listAll();
  }

  /** Dedicated Talk bots of bots (S14). */
  async dedicatedIdentities(): Promise<Array<{ botId: string; route: string; name: string }>> {
    const rows = await this.#db
      .selectFrom('talk_identities')
      .select(['bot_id', 'route', 'talk_name'])
      .where('bot_id', 'is not', null)
      .orderBy('route')
      .execute();
    return rows.map((r) => ({ botId: r.bot_id ?? '', route: r.route, name: r.talk_name }));
  }

  async require(botId: string): Promise<Bot> {
    const bot = await this.#bots.get(botId);
    if (!bot) throw new GovernanceError(404, 'not_found', 'Bot not found');
    return bot;
  }

  /** The approved (or working) configuration with its tools. */
  async liveConfig(bot: Bot): Promise<BotConfig> {
    if (bot.approvedVersionId !== null) {
      const approved = await this.#versions.get(bot.approvedVersionId);
      if (approved) return approved;
    }
    return configOf(bot, await readTools(this.#db, bot.id));
  }

  /** The edit waiting for review, if any. */
  async pendingConfig(bot: Bot): Promise<BotConfig | null> {
    return bot.pendingVersionId === null ? null : this.#versions.get(bot.pendingVersionId);
  }

  /** What an edit starts from, and what a review looks at: the pending version, else the working copy. */
  async workingConfig(bot: Bot): Promise<BotConfig> {
    return (await this.pendingConfig(bot)) ?? configOf(bot, await readTools(this.#db, bot.id));
  }

  /** Owner, administrator, or whoever manages the bot's current scope. */
  async canManage(user: ActingUser, bot: Bot): Promise<boolean> {
    if (bot.ownerUid === user.uid) return true;
    return manageRight(await this.#memberships.forUser(user), scopeOf(bot));
  }

  // --- create and edit ---

  async create(user: ActingUser, input: unknown): Promise<Bot> {
    const fields: Record<string, string> = {};
    const raw = asObject(input, fields);
    const given = parseFields(botCreateSchema.shape, raw, fields);
    const tree = treeFields(raw.onboardingQuestions, fields);
    const m = await this.#memberships.forUser(user);
    if (given.mention !== undefined && (await this.#bots.mentionTaken(given.mention))) fields.mention = MENTION_TAKEN;
    if (given.model !== undefined) await this.#checkModel(given.model, fields);
    const tools = given.tools !== undefined ? this.#checkTools(given.tools, fields) : [];
    if (this.#toolFamilies && tools.length > 0) Object.assign(fields, await this.#toolFamilies.problems(user.uid, tools));
    if (this.#agentProfiles && tools.length > 0) Object.assign(fields, await this.#agentProfiles.problems({ id: null, ownerUid: user.uid }, tools));
    this.#checkScope(
      {
        visibility: given.visibility ?? 'personal',
        allowedGroups: given.allowedGroups ?? [],
        allowedTeams: given.allowedTeams ?? [],
        guestsAllowed: given.guestsAllowed ?? false,
      },
      m,
      true,
      fields,
    );
    if (Object.keys(fields).length > 0) throw new BotValidationError(fields);
    const body = given as BotCreateBody;

    const scope = scopeOf({ visibility: body.visibility ?? 'personal', allowedGroups: body.allowedGroups ?? [], allowedTeams: body.allowedTeams ?? [] });
    const right = await this.#publishRight(user, m, scope, tools);
    const state: Partial<BotState> =
      scope.visibility === 'personal' ? { approvalStatus: 'personal' } : right.allowed ? { approvalStatus: 'approved' } : { approvalStatus: 'draft' };
    const now = this.#now();
    const bot = await this.#db.transaction().execute(async (trx) => {
      const store = new BotStore(trx, this.#now);
      const created = await store.create({ ...body, onboardingQuestions: tree }, user.uid, state);
      await writeTools(trx, created.id, tools, now);
      if (state.approvalStatus !== 'approved') return created;
      const versionId = await new BotVersions(trx, this.#now).insert(created.id, configOf(created, tools), user.uid);
      return (
        (await store.setState(created.id, { approvedVersionId: versionId, approvedBy: user.uid, approvedAt: now, teamMembers: right.teamMembers })) ?? created
      );
    });
    // The bot's id exists only now: the hooks run after the save, and a refusal is left to the first use (which checks again).
    await this.#prepareTools(bot.id, tools, bot).catch((err: unknown) =>
      this.#logger.warn({ err, botId: bot.id }, 'tools of a new bot not prepared; they are on first use'),
    );
    this.#logger.info({ botId: bot.id, owner: user.uid, visibility: bot.visibility, status: bot.approvalStatus }, 'bot created');
    return bot;
  }

  /** Edits by the owner, an administrator or the manager of the bot's scope. */
  async update(user: ActingUser, botId: string, patch: unknown): Promise<Bot> {
    const bot = await this.require(botId);
    if (!(await this.canManage(user, bot))) throw new GovernanceError(403, 'forbidden', 'You may not edit this bot');
    const m = await this.#memberships.forUser(user);
    const fields: Record<string, string> = {};
    const raw = asObject(patch, fields);
    const body: BotUpdateBody = parseFields(botUpdateSchema.shape, raw, fields);
    const tree = raw.onboardingQuestions !== undefined ? treeFields(raw.onboardingQuestions, fields) : undefined;
    const working = await this.workingConfig(bot);
    if (body.mention !== undefined && normalizeMention(body.mention) !== bot.mention) fields.mention = 'The mention cannot be changed after creation';
    if (body.model !== undefined) await this.#checkModel(body.model, fields);
    const tools = body.tools !== undefined ? this.#checkTools(body.tools, fields) : working.tools;
    if (this.#toolFamilies && body.tools !== undefined) {
      const had = new Set(working.tools.map((t) => t.name));
      Object.assign(
        fields,
        await this.#toolFamilies.problems(
          bot.ownerUid,
          tools.filter((t) => !had.has(t.name)),
        ),
      );
    }
    if (this.#agentProfiles && body.tools !== undefined)
      Object.assign(fields, await this.#agentProfiles.problems({ id: bot.id, ownerUid: bot.ownerUid }, tools));
    const target = mergeConfig(working, body, tools, tree);
    const widensToGlobal = target.visibility === 'global' && bot.visibility !== 'global';
    this.#checkScope(target, m, widensToGlobal, fields);
    if (Object.keys(fields).length > 0) throw new BotValidationError(fields);
    const activeChange = body.active;
    if (canonicalJson(target) === canonicalJson(working)) {
      // Nothing under review changed (e.g. only switched on or off): no new version, no review.
      if (activeChange === undefined || activeChange === bot.active) return bot;
      return (await new BotStore(this.#db, () => Math.max(this.#now(), bot.updatedAt + 1)).update(bot.id, { active: activeChange })) ?? bot;
    }

    const isOwner = user.uid === bot.ownerUid;
    const scope = scopeOf(target);
    const right = await this.#publishRight(user, m, scope, target.tools);
    const live = isPublished(bot);
    const narrowingToPersonal = scope.visibility === 'personal';
    const toPending = !narrowingToPersonal && (bot.pendingVersionId !== null || (live && (!right.allowed || isOwner)));
    const now = this.#now();
    const before = bot;
    // When the tools or the scope change, also before a review: a refused wiki location is reported now.
    if (body.tools !== undefined || body.visibility !== undefined || body.allowedTeams !== undefined) await this.#prepareTools(bot.id, target.tools, target);

    const updated = await this.#db.transaction().execute(async (trx) => {
      // updatedAt is the revision a reviewer approves (approve's `revision`): every edit moves it forward.
      const store = new BotStore(trx, () => Math.max(this.#now(), bot.updatedAt + 1));
      const versions = new BotVersions(trx, this.#now);
      if (toPending) {
        const versionId = await versions.insert(bot.id, target, user.uid);
        if (bot.pendingVersionId !== null && bot.pendingVersionId !== bot.approvedVersionId)
          await trx.deleteFrom('bot_versions').where('id', '=', bot.pendingVersionId).execute();
        await store.update(bot.id, activeChange === undefined ? {} : { active: activeChange });
        return store.setState(bot.id, { approvalStatus: 'pending', pendingVersionId: versionId });
      }
      await store.update(bot.id, { ...configFields(target), ...(activeChange === undefined ? {} : { active: activeChange }) });
      await writeTools(trx, bot.id, target.tools, now);
      if (bot.pendingVersionId !== null) await trx.deleteFrom('bot_versions').where('id', '=', bot.pendingVersionId).execute();
      if (narrowingToPersonal) return store.setState(bot.id, INITIAL_STATE);
      if (bot.approvalStatus === 'pending' && !live) return store.setState(bot.id, { pendingVersionId: null });
      if (right.allowed) {
        const fresh = await store.get(bot.id);
        const versionId = await versions.insert(bot.id, configOf(fresh ?? bot, target.tools), user.uid);
        return store.setState(bot.id, {
          approvalStatus: 'approved',
          approvedVersionId: versionId,
          pendingVersionId: null,
          approvedBy: user.uid,
          approvedAt: now,
          teamMembers: right.teamMembers,
          testerUid: null,
          rejectionReason: null,
        });
      }
      return store.setState(bot.id, { ...INITIAL_STATE, approvalStatus: 'draft' });
    });
    if (!updated) throw new GovernanceError(404, 'not_found', 'Bot not found');
    await this.#afterScopeChange(before, updated);
    this.#logger.info({ botId: bot.id, editor: user.uid, status: updated.approvalStatus, pending: updated.pendingVersionId !== null }, 'bot updated');
    return updated;
  }

  // --- review ---

  async submit(user: ActingUser, botId: string, input: unknown): Promise<Bot> {
    const bot = await this.require(botId);
    if (bot.ownerUid !== user.uid) throw new GovernanceError(403, 'forbidden', 'Only the owner can submit a bot for review');
    const parsed = questionnaireSchema.safeParse(input ?? {});
    if (!parsed.success) {
      const fields: Record<string, string> = {};
      collectFieldErrors(parsed.error.issues, fields);
      throw new BotValidationError(fields);
    }
    if (bot.approvalStatus === 'personal')
      throw new GovernanceError(409, 'not_shared', 'A personal bot needs no review: choose groups, teams or everyone first');
    if (bot.approvalStatus === 'approved') throw new GovernanceError(409, 'already_approved', 'This bot is approved; edit it to submit changes');
    const questionnaire: Questionnaire = parsed.data;
    const updated = await this.#bots.setState(bot.id, {
      approvalStatus: 'pending',
      submittedAt: this.#now(),
      questionnaire,
      rejectionReason: null,
      testerUid: null,
    });
    return updated ?? bot;
  }

  /** What a reviewer reviews, or a 403/409 explaining why this user may not. */
  async review(user: ActingUser, botId: string): Promise<ReviewView & { teamMembers: TeamMembers }> {
    const bot = await this.require(botId);
    if (bot.approvalStatus !== 'pending') throw new GovernanceError(409, 'not_pending', 'This bot is not waiting for a review');
    const target = await this.workingConfig(bot);
    const right = await this.#reviewRight(user, bot, target);
    if (!right.allowed) throw new GovernanceError(403, 'forbidden', right.reason);
    return { bot, target, isUpdate: bot.pendingVersionId !== null, teamMembers: right.teamMembers };
  }

  async approve(user: ActingUser, botId: string, options: { revision?: number } = {}): Promise<Bot> {
    const { bot, target, isUpdate, teamMembers } = await this.review(user, botId);
    if (options.revision !== undefined && options.revision !== bot.updatedAt) {
      throw new GovernanceError(409, 'changed', 'The bot changed after you looked at it; review it again');
    }
    if (isUpdate && bot.pendingVersionId !== null) await this.#prepareTools(bot.id, target.tools, target);
    const now = this.#now();
    const approved = await this.#db.transaction().execute(async (trx) => {
      const store = new BotStore(trx, this.#now);
      let versionId: number;
      if (isUpdate && bot.pendingVersionId !== null) {
        await store.update(bot.id, configFields(target));
        await writeTools(trx, bot.id, target.tools, now);
        versionId = bot.pendingVersionId;
      } else {
        versionId = await new BotVersions(trx, this.#now).insert(bot.id, target, bot.ownerUid);
      }
      return store.setState(bot.id, {
        approvalStatus: 'approved',
        approvedVersionId: versionId,
        pendingVersionId: null,
        approvedBy: user.uid,
        approvedAt: now,
        teamMembers,
        testerUid: null,
        rejectionReason: null,
      });
    });
    if (!approved) throw new GovernanceError(404, 'not_found', 'Bot not found');
    await this.#afterScopeChange(bot, approved);
    this.#logger.info({ botId: bot.id, reviewer: user.uid, update: isUpdate }, 'bot approved');
    return approved;
  }

  async reject(user: ActingUser, botId: string, reason: string): Promise<Bot> {
    const { bot, isUpdate } = await this.review(user, botId);
    const rejected = await this.#db.transaction().execute(async (trx) => {
      const store = new BotStore(trx, this.#now);
      if (isUpdate) {
        // The approved version stays; the change is discarded.
        if (bot.pendingVersionId !== null) await trx.deleteFrom('bot_versions').where('id', '=', bot.pendingVersionId).execute();
        return store.setState(bot.id, { approvalStatus: 'approved', pendingVersionId: null, rejectionReason: reason, testerUid: null });
      }
      return store.setState(bot.id, { approvalStatus: 'draft', rejectionReason: reason, testerUid: null });
    });
    if (!rejected) throw new GovernanceError(404, 'not_found', 'Bot not found');
    this.#logger.info({ botId: bot.id, reviewer: user.uid }, 'bot rejected');
    return rejected;
  }

  /** The reviewer talks to the pending version (one tester at a time, as upstream). */
  async enableTest(user: ActingUser, botId: string): Promise<Bot> {
    const { bot } = await this.review(user, botId);
    return (await this.#bots.setState(bot.id, { testerUid: user.uid })) ?? bot;
  }

  /** Pending bots this user may review. */
  async pendingFor(user: ActingUser): Promise<ReviewView[]> {
    const out: ReviewView[] = [];
    for (const bot of await this.#bots.listByStatus('pending')) {
      const target = await this.workingConfig(bot);
      if ((await this.#reviewRight(user, bot, target)).allowed) out.push({ bot, target, isUpdate: bot.pendingVersionId !== null });
    }
    return out;
  }

  async permissions(
    user: ActingUser,
  ): Promise<{
    isAdmin: boolean;
    isGroupAdmin: boolean;
    isTeamAdmin: boolean;
    hasApprovalRights: boolean;
    adminGroups: string[];
    adminTeams: Array<{ id: string; displayName: string }>;
    visibilities: Array<{ value: Visibility; label: string; requiresApproval: boolean }>;
  }> {
    const m = await this.#memberships.forUser(user);
    const adminTeams = m.teams.filter((t) => t.level >= TEAM_MODERATOR_LEVEL).map((t) => ({ id: t.id, displayName: t.displayName }));
    const isGroupAdmin = m.subAdminGroups.length > 0;
    const isTeamAdmin = adminTeams.length > 0;
    const visibilities: Array<{ value: Visibility; label: string; requiresApproval: boolean }> = [
      { value: 'personal', label: 'Only me', requiresApproval: false },
      { value: 'groups', label: 'Groups', requiresApproval: !m.isAdmin && !isGroupAdmin },
      { value: 'teams', label: 'Teams', requiresApproval: !m.isAdmin && !isTeamAdmin },
    ];
    if (m.isAdmin) visibilities.push({ value: 'global', label: 'Everyone', requiresApproval: false });
    return {
      isAdmin: m.isAdmin,
      isGroupAdmin,
      isTeamAdmin,
      hasApprovalRights: m.isAdmin || isGroupAdmin || isTeamAdmin,
      adminGroups: [...m.subAdminGroups],
      adminTeams,
      visibilities,
    };
  }

  // --- helpers ---

  async #publishRight(user: ActingUser, m: Memberships, scope: Scope, tools: ToolAssignment[]): Promise<Right> {
    if (scope.visibility === 'personal') return ALLOW;
    const writes = await this.#tools.writes(tools, user);
    return publishRight(m, scope, await this.#compositions(user, m, scope), { writes });
  }

  async #reviewRight(user: ActingUser, bot: Bot, target: BotConfig): Promise<Right> {
    const m = await this.#memberships.forUser(user);
    const scope = scopeOf(target);
    const writes = scope.visibility === 'personal' ? false : await this.#tools.writes(target.tools, user);
    return reviewRight(m, scope, await this.#compositions(user, m, scope), { writes, isOwner: bot.ownerUid === user.uid });
  }

  async #compositions(user: ActingUser, m: Memberships, scope: Scope): Promise<Compositions> {
    const out = new Map<string, TeamMember[] | null>();
    if (scope.visibility !== 'teams' || m.isAdmin) return out;
    for (const teamId of scope.teams) out.set(teamId, await this.#memberships.teamMembers(user, teamId));
    return out;
  }

  async #checkModel(model: string | null, fields: Record<string, string>): Promise<void> {
    if (model === null) return;
    try {
      await this.#models.assertAllowed(model);
    } catch (err) {
      if (err instanceof LlmError) fields.model = err.code === 'model_not_allowed' ? 'This model is not allowed; choose one from the list' : err.publicMessage;
      else throw err;
    }
  }

  #checkTools(tools: ReadonlyArray<{ name: string; config?: Record<string, unknown> }>, fields: Record<string, string>): ToolAssignment[] {
    let given: ToolAssignment[] = tools.map((t) => ({ name: t.name, config: t.config ?? {} }));
    for (const h of this.#assignmentHooks) if (h.expand) given = h.expand(given);
    const result = this.#tools.validate(given);
    if (result.ok) return result.assignments;
    for (const [key, message] of Object.entries(result.errors)) fields[`tools.${key}`] = message;
    return [];
  }

  /** Runs the assignment hooks before tools go live with `scope`; a refusal is an error on the tools field. */
  async #prepareTools(botId: string, tools: ToolAssignment[], scope: { visibility: string; allowedTeams: string[] }): Promise<void> {
    try {
      for (const h of this.#assignmentHooks) await h.beforeSave?.(botId, tools, { visibility: scope.visibility, allowedTeams: scope.allowedTeams });
    } catch (err) {
      if (err instanceof ToolAssignmentError) throw new BotValidationError({ tools: err.message });
      throw err;
    }
  }

  #checkScope(
    c: { visibility: Visibility; allowedGroups: string[]; allowedTeams: string[]; guestsAllowed: boolean },
    m: Memberships,
    checkGlobal: boolean,
    fields: Record<string, string>,
  ): void {
    if (c.visibility === 'groups' && c.allowedGroups.length === 0) fields.allowedGroups ??= 'Choose at least one group';
    if (c.visibility === 'teams' && c.allowedTeams.length === 0) fields.allowedTeams ??= 'Choose at least one team';
    if (c.visibility === 'global' && checkGlobal && !m.isAdmin) fields.visibility ??= 'Only administrators can make a bot available to everyone';
    if (c.guestsAllowed && c.visibility !== 'global') fields.guestsAllowed ??= 'Only bots available to everyone can allow guests';
  }

  /** A bot that is no longer approved for everyone loses its own Talk bot (S14). */
  async #afterScopeChange(before: Bot, after: Bot): Promise<void> {
    if (!this.#dedicated) return;
    const stillGlobal = isPublished(after) && after.visibility === 'global';
    if (stillGlobal) return;
    const wasGlobal = isPublished(before) && before.visibility === 'global';
    if (!wasGlobal && !(await this.#dedicated.current(after.id))) return;
    try {
      await this.#dedicated.unregister(after.id);
    } catch (err) {
      this.#logger.warn({ err, botId: after.id }, 'could not unregister the dedicated Talk bot');
    }
  }
}
