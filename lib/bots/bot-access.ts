// Who may use a bot, checked on every Talk turn (and for the catalogue), not only in the UI.
import type { Logger } from '../log/logger.ts';
import { issueForStoredPrincipal, isIssued, type ActingUser } from '../nextcloud/identity.ts';
import type { Bot } from './bot-store.ts';
import type { MembershipService } from './memberships.ts';
import type { UserStatus } from '../storage/tables/user-tables.ts';

export type ActorKind = 'user' | 'guest' | 'federated' | 'bot' | 'email' | 'other';

export interface BotActor {
  kind: ActorKind;
  uid: string;
  /** The verified user, when the caller has one (API requests); otherwise issued from `uid` for a verified Talk author. */
  user?: ActingUser;
}

export type BotAccessReason =
  | 'owner'
  | 'user'
  | 'tester'
  | 'global'
  | 'group'
  | 'team'
  | 'guest-not-allowed'
  | 'inactive'
  | 'not-a-person'
  | 'not-shared'
  | 'no-access'
  | 'owner-unavailable'
  | 'check-failed';

export interface BotAccessDecision {
  allowed: boolean;
  reason: BotAccessReason;
  /** Groups or teams (display names) that grant access. */
  names?: string[];
  /** Whether tools acting as the user may run: never for guests and federated users (S4). */
  userTools?: boolean;
}

export interface BotAccessPolicy {
  canUse(bot: Bot, actor: BotActor): Promise<BotAccessDecision>;
}

/**
 * Active bots serve local users. Guests, email guests and federated users are refused
 * until the per-bot "guests allowed" switch exists (S4); bots and unknown actors always are.
 */
export class DefaultBotAccessPolicy implements BotAccessPolicy {
  async canUse(bot: Bot, actor: BotActor): Promise<BotAccessDecision> {
    if (!bot.active) return { allowed: false, reason: 'inactive' };
    switch (actor.kind) {
      case 'user':
        if (actor.uid === '') return { allowed: false, reason: 'not-a-person' };
        return { allowed: true, reason: actor.uid === bot.ownerUid ? 'owner' : 'user' };
      case 'guest':
      case 'email':
      case 'federated':
        return { allowed: false, reason: 'guest-not-allowed' };
      default:
        return { allowed: false, reason: 'not-a-person' };
    }
  }
}

/**
 * Shared with others: approved, and still serving that approval while an edit
 * waits for review. (An approved row without a snapshot serves its stored
 * configuration, like upstream's legacy rows.)
 */
export function isPublished(bot: Bot): boolean {
  if (bot.visibility === 'personal') return false;
  return bot.approvalStatus === 'approved' || (bot.approvalStatus === 'pending' && bot.approvedVersionId !== null);
}

/**
 * The governed rule: the owner always; the enabled tester of a pending bot;
 * everyone for a published global bot; members of an allowed group or team
 * (memberships read as the user) for published group and team bots. Guests
 * and federated users: published global bots with "guests allowed", without
 * user tools. Drafts and personal bots serve their owner only.
 */
export class GovernanceAccessPolicy implements BotAccessPolicy {
  readonly #memberships: MembershipService;
  readonly #logger: Logger | undefined;
  readonly #ownerStatus: ((uid: string) => Promise<UserStatus>) | undefined;

  /** `ownerStatus`: S21, the bots of a disabled or deleted account stop. */
  constructor(deps: { memberships: MembershipService; logger?: Logger; ownerStatus?: (uid: string) => Promise<UserStatus> }) {
    this.#memberships = deps.memberships;
    this.#logger = deps.logger;
    this.#ownerStatus = deps.ownerStatus;
  }

  async canUse(bot: Bot, actor: BotActor): Promise<BotAccessDecision> {
    if (!bot.active) return { allowed: false, reason: 'inactive' };
    if (this.#ownerStatus && (await this.#ownerStatus(bot.ownerUid)) !== 'active') return { allowed: false, reason: 'owner-unavailable' };
    switch (actor.kind) {
      case 'user':
        break;
      case 'guest':
      case 'email':
      case 'federated':
        if (isPublished(bot) && bot.visibility === 'global' && bot.guestsAllowed) return { allowed: true, reason: 'global', userTools: false };
        return { allowed: false, reason: 'guest-not-allowed' };
      default:
        return { allowed: false, reason: 'not-a-person' };
    }
    const uid = actor.uid;
    if (uid === '' || (actor.user !== undefined && (!isIssued(actor.user) || actor.user.uid !== uid))) return { allowed: false, reason: 'not-a-person' };
    if (uid === bot.ownerUid) return { allowed: true, reason: 'owner', userTools: true };
    if (bot.approvalStatus === 'pending' && bot.testerUid === uid) return { allowed: true, reason: 'tester', userTools: true };
    if (!isPublished(bot)) return { allowed: false, reason: 'not-shared' };
    if (bot.visibility === 'global') return { allowed: true, reason: 'global', userTools: true };

    let memberships;
    try {
      // The router passes Talk-verified authors only (S3), so the uid is a confirmed principal.
      memberships = await this.#memberships.forUser(actor.user ?? issueForStoredPrincipal(uid));
    } catch (err) {
      this.#logger?.warn({ err, botId: bot.id }, 'could not read memberships; access refused');
      return { allowed: false, reason: 'check-failed' };
    }
    if (bot.visibility === 'groups') {
      const names = bot.allowedGroups.filter((g) => memberships.groups.includes(g));
      return names.length > 0 ? { allowed: true, reason: 'group', names, userTools: true } : { allowed: false, reason: 'no-access' };
    }
    if (bot.visibility === 'teams') {
      // A team published by its moderator serves its direct members only (S9).
      const teams = memberships.teams.filter((t) => bot.allowedTeams.includes(t.id) && (bot.teamMembers === 'all' || t.direct));
      return teams.length > 0
        ? { allowed: true, reason: 'team', names: teams.map((t) => t.displayName), userTools: true }
        : { allowed: false, reason: 'no-access' };
    }
    return { allowed: false, reason: 'no-access' };
  }
}
