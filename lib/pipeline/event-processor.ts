import type { BotAccessPolicy } from '../bots/bot-access.ts';
import type { Bot, BotStore } from '../bots/bot-store.ts';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import { readChatHistory } from '../nextcloud/talk.ts';
import type { QueuedTurnHandler, ReplayOutcome } from '../ratelimit/queue-processor.ts';
import type { QueuedRequest } from '../ratelimit/request-queue.ts';
import type { OnboardingService } from '../router/onboarding.ts';
import type { MessageRouter } from '../router/message-router.ts';
import type { QueuedTurnPayload, TurnRunner } from './turn-runner.ts';
import type { MessageSender } from '../replies/bot-sender.ts';
import type { Inbox, InboxEvent } from '../intake/inbox.ts';
import type { MessageVerifier, VerificationResult } from '../talk/message-verifier.ts';
import type { ParsedMessage } from '../talk/message-parser.ts';
import type { LoggedChunk, ReplyRecord } from '../replies/reply-log.ts';
import { ReplySanitizer } from '../replies/reply-sanitizer.ts';
import { ReplyStream, type ReplyTarget } from '../replies/reply-stream.ts';
import { talkTexts } from '../replies/talk-texts.ts';
import type { RoomFactsSource } from '../talk/room-info.ts';
import type { RoutingIndex } from '../talk/routing-index.ts';
import type { TalkIdentities } from '../talk/talk-identities.ts';
import type { ConfirmationService } from '../confirmations/confirmation-service.ts';
import { talkLanguageOf, withTalkLanguage, type TalkLanguage } from '../l10n/talk-language.ts';
import type { UserLanguages } from '../users/user-languages.ts';

export type ProcessOutcome = 'answered' | 'ignored' | 'unverified' | 'duplicate' | 'stale';

export interface ProcessorOptions {
  /** Events older than this get a short apology instead of a stale answer. */
  maxAgeMs: number;
  /** Hosts links may point to besides Nextcloud (S8). */
  linkAllowList: () => string[];
  /** Salt of deterministic reference ids. */
  referenceSalt: string;
}

export { STALE_REPLY } from '../replies/talk-texts.ts';

/**
 * One inbox event: confirm it with Talk (S3), claim it as handled, route it,
 * and answer it through the right Talk identity, resuming a reply that a
 * restart interrupted without repeating what was already posted.
 */
export interface ProcessorDeps {
  /** Server-recorded confirmations (S7): a reply like "yes 4821" is handled before normal routing. */
  confirmations?: ConfirmationService;
  /** Only its handled-message record is used here. */
  inbox: Pick<Inbox, 'markHandled'>;
  verifier: Pick<MessageVerifier, 'verify'>;
  router: MessageRouter;
  turns: TurnRunner;
  sender: MessageSender;
  replyLog: ReplyRecord;
  identities: TalkIdentities;
  onboarding: OnboardingService;
  rooms: RoomFactsSource;
  index: RoutingIndex;
  nextcloud: NextcloudClient;
  logger: Logger;
  now?: () => number;
  options: ProcessorOptions;
  /** For replaying queued turns: the bot must still exist, be active and usable by the user. */
  bots?: BotStore;
  /** S14: a delivery to a bot's own Talk identity reaches only that bot (checked before the dedupe key). */
  identityGate?: {
    check(
      route: string,
      message: ParsedMessage,
      author: ActingUser | null,
    ): Promise<{ allowed: true; botId: string | null } | { allowed: false; reason: string; answerAs: string | null }>;
  };
  /** Documents and images of a turn's message, queued for the bot's room search (knowledge); never awaited past the enqueue. */
  uploads?: { onTurn(bot: Bot, message: ParsedMessage, author: ActingUser | null): Promise<void> };
  access?: BotAccessPolicy;
  /** The author's Nextcloud language, for the fixed texts of a turn (English when absent). */
  languages?: Pick<UserLanguages, 'of'>;
}

export class EventProcessor implements QueuedTurnHandler {
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
    let gate = d.identityGate ? await d.identityGate.check(event.route, verified.message, verified.author) : null;
    // The shared Talk bot delivers this message too: answer it now as that delivery (its own row then finds it handled).
    if (gate && !gate.allowed && gate.answerAs !== null) {
      event = { ...event, route: gate.answerAs };
      gate = { allowed: true, botId: null };
    }
    if (gate && !gate.allowed) return 'ignored';
    if (!(await d.inbox.markHandled(event))) return 'duplicate';
    await d.identities.sawRoom(event.roomToken, event.route);
    // Fixed texts of this turn (onboarding, refusals, errors) in the author's Nextcloud language.
    const language = await this.#languageOf(verified.author);
    const onlyBot = gate?.allowed ? gate.botId : null;
    return withTalkLanguage(language, () => this.#handle(event, verified, witness, onlyBot));
  }

  /** `onlyBot`: the delivery came through this bot's own Talk identity, so only it may answer (S14). */
  async #handle(
    event: InboxEvent,
    verified: Extract<VerificationResult, { ok: true }>,
    witness: string | null,
    onlyBot: string | null,
  ): Promise<ProcessOutcome> {
    const d = this.#deps;
    const message = verified.message;
    if (d.confirmations) {
      const confirmed = await d.confirmations.handleReply(message, { author: verified.author, deliveredType: event.payload.type });
      if (confirmed.handled) {
        const route = confirmed.botId ? await d.identities.replyRoute(event.roomToken, confirmed.botId, event.route) : event.route;
        const previous = await this.#reconcile(event.id, event.roomToken, message, witness);
        const speaker = confirmed.botId ? await this.#speaker(event.roomToken, d.bots ? await d.bots.get(confirmed.botId) : null, route) : null;
        const target = targetFor(event, route, message, d.identities, speaker);
        if (previous.every((c) => !c.posted) && confirmed.reply) await this.#stream(target, message, previous).post(confirmed.reply);
        return 'answered';
      }
    }
    const decision = await d.router.route({ message, author: verified.author });
    if (decision.kind !== 'ignore' && decision.stateChanged) await d.index.refresh();
    if (decision.kind === 'ignore') return 'ignored';
    if (onlyBot !== null && decision.bot !== null && decision.bot.id !== onlyBot) return 'ignored';

    const route = decision.bot ? await d.identities.replyRoute(event.roomToken, decision.bot.id, event.route) : event.route;
    const previous = await this.#reconcile(event.id, event.roomToken, message, witness);
    const target = targetFor(event, route, message, d.identities, await this.#speaker(event.roomToken, decision.bot, route));
    const stream = this.#stream(target, message, previous);
    const postedBefore = previous.filter((c) => c.posted);

    if (d.now() - event.receivedAt > d.options.maxAgeMs && postedBefore.length === 0) {
      await stream.post(talkTexts().staleReply);
      return 'stale';
    }
    if (decision.kind === 'reply') {
      if (postedBefore.length === 0) await stream.post(decision.text);
      return 'answered';
    }
    let alreadyPosted = postedBefore.map((c) => c.text).join('\n\n');
    if (decision.preface) {
      if (postedBefore.length === 0) await stream.post(decision.preface);
      else
        alreadyPosted = postedBefore
          .slice(1)
          .map((c) => c.text)
          .join('\n\n');
    }
    // Queued before the turn, so the room search tools can wait for this message's uploads.
    if (d.uploads && message.attachments.length > 0) await d.uploads.onTurn(decision.bot, message, verified.author);
    const room = verified.author ? await d.rooms.forUser(verified.author, event.roomToken) : null;
    await d.turns.run({
      bot: decision.bot,
      message,
      author: verified.author,
      userText: decision.userText,
      roomName: room?.displayName ?? '',
      stream,
      alreadyPosted,
      addressed: decision.addressed,
      reply: { route, replyTo: target.replyTo, inThread: target.inThread },
      untrusted: stream.sanitizer,
    });
    return 'answered';
  }

  /**
   * A turn that waited in the rate-limit queue. The message is the copy Talk
   * confirmed when it arrived; the author is the uid recorded then. Replies go
   * to the stored target, logged under the negative queue id so a crash mid-reply
   * resumes without repeating.
   */
  async replay(request: QueuedRequest): Promise<ReplayOutcome> {
    const d = this.#deps;
    const payload = queuedPayload(request.inboxPayload);
    if (payload === null) throw new Error('queued request without a readable payload');
    const bot = d.bots ? await d.bots.get(request.botId) : null;
    if (!bot || !bot.active) return { kind: 'gone' };
    const message = payload.message;
    if (d.access && !(await d.access.canUse(bot, { kind: message.actor.kind, uid: message.actor.id })).allowed) return { kind: 'gone' };
    const author = storedAuthor(request, message);
    return withTalkLanguage(await this.#languageOf(author), () => this.#replay(request, bot, payload, author));
  }

  async #replay(request: QueuedRequest, bot: Bot, payload: QueuedTurnPayload, author: ActingUser | null): Promise<ReplayOutcome> {
    const d = this.#deps;
    const message = payload.message;
    const replyId = -request.id;
    const witness = await this.#roomWitness(request.roomToken);
    const previous = await this.#reconcile(replyId, request.roomToken, message, witness);
    const replyTo = request.replyTo !== null && /^\d+$/.test(request.replyTo) ? Number(request.replyTo) : null;
    const speaker = await this.#speaker(request.roomToken, bot, request.route);
    const target: ReplyTarget = {
      inboxId: replyId,
      route: request.route,
      roomToken: request.roomToken,
      replyTo,
      inThread: payload.inThread,
      ...(speaker ? { speaker } : {}),
    };
    const stream = this.#stream(target, message, previous);
    const postedBefore = previous.filter((c) => c.posted).map((c) => c.text);
    const alreadyPosted = [payload.alreadyPosted, ...postedBefore].filter((t) => t !== '').join('\n\n');
    const result = await d.turns.run({
      bot,
      message,
      author,
      userText: payload.userText,
      roomName: payload.roomName,
      stream,
      alreadyPosted,
      addressed: payload.addressed,
      reply: { route: request.route, replyTo, inThread: payload.inThread },
      replay: { queueId: request.id },
      untrusted: stream.sanitizer,
    });
    if (result.status === 'deferred') return { kind: 'deferred', retryAfterMs: result.retryAfterMs ?? 1000, level: result.level ?? 'instance' };
    if (result.status === 'error' && result.retryable) return { kind: 'retry', reason: 'the answer failed before anything was posted' };
    await this.#forgetReply(replyId);
    return { kind: 'answered' };
  }

  /** A notice about a queued request (expired, failed, bot gone), posted to its room. */
  async tell(request: QueuedRequest, text: () => string): Promise<void> {
    const payload = queuedPayload(request.inboxPayload);
    const author = payload ? storedAuthor(request, payload.message) : null;
    await withTalkLanguage(await this.#languageOf(author), () => this.#tell(request, payload, text()));
  }

  /**
   * The name an answer through the shared identity starts with when several of our bots are in the
   * room (they share "Talk AI"); null for a bot's own Talk identity, which is its name already, and
   * for a room with one bot. A room's bots are those with an onboarding state there (room_states).
   */
  async #speaker(roomToken: string, bot: Bot | null, route: string): Promise<string | null> {
    const d = this.#deps;
    if (!bot || (await d.identities.botFor(route)) !== null) return null;
    const others = new Set((await d.onboarding.roomStates(roomToken)).map((s) => s.botId).filter((id) => id !== bot.id));
    for (const id of others) {
      if (!d.bots || (await d.bots.get(id))?.active) return bot.displayName;
    }
    return null;
  }

  /** The language of the fixed texts written to `author` (English without one). */
  async #languageOf(author: ActingUser | null): Promise<TalkLanguage> {
    const languages = this.#deps.languages;
    return talkLanguageOf(author && languages ? await languages.of(author) : null);
  }

  async #tell(request: QueuedRequest, payload: QueuedTurnPayload | null, text: string): Promise<void> {
    const replyId = -request.id;
    const replyTo = request.replyTo !== null && /^\d+$/.test(request.replyTo) ? Number(request.replyTo) : null;
    const previous = await this.#deps.replyLog.list(replyId);
    const stream = this.#stream(
      { inboxId: replyId, route: request.route, roomToken: request.roomToken, replyTo, inThread: payload?.inThread ?? false },
      payload?.message ?? null,
      previous,
    );
    await stream.post(text);
    await this.#forgetReply(replyId);
  }

  #stream(target: ReplyTarget, message: ParsedMessage | null, previous: LoggedChunk[]): ReplyStream & { sanitizer: ReplySanitizer } {
    const d = this.#deps;
    const sanitizer = new ReplySanitizer({
      nextcloudOrigin: d.nextcloud.baseUrl,
      allowedHosts: d.options.linkAllowList(),
      userText: message ? mentionsAsTyped(message) : '',
    });
    const stream = new ReplyStream({ target, sender: d.sender, log: d.replyLog, sanitizer, salt: d.options.referenceSalt, now: d.now, previous });
    return Object.assign(stream, { sanitizer });
  }

  async #forgetReply(replyId: number): Promise<void> {
    for (const c of await this.#deps.replyLog.list(replyId)) await this.#deps.replyLog.drop(replyId, c.seq);
  }

  /**
   * A chunk recorded but not confirmed as posted may or may not have reached
   * Talk before a crash: Talk's chat (read as a room member) tells, by its
   * reference id.
   */
  async #reconcile(replyId: number, roomToken: string, message: ParsedMessage, witness: string | null): Promise<LoggedChunk[]> {
    const d = this.#deps;
    const chunks = await d.replyLog.list(replyId);
    const open = chunks.filter((c) => !c.posted);
    if (open.length === 0) return chunks;
    const reader = message.actor.kind === 'user' ? message.actor.id : witness;
    let seen = new Set<string>();
    if (reader) {
      try {
        const recent = await readChatHistory<{ referenceId?: string }>(d.nextcloud.as(issueForStoredPrincipal(reader)), roomToken, {
          lookIntoFuture: 0,
          limit: 100,
          setReadMarker: 0,
          includeLastKnown: 0,
        });
        seen = new Set(recent.map((m) => m.referenceId ?? '').filter(Boolean));
      } catch (err) {
        d.logger.warn({ err, roomToken }, 'could not read the chat to reconcile an interrupted reply');
      }
    }
    for (const c of open) {
      if (seen.has(c.referenceId)) {
        await d.replyLog.posted(replyId, c.seq);
        c.posted = true;
      } else {
        await d.replyLog.drop(replyId, c.seq);
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

function queuedPayload(value: unknown): QueuedTurnPayload | null {
  if (value === null || typeof value !== 'object') return null;
  const p = value as Partial<QueuedTurnPayload>;
  if (p.v !== 1 || !p.message || typeof p.message !== 'object' || typeof p.userText !== 'string') return null;
  return {
    v: 1,
    message: p.message,
    userText: p.userText,
    roomName: typeof p.roomName === 'string' ? p.roomName : '',
    alreadyPosted: typeof p.alreadyPosted === 'string' ? p.alreadyPosted : '',
    addressed: p.addressed !== false,
    inThread: p.inThread === true,
  };
}

/** The user a queued request was recorded for, when the stored message is still theirs. */
function storedAuthor(request: QueuedRequest, message: ParsedMessage): ActingUser | null {
  return request.uid !== null && message.actor.kind === 'user' && message.actor.id === request.uid ? issueForStoredPrincipal(request.uid) : null;
}

/** Where the answer to an inbox event goes. */
function targetFor(
  event: InboxEvent,
  route: string,
  message: ParsedMessage,
  identities: Pick<TalkIdentities, 'forgetRoom'>,
  speaker: string | null,
): ReplyTarget {
  const target: ReplyTarget = {
    inboxId: event.id,
    route,
    roomToken: event.roomToken,
    replyTo: replyTarget(message),
    inThread: message.threadId !== null,
    ...(speaker ? { speaker } : {}),
  };
  if (route !== event.route) target.fallback = { route: event.route, forget: () => identities.forgetRoom(event.roomToken, route) };
  return target;
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
