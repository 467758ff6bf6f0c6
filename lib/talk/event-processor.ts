import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { issueForStoredPrincipal } from '../nextcloud/identity.ts';
import type { OnboardingService } from '../router/onboarding.ts';
import type { MessageRouter } from '../router/message-router.ts';
import type { TurnRunner } from '../conversation/turn-runner.ts';
import type { BotSender } from './bot-sender.ts';
import type { Inbox, InboxEvent } from './inbox.ts';
import type { MessageVerifier } from './message-verifier.ts';
import type { ParsedMessage } from './message-parser.ts';
import type { ReplyLog, LoggedChunk } from './reply-log.ts';
import { ReplySanitizer } from './reply-sanitizer.ts';
import { ReplyStream } from './reply-stream.ts';
import type { RoomInfo } from './room-info.ts';
import type { RoutingIndex } from './routing-index.ts';
import type { TalkIdentities } from './talk-identities.ts';

export type ProcessOutcome = 'answered' | 'ignored' | 'unverified' | 'duplicate' | 'stale';

export interface ProcessorOptions {
  /** Events older than this get a short apology instead of a stale answer. */
  maxAgeMs: number;
  /** Hosts links may point to besides Nextcloud (S8). */
  linkAllowList: () => string[];
  /** Salt of deterministic reference ids. */
  referenceSalt: string;
}

export const STALE_REPLY = "Sorry, this took too long to process. Please send your message again if you still need an answer.";

/**
 * One inbox event: confirm it with Talk (S3), claim it as handled, route it,
 * and answer it through the right Talk identity, resuming a reply that a
 * restart interrupted without repeating what was already posted.
 */
export interface ProcessorDeps {
  inbox: Inbox;
  verifier: MessageVerifier;
  router: MessageRouter;
  turns: TurnRunner;
  sender: BotSender;
  replyLog: ReplyLog;
  identities: TalkIdentities;
  onboarding: OnboardingService;
  rooms: RoomInfo;
  index: RoutingIndex;
  nextcloud: NextcloudClient;
  logger: Logger;
  now?: () => number;
  options: ProcessorOptions;
}

export class EventProcessor {
  readonly #deps: ProcessorDeps & { now: () => number };

  constructor(deps: ProcessorDeps) {
    this.#deps = { ...deps, now: deps.now ?? Date.now };
  }

  async process(event: InboxEvent): Promise<ProcessOutcome> {
    const d = this.#deps;
    const witness = await this.#roomWitness(event.roomToken);
    const verified = await d.verifier.verify(event.roomToken, event.messageId, event.actorId, witness);
    if (!verified.ok) {
      d.logger.warn({ roomToken: event.roomToken, messageId: event.messageId, reason: verified.reason }, 'Talk did not confirm the delivered message; dropped');
      return 'unverified';
    }
    if (!(await d.inbox.markHandled(event))) return 'duplicate';
    await d.identities.sawRoom(event.roomToken, event.route);

    const message = verified.message;
    const decision = await d.router.route({ message, author: verified.author });
    if (decision.kind !== 'ignore' && decision.stateChanged) await d.index.refresh();
    if (decision.kind === 'ignore') return 'ignored';

    const route = decision.bot ? await d.identities.replyRoute(event.roomToken, decision.bot.id, event.route) : event.route;
    const previous = await this.#reconcile(event, message, witness);
    const stream = new ReplyStream({
      target: { inboxId: event.id, route, roomToken: event.roomToken, replyTo: replyTarget(message), inThread: message.threadId !== null },
      sender: d.sender,
      log: d.replyLog,
      sanitizer: new ReplySanitizer({ nextcloudOrigin: d.nextcloud.baseUrl, allowedHosts: d.options.linkAllowList(), userText: mentionsAsTyped(message) }),
      salt: d.options.referenceSalt,
      now: d.now,
      previous,
    });
    const postedBefore = previous.filter((c) => c.posted);

    if (d.now() - event.receivedAt > d.options.maxAgeMs && postedBefore.length === 0) {
      await stream.post(STALE_REPLY);
      return 'stale';
    }
    if (decision.kind === 'reply') {
      if (postedBefore.length === 0) await stream.post(decision.text);
      return 'answered';
    }
    let alreadyPosted = postedBefore.map((c) => c.text).join('\n\n');
    if (decision.preface) {
      if (postedBefore.length === 0) await stream.post(decision.preface);
      else alreadyPosted = postedBefore.slice(1).map((c) => c.text).join('\n\n');
    }
    const room = verified.author ? await d.rooms.forUser(verified.author, event.roomToken) : null;
    await d.turns.run({ bot: decision.bot, message, userText: decision.userText, roomName: room?.displayName ?? '', stream, alreadyPosted });
    return 'answered';
  }

  /**
   * A chunk recorded but not confirmed as posted may or may not have reached
   * Talk before a crash: Talk's chat (read as a room member) tells, by its
   * reference id.
   */
  async #reconcile(event: InboxEvent, message: ParsedMessage, witness: string | null): Promise<LoggedChunk[]> {
    const d = this.#deps;
    const chunks = await d.replyLog.list(event.id);
    const open = chunks.filter((c) => !c.posted);
    if (open.length === 0) return chunks;
    const reader = message.actor.kind === 'user' ? message.actor.id : witness;
    let seen = new Set<string>();
    if (reader) {
      try {
        const recent = await d.nextcloud.as(issueForStoredPrincipal(reader)).ocs<Array<{ referenceId?: string }>>('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}', {
          params: { token: event.roomToken },
          query: { lookIntoFuture: 0, limit: 100, setReadMarker: 0, includeLastKnown: 0 },
        });
        seen = new Set(recent.map((m) => m.referenceId ?? '').filter(Boolean));
      } catch (err) {
        d.logger.warn({ err, roomToken: event.roomToken }, 'could not read the chat to reconcile an interrupted reply');
      }
    }
    for (const c of open) {
      if (seen.has(c.referenceId)) {
        await d.replyLog.posted(event.id, c.seq);
        c.posted = true;
      } else {
        await d.replyLog.drop(event.id, c.seq);
      }
    }
    return chunks.filter((c) => c.posted);
  }

  /** A user already verified in this room, to read the chat for guests (S4). */
  async #roomWitness(roomToken: string): Promise<string | null> {
    const states = await this.#deps.onboarding.roomStates(roomToken);
    return states[0]?.activatedBy ?? null;
  }
}

/** The first chunk replies to the user's message, or to its reply parent; inside a thread, to the message itself. */
function replyTarget(message: ParsedMessage): number | null {
  const id = message.threadId !== null ? message.messageId : (message.replyToId ?? message.messageId);
  const n = Number(id);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** The user's text with mentions as typed (`@uid`), so mentions the user wrote may be repeated (S8). */
function mentionsAsTyped(message: ParsedMessage): string {
  return message.rawText.replace(/\{(mention-[a-z]+\d+)\}/g, (whole, key: string) => {
    const p = message.parameters[key];
    if (!p || typeof p.id !== 'string') return whole;
    return /^[A-Za-z0-9_.@-]+$/.test(p.id) ? `@${p.id}` : `@"${p.id}"`;
  });
}
