// S14: a delivery to a bot's own Talk identity goes only to that bot. Checked after Talk confirmed the
// message and BEFORE it is marked handled, so that a message for another bot stays free for the shared
// Talk bot's delivery of the same message (a room with both enabled gets exactly one answer).
import { mayHaveOwnIdentity } from '../bots/dedicated-talk-bots.ts';
import type { BotStore } from '../bots/bot-store.ts';
import type { Logger } from '../log/logger.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ParsedMessage } from '../talk/message-parser.ts';
import { SHARED_ROUTE, type TalkIdentities } from '../talk/talk-identities.ts';
import type { RouteInput } from './message-router.ts';

export interface Addressee {
  /** Which bot a message is for, without changing any state (see MessageRouter.addressee). */
  addressee(input: RouteInput): Promise<string | null>;
}

/**
 * Refused: `answerAs` is the shared route when the shared Talk bot is known to be enabled in the room. Talk
 * then delivered the same message to it too, so it is answered at once as that delivery (also covering rows
 * queued before the inbox kept one row per route); the shared row, when it follows, finds it handled.
 */
export type GateVerdict = { allowed: true; botId: string | null } | { allowed: false; reason: string; answerAs: string | null };

export class IdentityGate {
  readonly #identities: TalkIdentities;
  readonly #bots: BotStore;
  readonly #router: Addressee;
  readonly #logger: Logger;

  constructor(deps: { identities: TalkIdentities; bots: BotStore; router: Addressee; logger: Logger }) {
    this.#identities = deps.identities;
    this.#bots = deps.bots;
    this.#router = deps.router;
    this.#logger = deps.logger;
  }

  /**
   * Whether a verified delivery through `route` may be processed; `botId` is the only bot it may reach
   * (null: the shared identity, any bot). A dedicated identity speaks only for an active bot approved for
   * everyone; a narrowed or switched-off bot's identity stays silent.
   */
  async check(route: string, message: ParsedMessage, author: ActingUser | null): Promise<GateVerdict> {
    if (route === SHARED_ROUTE) return { allowed: true, botId: null };
    const botId = await this.#identities.botFor(route);
    if (botId === null) return this.#deny(route, message, 'no bot owns this Talk identity', null);
    // The room has this identity enabled, whoever the message is for: replies of its bot go out through it.
    await this.#identities.sawRoom(message.roomToken, route);
    const bot = await this.#bots.get(botId);
    if (!mayHaveOwnIdentity(bot)) return this.#deny(route, message, 'the bot is not active for everyone', await this.#sharedRoute(message.roomToken));
    // System events (a deleted message) purge memory for the whole room, through whichever identity delivers them.
    if (message.kind === 'system') return { allowed: true, botId };
    const target = await this.#router.addressee({ message, author });
    if (target !== botId) return this.#deny(route, message, 'the message is for another bot', await this.#sharedRoute(message.roomToken));
    return { allowed: true, botId };
  }

  async #sharedRoute(roomToken: string): Promise<string | null> {
    return (await this.#identities.seenIn(roomToken, SHARED_ROUTE)) ? SHARED_ROUTE : null;
  }

  #deny(route: string, message: ParsedMessage, reason: string, answerAs: string | null): GateVerdict {
    this.#logger.debug({ route, roomToken: message.roomToken, messageId: message.messageId, reason, answerAs }, 'delivery not for this Talk identity');
    return { allowed: false, reason, answerAs };
  }
}
