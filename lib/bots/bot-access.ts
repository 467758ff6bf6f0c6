// Who may use a bot. The governance feature (scopes, guests allowed, review) replaces the default policy.
import type { Bot } from './bot-store.ts';

export type ActorKind = 'user' | 'guest' | 'federated' | 'bot' | 'email' | 'other';

export interface BotActor {
  kind: ActorKind;
  uid: string;
}

export type BotAccessReason = 'owner' | 'user' | 'guest-not-allowed' | 'inactive' | 'not-a-person';

export interface BotAccessDecision {
  allowed: boolean;
  reason: BotAccessReason;
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
