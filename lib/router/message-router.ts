import type { BotAccessPolicy } from '../bots/bot-access.ts';
import type { Bot, BotStore } from '../bots/bot-store.ts';
import type { ConversationMemory } from '../conversation/memory.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { renderMessageText, type ParsedMessage } from '../talk/message-parser.ts';
import { RoomInfo, type RoomFacts, type RoomFactsSource } from '../talk/room-info.ts';
import { findBotMentions, stripMention } from '../talk/mention-detector.ts';
import type { OnboardingService } from './onboarding.ts';
import { parseResetCommand } from './reset-command.ts';
import { routerTexts } from './router-texts.ts';

export type Decision =
  | { kind: 'ignore'; reason: string }
  /** A fixed answer (refusals, onboarding questions, reset confirmations); no model runs. */
  | { kind: 'reply'; bot: Bot | null; text: string; stateChanged: boolean }
  /** Run the bot on `userText`; `preface` is sent first (e.g. the end of onboarding). */
  | { kind: 'turn'; bot: Bot; userText: string; preface: string | null; addressed: boolean; stateChanged: boolean };

/** Picks the configuration a person talks to: the approved snapshot, or the pending version for its owner and tester (S10). */
export interface BotResolver {
  effectiveBot(bot: Bot, actor: { kind: ParsedMessage['actor']['kind']; uid: string; user?: ActingUser }): Promise<Bot>;
}

/** Data kept per (bot, room) outside memory, e.g. room documents and images (knowledge). */
export interface RoomDataHooks {
  forgetRoom(botId: string, roomToken: string): Promise<void>;
  forgetMessage(roomToken: string, messageId: string): Promise<void>;
}

export interface RouteInput {
  /** Talk's own, verified copy of the message (S3). */
  message: ParsedMessage;
  /** The verified author when it is a local user; null for guests and federated users. */
  author: ActingUser | null;
}

/**
 * Decides what a verified message means, in upstream's order but safer:
 * ((RESET)) (moderators, or the one-to-one participant) → @mention (first
 * bot mentioned that the author may use) → onboarding answer → the room's
 * always-mode bot → nothing.
 */
export class MessageRouter {
  readonly #bots: BotStore;
  readonly #access: BotAccessPolicy;
  readonly #onboarding: OnboardingService;
  readonly #memory: ConversationMemory;
  readonly #rooms: RoomFactsSource;
  readonly #resolver: BotResolver | null;
  readonly #roomData: RoomDataHooks | null;

  constructor(deps: {
    bots: BotStore;
    access: BotAccessPolicy;
    onboarding: OnboardingService;
    memory: ConversationMemory;
    rooms: RoomFactsSource;
    resolver?: BotResolver;
    roomData?: RoomDataHooks;
  }) {
    this.#resolver = deps.resolver ?? null;
    this.#roomData = deps.roomData ?? null;
    this.#bots = deps.bots;
    this.#access = deps.access;
    this.#onboarding = deps.onboarding;
    this.#memory = deps.memory;
    this.#rooms = deps.rooms;
  }

  async route(input: RouteInput): Promise<Decision> {
    const { message, author } = input;
    if (message.kind === 'system') return this.#system(message);
    if (message.actor.kind === 'bot') return { kind: 'ignore', reason: 'bot message' };
    if (message.edited) return { kind: 'ignore', reason: 'edited message' };

    const roomFacts = lazy(() => (author ? this.#rooms.forUser(author, message.roomToken) : Promise.resolve(null)));

    const reset = parseResetCommand(message.rawText);
    if (reset) return this.#reset(message, reset.mention, await roomFacts());

    const mentions = await this.#bots.activeMentions();
    const found = findBotMentions(message.rawText, new Set(mentions.keys()));
    for (const match of found) {
      const bot = await this.#bots.getByMention(match.mention);
      if (!bot || !bot.active) continue;
      const access = await this.#access.canUse(bot, this.#actor(message, author));
      if (!access.allowed) {
        return { kind: 'reply', bot: null, text: refusal(bot, access.reason), stateChanged: false };
      }
      const userText = renderMessageText(stripMention(message.rawText, bot.mention), message.parameters).trim();
      return this.#addressed(await this.#effective(bot, message, author), message, userText, author, roomFacts);
    }

    // Plain messages: an onboarding in progress takes them as answers, then the always-mode bot.
    const inProgress = await this.#onboarding.inProgress(message.roomToken);
    for (const state of inProgress) {
      const bot = await this.#bots.get(state.botId);
      if (!bot?.active) continue;
      if (!(await this.#access.canUse(bot, this.#actor(message, author))).allowed) continue;
      return this.#answerOnboarding(
        await this.#effective(bot, message, author),
        message,
        renderMessageText(message.rawText, message.parameters).trim(),
        author,
        roomFacts,
      );
    }
    const alwaysId = await this.#onboarding.alwaysModeBot(message.roomToken);
    if (alwaysId) {
      const bot = await this.#bots.get(alwaysId);
      if (bot?.active && (await this.#access.canUse(bot, this.#actor(message, author))).allowed) {
        const userText = renderMessageText(message.rawText, message.parameters).trim();
        if (userText === '' && message.attachments.length === 0) return { kind: 'ignore', reason: 'empty' };
        return { kind: 'turn', bot: await this.#effective(bot, message, author), userText, preface: null, addressed: false, stateChanged: false };
      }
    }
    return { kind: 'ignore', reason: 'not addressed' };
  }

  /**
   * The bot `route` would pick, without changing any state: of a ((RESET)) @mention, of the first
   * active bot mentioned, of an onboarding in progress the author may answer, of the room's
   * always-mode. null for a whole-room ((RESET)) and for messages no bot would answer. A bot's own
   * Talk identity takes only messages for its bot (S14).
   */
  async addressee(input: RouteInput): Promise<string | null> {
    const { message, author } = input;
    if (message.kind === 'system' || message.actor.kind === 'bot' || message.edited) return null;
    const reset = parseResetCommand(message.rawText);
    if (reset) return reset.mention ? ((await this.#bots.getByMention(reset.mention))?.id ?? null) : null;
    const mentions = await this.#bots.activeMentions();
    for (const match of findBotMentions(message.rawText, new Set(mentions.keys()))) {
      const bot = await this.#bots.getByMention(match.mention);
      if (bot?.active) return bot.id;
    }
    for (const state of await this.#onboarding.inProgress(message.roomToken)) {
      const bot = await this.#bots.get(state.botId);
      if (bot?.active && (await this.#access.canUse(bot, this.#actor(message, author))).allowed) return bot.id;
    }
    return this.#onboarding.alwaysModeBot(message.roomToken);
  }

  #actor(message: ParsedMessage, author: ActingUser | null) {
    return { kind: message.actor.kind, uid: message.actor.id, ...(author ? { user: author } : {}) };
  }

  async #effective(bot: Bot, message: ParsedMessage, author: ActingUser | null): Promise<Bot> {
    return this.#resolver ? this.#resolver.effectiveBot(bot, this.#actor(message, author)) : bot;
  }

  async #addressed(
    bot: Bot,
    message: ParsedMessage,
    userText: string,
    author: ActingUser | null,
    roomFacts: () => Promise<RoomFacts | null>,
  ): Promise<Decision> {
    const state = await this.#onboarding.getState(bot.id, message.roomToken);
    if (!state) {
      const reply = await this.#onboarding.start(bot, message.roomToken, message.actor.id, userText === '' ? null : userText);
      return { kind: 'reply', bot, text: reply, stateChanged: true };
    }
    if (state.onboardingStatus !== 'completed') return this.#answerOnboarding(bot, message, userText, author, roomFacts);
    if (userText === '' && message.attachments.length === 0) {
      return { kind: 'reply', bot, text: routerTexts().mentionedWithoutQuestion({ mention: bot.mention }), stateChanged: false };
    }
    return { kind: 'turn', bot, userText, preface: null, addressed: true, stateChanged: false };
  }

  async #answerOnboarding(
    bot: Bot,
    message: ParsedMessage,
    text: string,
    author: ActingUser | null,
    roomFacts: () => Promise<RoomFacts | null>,
  ): Promise<Decision> {
    const canDecide = author !== null && RoomInfo.canDecideRoomMode(await roomFacts());
    const result = await this.#onboarding.answer(bot, message.roomToken, text, { uid: message.actor.id, canDecideRoomMode: canDecide });
    if (result.completed && result.deferredMessage) {
      return { kind: 'turn', bot, userText: result.deferredMessage, preface: result.reply || null, addressed: true, stateChanged: true };
    }
    if (result.reply === '') return { kind: 'ignore', reason: 'no onboarding in progress' };
    return { kind: 'reply', bot, text: result.reply, stateChanged: true };
  }

  async #reset(message: ParsedMessage, mention: string | null, facts: RoomFacts | null): Promise<Decision> {
    if (!RoomInfo.canDecideRoomMode(facts)) {
      return { kind: 'reply', bot: null, text: routerTexts().resetOnlyModerators, stateChanged: false };
    }
    if (mention) {
      const bot = await this.#bots.getByMention(mention);
      if (!bot) return { kind: 'reply', bot: null, text: routerTexts().noSuchBot({ mention }), stateChanged: false };
      await this.#onboarding.reset(bot.id, message.roomToken);
      await this.#memory.forgetRoom(bot.id, message.roomToken);
      await this.#roomData?.forgetRoom(bot.id, message.roomToken);
      return { kind: 'reply', bot, text: routerTexts().botReset({ mention: bot.mention }), stateChanged: true };
    }
    const states = await this.#onboarding.roomStates(message.roomToken);
    if (states.length === 0) return { kind: 'reply', bot: null, text: routerTexts().noActiveBots, stateChanged: false };
    for (const s of states) {
      await this.#onboarding.reset(s.botId, message.roomToken);
      await this.#memory.forgetRoom(s.botId, message.roomToken);
      await this.#roomData?.forgetRoom(s.botId, message.roomToken);
    }
    return { kind: 'reply', bot: null, text: routerTexts().chatReset, stateChanged: true };
  }

  async #system(message: ParsedMessage): Promise<Decision> {
    // S21: a deleted message disappears from every bot's memory; Talk's copy names it as the parent.
    if (message.systemName === 'message_deleted' && message.replyToId) {
      await this.#memory.forgetMessage(message.roomToken, message.replyToId);
      await this.#roomData?.forgetMessage(message.roomToken, message.replyToId);
      return { kind: 'ignore', reason: 'message deleted: memory purged' };
    }
    return { kind: 'ignore', reason: `system event ${message.systemName ?? ''}` };
  }
}

function refusal(bot: Bot, reason: string): string {
  return routerTexts().refusal({ mention: bot.mention, reason });
}

function lazy<T>(fn: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | null = null;
  return () => (p ??= fn());
}
