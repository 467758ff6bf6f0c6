import type { Bot } from '../bots/bot-store.ts';
import type { ChatClient, ChatMessage } from '../llm/chat-client.ts';
import { LlmError } from '../llm/chat-client.ts';
import type { LlmSettingsService } from '../llm/llm-settings.ts';
import type { Logger } from '../log/logger.ts';
import type { OnboardingService } from '../router/onboarding.ts';
import { renderPersonLabel, type ParsedMessage } from '../talk/message-parser.ts';
import type { ReplyStream } from '../talk/reply-stream.ts';
import type { ConversationMemory } from './memory.ts';

export interface TurnInput {
  bot: Bot;
  message: ParsedMessage;
  userText: string;
  roomName: string;
  stream: ReplyStream;
  /** Text already posted for this message before a restart; the model continues after it. */
  alreadyPosted: string;
}

export interface TurnResult {
  status: 'success' | 'partial' | 'error';
  text: string;
}

const GENERIC_ERROR = "Sorry, I'm having trouble reaching the AI service right now. Please try again later.";
const EMPTY_AFTER_THINKING = '_(The AI finished thinking but produced no answer. Please try again.)_';
const EMPTY = '_(No answer was received from the AI. Please try again.)_';

/**
 * One answer of a bot: system prompt + onboarding context + memory + the
 * user's message, one streamed model call, the reply streamed into Talk, and
 * the user and final assistant messages kept in memory.
 */
export class TurnRunner {
  readonly #chat: ChatClient;
  readonly #settings: LlmSettingsService;
  readonly #memory: ConversationMemory;
  readonly #onboarding: OnboardingService;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #tickMs: number;

  constructor(deps: { chat: ChatClient; settings: LlmSettingsService; memory: ConversationMemory; onboarding: OnboardingService; logger: Logger; now?: () => number; tickMs?: number }) {
    this.#chat = deps.chat;
    this.#settings = deps.settings;
    this.#memory = deps.memory;
    this.#onboarding = deps.onboarding;
    this.#logger = deps.logger;
    this.#now = deps.now ?? Date.now;
    this.#tickMs = deps.tickMs ?? 500;
  }

  async run(input: TurnInput): Promise<TurnResult> {
    const { bot, message, stream } = input;
    const settings = await this.#settings.get();
    const scope = { botId: bot.id, roomToken: message.roomToken, threadId: message.threadId, invokerUid: null };
    const label = renderPersonLabel(message.actor.displayName, message.actor.id);
    const userContent = `${label}: ${input.userText}`;
    const history = await this.#memory.load(scope, settings.conversationMemoryTokens);
    const state = await this.#onboarding.getState(bot.id, message.roomToken);
    const messages: ChatMessage[] = [
      { role: 'system', content: this.#systemPrompt(bot, input.roomName, this.#onboarding.onboardingContext(state), input.alreadyPosted) },
      ...history.map((h) => ({ role: h.role, content: h.content }) as ChatMessage),
      { role: 'user', content: userContent },
    ];
    if (!input.alreadyPosted) {
      await this.#memory.append({ ...scope, role: 'user', authorUid: message.actor.rawId, messageId: message.messageId, content: userContent });
    }

    // Sends are serialised: the time-based flush and the deltas share one queue.
    let chain: Promise<void> = Promise.resolve();
    const serial = (fn: () => Promise<void>) => (chain = chain.then(fn));
    const ticker = setInterval(() => void serial(() => stream.tick()).catch(() => undefined), this.#tickMs);
    let error: unknown = null;
    try {
      const events = this.#chat.stream(
        {
          model: bot.model ?? settings.defaultModel ?? '',
          messages,
          temperature: bot.temperature ?? settings.defaultTemperature,
          maxTokens: settings.maxTokens,
        },
        { committed: () => stream.committed },
      );
      for await (const ev of events) {
        if (ev.type === 'text') await serial(() => stream.push(ev.delta));
        else if (ev.type === 'restart') await serial(async () => stream.restart());
      }
      await serial(async () => void (await stream.finish()));
    } catch (err) {
      error = err;
    } finally {
      clearInterval(ticker);
    }
    try {
      await chain;
    } catch (err) {
      error ??= err;
    }

    const text = stream.text;
    if (error) {
      const publicMessage = error instanceof LlmError ? error.publicMessage : GENERIC_ERROR;
      this.#logger.warn({ err: error, botId: bot.id, roomToken: message.roomToken }, 'turn failed');
      try {
        await stream.post(stream.committed ? `⚠️ The answer was interrupted. ${publicMessage}` : publicMessage);
      } catch (postErr) {
        this.#logger.error({ err: postErr }, 'could not tell the user about the failure');
      }
      if (text) await this.#memory.append({ ...scope, role: 'assistant', authorUid: `bots/${bot.mention}`, messageId: null, content: text });
      return { status: text ? 'partial' : 'error', text };
    }
    if (!text.trim()) {
      await stream.post(stream.sawThinking ? EMPTY_AFTER_THINKING : EMPTY);
      return { status: 'partial', text: '' };
    }
    const full = input.alreadyPosted ? `${input.alreadyPosted}\n\n${text}` : text;
    await this.#memory.append({ ...scope, role: 'assistant', authorUid: `bots/${bot.mention}`, messageId: null, content: full });
    return { status: 'success', text: full };
  }

  #systemPrompt(bot: Bot, roomName: string, onboardingContext: string, alreadyPosted: string): string {
    const parts = [
      bot.systemPrompt.trim() || `You are ${bot.displayName}, a helpful assistant.`,
      [
        '## Conversation context',
        `You are @${bot.mention}, a bot in the Nextcloud Talk conversation "${roomName.slice(0, 200)}".`,
        `The current date and time is ${new Date(this.#now()).toISOString()}.`,
        'Each user message starts with the author\'s name and user id. Answer in the language of the latest message, using Markdown.',
      ].join('\n'),
    ];
    if (onboardingContext) parts.push(onboardingContext);
    if (alreadyPosted) {
      parts.push(
        [
          '## Interrupted answer',
          'Your previous answer to this message was interrupted after the text below, which the users already see. Continue from where it stops; do not repeat it.',
          '"""',
          alreadyPosted.slice(-4000),
          '"""',
        ].join('\n'),
      );
    }
    return parts.join('\n\n');
  }
}
