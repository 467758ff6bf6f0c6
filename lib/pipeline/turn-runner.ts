import { createHash } from 'node:crypto';
import type { AgentLoop } from '../agent/agent-loop.ts';
import { forcedSearchPhraseList, type AgentSettings } from '../agent/agent-settings.ts';
import { TurnTaint } from '../tools/confirmation-gate.ts';
import { SerialReplySink, type ReplySink } from '../agent/reply-sink.ts';
import type { Bot } from '../bots/bot-store.ts';
import type { ChatClient, ChatMessage, TokenUsage } from '../llm/chat-client.ts';
import { LlmError } from '../llm/chat-client.ts';
import type { LlmSettingsService } from '../llm/llm-settings.ts';
import type { Logger } from '../log/logger.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { RateGate, RateLimitedError, rateKeyFor, type RateGateOptions, type Refusal } from '../ratelimit/rate-gate.ts';
import type { RateLevel, RateLimiter } from '../ratelimit/rate-limiter.ts';
import { humanizeWait, renderQueueMessage, type RequestQueue } from '../ratelimit/request-queue.ts';
import { stripMention } from '../talk/mention-detector.ts';
import type { OnboardingService } from '../router/onboarding.ts';
import { renderPersonLabel, type ParsedMessage } from '../talk/message-parser.ts';
import { createInvocationContext, type ActorKind } from '../tools/tool-provider.ts';
import { attachTaint } from '../tools/turn-taints.ts';
import { memoryTaint } from '../conversation/memory-taint.ts';
import type { EffectiveBot } from '../bots/bot-config.ts';
import type { Loadout, ToolRegistry } from '../tools/tool-registry.ts';
import type { ToolAssignmentStore } from '../tools/tool-assignments.ts';
import type { TraceStore } from '../traces/trace-store.ts';
import { TurnTrace } from '../traces/turn-trace.ts';
import type { ConversationMemory, MemoryScope } from '../conversation/memory.ts';
import { llmErrorText, turnTexts } from './turn-texts.ts';

/** Where a reply goes, kept with a queued turn so it can be answered later. */
export interface ReplyTargetInfo {
  route: string;
  replyTo: number | null;
  inThread: boolean;
}

export interface TurnInput {
  bot: Bot;
  /** Talk's own, verified copy of the message (S3). */
  message: ParsedMessage;
  /** The verified author (Talk confirmed it; a stored principal for queued turns); null for guests and other non-users. */
  author: ActingUser | null;
  userText: string;
  roomName: string;
  stream: ReplySink;
  /** Text already posted for this message before a restart; the model continues after it. */
  alreadyPosted: string;
  /** false: always-mode picked up a message that did not address the bot; no tool that changes data (S12). */
  addressed?: boolean;
  /** Needed to queue the turn when the rate limit refuses its first model call. */
  reply?: ReplyTargetInfo;
  /** Set when a queued turn is replayed: a refusal is reported, not queued again. */
  replay?: { queueId: number };
  /** The reply's link filter: tool output is added so links carrying it are dropped (S8). */
  untrusted?: { addUntrustedText(text: string): void };
}

export type TurnStatus = 'success' | 'partial' | 'error' | 'queued' | 'deferred';

export interface TurnResult {
  status: TurnStatus;
  text: string;
  /** The turn failed before anything reached the user (a replayed turn may be tried again). */
  retryable?: boolean;
  /** Set with 'deferred'. */
  retryAfterMs?: number;
  level?: RateLevel;
  traceId?: string | null;
}

/** What a queued turn keeps until it is replayed. */
export interface QueuedTurnPayload {
  v: 1;
  message: ParsedMessage;
  userText: string;
  roomName: string;
  alreadyPosted: string;
  addressed: boolean;
  inThread: boolean;
}

export interface TurnRateLimits {
  limiter: RateLimiter;
  queue: RequestQueue;
  /** The admin's queue reply template, or null for the built-in text. */
  queueMessage: () => Promise<string | null>;
  gate?: RateGateOptions;
}

export interface TurnRunnerDeps {
  chat: ChatClient;
  settings: LlmSettingsService;
  memory: ConversationMemory;
  onboarding: OnboardingService;
  logger: Logger;
  now?: () => number;
  tickMs?: number;
  /** Tool registry and assignments; without them every turn is a single streamed call. */
  tools?: { registry: ToolRegistry; assignments: ToolAssignmentStore };
  agent?: AgentLoop;
  agentSettings?: () => Promise<AgentSettings>;
  rateLimits?: TurnRateLimits;
  traces?: TraceStore;
}

export function rateLimitedMidTurnText(retryAfterMs: number): string {
  return turnTexts().usageLimitMidTurn({ wait: humanizeWait(retryAfterMs) });
}

function actorKindOf(message: ParsedMessage): ActorKind {
  switch (message.actor.kind) {
    case 'user':
      return 'user';
    case 'guest':
    case 'email':
      return 'guest';
    case 'federated':
      return 'federated';
    default:
      return 'other';
  }
}

/** The message is only attachments: no text of its own once mentions and file placeholders are gone. */
export function isAttachmentOnly(message: ParsedMessage, mention: string): boolean {
  if (message.attachments.length === 0) return false;
  const rest = stripMention(message.rawText, mention).replace(/\{([A-Za-z0-9][A-Za-z0-9_-]{0,63})\}/g, (whole, key: string) => {
    const p = Object.hasOwn(message.parameters, key) ? message.parameters[key] : undefined;
    return p && (p.type === 'file' || key.startsWith('mention-')) ? '' : whole;
  });
  return rest.trim() === '';
}

function attachmentNote(message: ParsedMessage): string {
  if (message.attachments.length === 0) return '';
  return `\n\n[Attachments: ${message.attachments.map((a) => `${a.kind}: ${a.name.replace(/[\r\n;\]]/g, ' ').slice(0, 200)}`).join('; ')}]`;
}

/** Memory key of an invoker: the uid of a user; a stable hash for guests and others (their ids can be long). */
function invokerKey(user: ActingUser | null, message: ParsedMessage): string {
  return user !== null ? user.uid : `h:${createHash('sha256').update(message.actor.rawId).digest('hex').slice(0, 40)}`;
}

function usageOf(u: TokenUsage | null) {
  return u === null ? null : { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.totalTokens };
}

/**
 * One answer of a bot. Builds the invocation context from the verified
 * message, asks the rate limiter for the first model call (queueing the turn
 * when refused), loads memory (per invoker for bots with user-mode tools, S6),
 * then runs the agent loop when the bot has usable tools, or one streamed
 * call otherwise. Traces every turn; keeps the user's message and the final
 * answer in memory.
 */
export class TurnRunner {
  readonly #chat: ChatClient;
  readonly #settings: LlmSettingsService;
  readonly #memory: ConversationMemory;
  readonly #onboarding: OnboardingService;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #tickMs: number;
  readonly #tools: TurnRunnerDeps['tools'];
  readonly #agent: AgentLoop | undefined;
  readonly #agentSettings: TurnRunnerDeps['agentSettings'];
  readonly #rate: TurnRateLimits | undefined;
  readonly #traces: TraceStore | null;

  constructor(deps: TurnRunnerDeps) {
    this.#chat = deps.chat;
    this.#settings = deps.settings;
    this.#memory = deps.memory;
    this.#onboarding = deps.onboarding;
    this.#logger = deps.logger;
    this.#now = deps.now ?? Date.now;
    this.#tickMs = deps.tickMs ?? 500;
    this.#tools = deps.tools;
    this.#agent = deps.agent;
    this.#agentSettings = deps.agentSettings;
    this.#rate = deps.rateLimits;
    this.#traces = deps.traces ?? null;
  }

  async run(input: TurnInput): Promise<TurnResult> {
    const { bot, message, stream } = input;
    const settings = await this.#settings.get();
    // Only a user Talk confirmed as the author acts as a user (never anything from model output).
    const user = message.actor.kind === 'user' && input.author !== null && input.author.uid === message.actor.id ? input.author : null;
    const ctx = createInvocationContext({
      user,
      actorKind: user !== null ? 'user' : actorKindOf(message) === 'user' ? 'other' : actorKindOf(message),
      botId: bot.id,
      roomToken: message.roomToken,
      threadId: message.threadId,
      messageId: message.messageId,
      attachments: message.attachments.map((a) => ({ fileId: a.fileId, name: a.name, mimeType: a.mimeType, kind: a.kind })),
      // S10: a reviewer's test of a pending version uses no agent profile.
      reviewMode: (bot as Partial<Pick<EffectiveBot, 'reviewMode'>>).reviewMode === true,
    });

    // The router hands over the configuration this person talks to (approved snapshot or pending version, S10).
    const snapshot = (bot as Partial<Pick<EffectiveBot, 'tools'>>).tools;
    const assignments = this.#tools ? (snapshot ?? (await this.#tools.assignments.list(bot.id))) : [];
    let loadout: Loadout | null = null;
    if (this.#tools && assignments.length > 0) {
      try {
        loadout = await this.#tools.registry.loadout(ctx, assignments);
      } catch (err) {
        this.#logger.warn({ err, botId: bot.id }, "could not load the bot's tools; answering without them");
      }
    }
    // S6: a bot that may act as its users keeps memory per invoker. Unknown or unavailable
    // tools may be such tools, so they count too.
    const perInvoker =
      assignments.length > 0 &&
      (loadout === null || loadout.tools.some((t) => t.requiresUser === true) || loadout.unavailable.length > 0 || loadout.inert.length > 0);
    const scope: MemoryScope = {
      botId: bot.id,
      roomToken: message.roomToken,
      threadId: message.threadId,
      invokerUid: perInvoker ? invokerKey(user, message) : null,
    };
    const allowWrites = input.addressed !== false;
    // S4: guests and other non-users never reach a tool.
    const agentTools =
      user !== null && loadout !== null && this.#agent !== undefined
        ? loadout.tools.filter((t) => allowWrites || (t.policy.readOnly && !t.policy.destructive))
        : [];

    const gate = new RateGate(this.#rate?.limiter ?? null, rateKeyFor({ uid: user?.uid ?? null, roomToken: message.roomToken }), this.#rate?.gate);
    let first: Awaited<ReturnType<RateGate['first']>>;
    try {
      first = await gate.first();
    } catch (err) {
      this.#logger.error({ err, botId: bot.id }, 'the rate limiter failed; the turn is not run');
      if (input.replay) return { status: 'error', text: '', retryable: true };
      await stream.post(turnTexts().genericError);
      return { status: 'error', text: '' };
    }
    if (!first.ok) {
      if (input.replay) return { status: 'deferred', text: '', retryAfterMs: first.retryAfterMs, level: first.level };
      return this.#enqueue(input, first, user);
    }

    const label = renderPersonLabel(message.actor.displayName, message.actor.id);
    const userContent = `${label}: ${input.userText}${attachmentNote(message)}`;
    const history = await this.#memory.load(scope, settings.conversationMemoryTokens);
    const taint = new TurnTaint();
    attachTaint(ctx, taint);
    for (const source of memoryTaint(history, message.actor.rawId)) taint.add(source);
    const state = await this.#onboarding.getState(bot.id, message.roomToken);
    const messages: ChatMessage[] = [
      { role: 'system', content: this.#systemPrompt(bot, input.roomName, this.#onboarding.onboardingContext(state), input.alreadyPosted) },
      ...history.map((h) => ({ role: h.role, content: h.content }) as ChatMessage),
      { role: 'user', content: userContent },
    ];
    // Written with the answer when the turn ends (one statement): the turn's history is loaded above, and a
    // turn that is run again after a crash or from the rate-limit queue does not store its user row twice.
    const userRow = { ...scope, role: 'user' as const, authorUid: message.actor.rawId, messageId: message.messageId, content: userContent };

    const trace = await TurnTrace.start(this.#traces, {
      uid: user?.uid ?? message.actor.rawId,
      botId: bot.id,
      botMention: bot.mention,
      roomToken: message.roomToken,
      messageId: message.messageId,
      source: input.replay ? 'queue' : 'talk',
      userText: input.userText,
    });
    trace.record({ type: 'user_message', text: input.userText });

    const model = bot.model ?? settings.defaultModel ?? '';
    const temperature = bot.temperature ?? settings.defaultTemperature;
    const sink = new SerialReplySink(stream, this.#tickMs);
    sink.start();
    let error: unknown = null;
    let toolCalls = 0;
    try {
      if (agentTools.length > 0 && this.#agent && loadout && user) {
        const agentSettings = this.#agentSettings ? await this.#agentSettings() : null;
        const result = await this.#agent.run({
          model,
          temperature,
          maxTokens: settings.maxTokens,
          messages,
          loadout,
          ctx,
          sink,
          userText: input.userText,
          attachmentOnly: isAttachmentOnly(message, bot.mention),
          taint,
          allowWrites,
          ...(agentSettings ? { maxIterations: agentSettings.maxIterations, forcedSearchPhrases: forcedSearchPhraseList(agentSettings) } : {}),
          gate,
          trace,
          ...(input.untrusted ? { onToolOutput: (text: string) => input.untrusted?.addUntrustedText(text) } : {}),
        });
        toolCalls = result.toolCalls;
      } else {
        await this.#singleCall({ model, temperature, maxTokens: settings.maxTokens, messages }, sink, gate, trace);
      }
      await sink.settle();
    } catch (err) {
      error = err;
    } finally {
      sink.stop();
    }
    try {
      await sink.settle();
    } catch (err) {
      error ??= err;
    }

    const text = stream.text;
    const remember = async (content: string | null) => {
      if (content)
        await this.#memory.appendExchange(userRow, { ...scope, role: 'assistant', authorUid: `bots/${bot.mention}`, messageId: message.messageId, content });
      else await this.#memory.append(userRow);
    };

    if (error) {
      const rateLimited = error instanceof RateLimitedError ? error : null;
      const publicMessage = rateLimited
        ? rateLimitedMidTurnText(rateLimited.retryAfterMs)
        : error instanceof LlmError
          ? llmErrorText(error)
          : turnTexts().genericError;
      this.#logger.warn({ err: error, botId: bot.id, roomToken: message.roomToken }, 'turn failed');
      trace.record({ type: 'error', stage: rateLimited ? 'rate-limit' : 'turn', message: error instanceof Error ? error.message : String(error) });
      if (input.replay && !stream.committed && text === '') {
        // Nothing reached the user: the queue tries again (or tells the user once it gives up).
        await trace.finish('error', error instanceof Error ? error.message : 'failed');
        if (rateLimited)
          return { status: 'deferred', text: '', retryAfterMs: rateLimited.retryAfterMs, level: rateLimited.refusal.level, traceId: trace.runId };
        return { status: 'error', text: '', retryable: true, traceId: trace.runId };
      }
      try {
        await stream.post(stream.committed ? turnTexts().interrupted({ why: publicMessage }) : publicMessage);
      } catch (postErr) {
        this.#logger.error({ err: postErr }, 'could not tell the user about the failure');
      }
      await remember(text);
      const status = text ? 'partial' : 'error';
      await trace.finish(status, error instanceof Error ? error.message : 'failed');
      return { status, text, traceId: trace.runId };
    }
    if (!text.trim()) {
      await stream.post(stream.sawThinking ? turnTexts().emptyAfterThinking : turnTexts().empty);
      await remember(null);
      await trace.finish('partial', 'empty answer');
      return { status: 'partial', text: '', traceId: trace.runId };
    }
    const full = input.alreadyPosted ? `${input.alreadyPosted}\n\n${text}` : text;
    await remember(full);
    trace.record({ type: 'assistant_response', text });
    await trace.finish('success');
    if (toolCalls > 0) this.#logger.debug({ botId: bot.id, toolCalls }, 'agent turn finished');
    return { status: 'success', text: full, traceId: trace.runId };
  }

  /** The bot without tools: one streamed call. */
  async #singleCall(
    req: { model: string; temperature: number | null; maxTokens: number; messages: ChatMessage[] },
    sink: ReplySink,
    gate: RateGate,
    trace: TurnTrace,
  ): Promise<void> {
    await gate.acquire();
    trace.record({ type: 'llm_request', model: req.model, messages: req.messages });
    const started = performance.now();
    let usage: TokenUsage | null = null;
    let finishReason: string | null = null;
    let answeredBy = req.model;
    let content = '';
    const events = this.#chat.stream(req, { committed: () => sink.committed });
    for await (const ev of events) {
      if (ev.type === 'text') {
        content += ev.delta;
        await sink.push(ev.delta);
      } else if (ev.type === 'restart') {
        content = '';
        sink.restart();
      } else if (ev.type === 'usage') usage = { promptTokens: ev.promptTokens, completionTokens: ev.completionTokens, totalTokens: ev.totalTokens };
      else if (ev.type === 'done') {
        finishReason = ev.finishReason;
        answeredBy = ev.model;
      }
    }
    await sink.finish();
    trace.record({ type: 'llm_response', model: answeredBy, usage: usageOf(usage), finishReason, content, durationMs: performance.now() - started });
  }

  async #enqueue(input: TurnInput, refusal: Refusal, user: ActingUser | null): Promise<TurnResult> {
    const { bot, message, stream } = input;
    if (!this.#rate || !input.reply) {
      await stream.post(turnTexts().usageLimitNow({ wait: humanizeWait(refusal.retryAfterMs) }));
      return { status: 'error', text: '' };
    }
    const payload: QueuedTurnPayload = {
      v: 1,
      message,
      userText: input.userText,
      roomName: input.roomName,
      alreadyPosted: input.alreadyPosted,
      addressed: input.addressed !== false,
      inThread: input.reply.inThread,
    };
    const queued = await this.#rate.queue.enqueue({
      botId: bot.id,
      roomToken: message.roomToken,
      route: input.reply.route,
      inboxPayload: payload,
      uid: user?.uid ?? null,
      replyTo: input.reply.replyTo === null ? null : String(input.reply.replyTo),
      retryAfterMs: refusal.retryAfterMs,
    });
    this.#logger.info(
      { botId: bot.id, roomToken: message.roomToken, request: queued.id, level: refusal.level, window: refusal.window },
      'rate limit reached; turn queued',
    );
    await stream.post(renderQueueMessage(queued.position, queued.estimatedWaitMs, await this.#rate.queueMessage()));
    return { status: 'queued', text: '' };
  }

  #systemPrompt(bot: Bot, roomName: string, onboardingContext: string, alreadyPosted: string): string {
    const parts = [
      bot.systemPrompt.trim() || `You are ${bot.displayName}, a helpful assistant.`,
      [
        '## Conversation context',
        `You are @${bot.mention}, a bot in the Nextcloud Talk conversation "${roomName.slice(0, 200)}".`,
        `The current date and time is ${new Date(this.#now()).toISOString()}.`,
        "Each user message starts with the author's name and user id. Answer in the language of the latest message, using Markdown.",
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
