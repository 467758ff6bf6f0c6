// The ONE place that decides as whom each tool call runs. User mode (acting = invoker) is the
// default; agent mode only when the assignment references an enabled profile granted to this bot
// or its owner, the invoker is a signed-in user in the profile's trigger groups, and the account
// check passes (S13). Nothing in the model's arguments is read here.
import type { StoredAction } from '../tools/confirmable.ts';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { issueForAgentProfile, type ActingUser } from '../nextcloud/identity.ts';
import { getUserGroups } from '../nextcloud/users.ts';
import {
  CONFIRMATION_POLICIES,
  DEFAULT_CONFIRMATION_POLICY,
  ResourceScope,
  type ConfirmationPolicy,
  type ResourceScopeInput,
} from '../tools/resource-scope.ts';
import type { ToolExecutionGate, ExecutionResolution, ExecutionCall, ExecutionAuditCall } from '../tools/tool-registry.ts';
import { deriveInvocationContext, turnOf, type ExecutionInfo, type InvocationContext } from '../tools/tool-provider.ts';
import type { AccountCheck } from './account-check.ts';
import { profileCovers } from './profile-coverage.ts';
import type { AgentProfileGrant, AgentProfileStore } from './profile-store.ts';
import type { AuditRecord } from '../tools/audit-record.ts';
import type { ToolAudit } from './tool-audit.ts';

const GROUPS_TTL_MS = 60_000;

export interface ExecutionResolverDeps {
  profiles: AgentProfileStore;
  accounts: AccountCheck;
  nextcloud: NextcloudClient;
  /** The bot's owner (grants may name the owner). */
  bots: { get(id: string): Promise<{ id: string; ownerUid: string } | null> };
  /** The bot's current assignment config of a tool (for confirmed actions). */
  assignmentConfig: (botId: string, tool: string) => Promise<Record<string, unknown> | null>;
  audit: ToolAudit;
  logger: Logger;
  now?: () => number;
}

/** How a stored confirmation was requested (kept with the pending action). */
export interface StoredExecution {
  mode: 'user' | 'agent';
  profileId: string | null;
  scope: ResourceScopeInput;
  confirmation: ConfirmationPolicy;
}

export type ConfirmedResolution = { ok: true; user: ActingUser; execution: ExecutionInfo } | { ok: false; message: string };

export function storedExecution(e: ExecutionInfo): StoredExecution {
  return { mode: e.mode, profileId: e.profileId, scope: e.scope.toJSON(), confirmation: e.confirmation };
}

function policyOf(value: unknown): ConfirmationPolicy {
  return typeof value === 'string' && (CONFIRMATION_POLICIES as readonly string[]).includes(value)
    ? (value as ConfirmationPolicy)
    : DEFAULT_CONFIRMATION_POLICY;
}

export class ExecutionResolver implements ToolExecutionGate {
  readonly #d: ExecutionResolverDeps;
  readonly #now: () => number;
  readonly #groups = new Map<string, { groups: string[]; until: number }>();

  constructor(deps: ExecutionResolverDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  async resolve(ctx: InvocationContext, call: ExecutionCall): Promise<ExecutionResolution> {
    const confirmation = policyOf(call.config['confirmation']);
    let assignmentScope: ResourceScope;
    try {
      assignmentScope = call.config['scope'] === undefined ? ResourceScope.unrestricted : new ResourceScope(call.config['scope'] as ResourceScopeInput);
    } catch {
      return { ok: false, message: "this tool's scope setting is invalid", mode: 'user', profileId: null };
    }
    const profileId = typeof call.config['agentProfile'] === 'string' ? call.config['agentProfile'] : null;
    if (profileId === null) {
      if (ctx.user === null) return { ok: true, ctx };
      return {
        ok: true,
        ctx: deriveInvocationContext(ctx, { user: ctx.user, execution: { mode: 'user', profileId: null, scope: assignmentScope, confirmation } }),
      };
    }
    const refuse = (message: string): ExecutionResolution => ({ ok: false, message, mode: 'agent', profileId });
    // S10: a reviewer's test never acts as a service account.
    if (ctx.reviewMode === true) return refuse("this tool acts through an agent profile, which a reviewer's test does not use");
    const invoker = ctx.user;
    if (invoker === null || ctx.actorKind !== 'user') return refuse('only signed-in Nextcloud users can trigger this tool');
    const profile = await this.#d.profiles.get(profileId);
    if (!profile?.enabled) return refuse("this tool's agent profile is disabled or was removed");
    if (!profileCovers(profile.toolFamilies, call.family, call.provider ?? null)) return refuse("this tool is not one of its agent profile's tool families");
    const bot = await this.#d.bots.get(ctx.botId);
    const grant = bot ? pickGrant(await this.#d.profiles.grantsFor(profileId, bot), assignmentScope) : null;
    if (!grant) return refuse('this bot is no longer allowed to use its agent profile');
    if (!(await this.#inGroups(invoker, profile.triggerGroups))) return refuse(`${invoker.uid} is not in a group that may use this bot's agent profile`);
    const account = issueForAgentProfile(profile.accountUid);
    const problem = await this.#d.accounts.atUse(account);
    if (problem) return refuse(`the agent profile cannot be used: ${problem}`);
    const scope = new ResourceScope(grant.maxScope).intersect(assignmentScope);
    return { ok: true, ctx: deriveInvocationContext(ctx, { user: account, execution: { mode: 'agent', profileId, scope, confirmation } }) };
  }

  /**
   * At "yes <code>": agent mode only if the profile is still enabled, still granted and still on
   * the assignment, the confirming user is in its confirm groups and the account check passes.
   * The action then runs as the same account, within the stored scope (and the current grant).
   */
  async resolveConfirmed(action: StoredAction, confirmer: ActingUser): Promise<ConfirmedResolution> {
    const stored = action.execution;
    let scope: ResourceScope;
    try {
      scope = stored?.['scope'] ? new ResourceScope(stored['scope'] as ResourceScopeInput) : ResourceScope.unrestricted;
    } catch {
      return { ok: false, message: 'the stored scope of this action is invalid' };
    }
    const confirmation = policyOf(stored?.['confirmation']);
    if (!stored || stored['mode'] !== 'agent') return { ok: true, user: confirmer, execution: { mode: 'user', profileId: null, scope, confirmation } };
    const profileId = typeof stored['profileId'] === 'string' ? stored['profileId'] : '';
    const profile = await this.#d.profiles.get(profileId);
    if (!profile?.enabled) return { ok: false, message: "this bot's agent profile is disabled or was removed" };
    const config = await this.#d.assignmentConfig(action.botId, action.tool);
    if (config?.['agentProfile'] !== profileId) return { ok: false, message: 'the tool no longer uses this agent profile' };
    const bot = await this.#d.bots.get(action.botId);
    const grant = bot ? pickGrant(await this.#d.profiles.grantsFor(profileId, bot), scope) : null;
    if (!grant) return { ok: false, message: 'this bot is no longer allowed to use its agent profile' };
    if (!(await this.#inGroups(confirmer, profile.confirmGroups)))
      return { ok: false, message: `${confirmer.uid} is not in a group that may confirm this agent profile's actions` };
    const account = issueForAgentProfile(profile.accountUid);
    const problem = await this.#d.accounts.atUse(account);
    if (problem) return { ok: false, message: `the agent profile cannot be used: ${problem}` };
    return { ok: true, user: account, execution: { mode: 'agent', profileId, scope: new ResourceScope(grant.maxScope).intersect(scope), confirmation } };
  }

  async audit(ctx: InvocationContext, call: ExecutionAuditCall): Promise<void> {
    const turn = turnOf(ctx);
    await this.record({
      mode: call.mode ?? ctx.execution?.mode ?? 'user',
      profileId: call.profileId !== undefined ? call.profileId : (ctx.execution?.profileId ?? null),
      invokerUid: turn.user?.uid ?? null,
      actingUid: call.outcome === 'refused' ? null : (ctx.user?.uid ?? null),
      botId: ctx.botId,
      roomToken: ctx.roomToken,
      tool: call.tool,
      args: call.args,
      outcome: call.outcome,
      detail: call.detail,
      traceId: ctx.traceId ?? null,
    });
  }

  /** Writes one audit row; a failure is logged, never thrown into a tool call. */
  async record(entry: AuditRecord): Promise<void> {
    await this.#d.audit.record(entry).catch((err: unknown) => this.#d.logger.warn({ err, tool: entry.tool }, 'could not write the tool audit'));
  }

  async #inGroups(user: ActingUser, wanted: ReadonlyArray<string>): Promise<boolean> {
    if (wanted.length === 0) return false;
    const now = this.#now();
    let hit = this.#groups.get(user.uid);
    if (!hit || hit.until <= now) {
      // Read as the user themself (test/fixtures/nextcloud29/92-ocs-users-groups.json): nobody else's view is trusted for this.
      const data = await getUserGroups(this.#d.nextcloud.as(user), user.uid).catch(() => null);
      if (data === null) return false;
      const groups = Array.isArray(data.groups) ? data.groups.filter((g): g is string => typeof g === 'string') : [];
      hit = { groups, until: now + GROUPS_TTL_MS };
      this.#groups.set(user.uid, hit);
      if (this.#groups.size > 10_000) this.#groups.clear();
    }
    return wanted.some((g) => hit.groups.includes(g));
  }
}

function pickGrant(grants: AgentProfileGrant[], scope: ResourceScope): AgentProfileGrant | null {
  return grants.find((g) => new ResourceScope(g.maxScope).covers(scope)) ?? grants[0] ?? null;
}
