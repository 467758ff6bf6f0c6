// Server-recorded confirmations (S7). A tool that needs the user's explicit consent does not
// run: the server stores the exact action with a short random code and posts the request
// itself. Only the same user, in the same room, to the same bot, with an unedited Talk
// `Create` message of the form "yes <code>" runs it: once, atomically, after checking the
// authorisation and the object's state again. The model never produces the arguments again.
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { sendAppApiNotification } from '../nextcloud/talk-appapi.ts';
import { talkCallUrl } from '../nextcloud/talk.ts';
import { DEFAULT_AFFIRMATIVES, DEFAULT_NEGATIVES, parseConfirmationReply, type ConfirmationOptions } from './confirmation-reply.ts';
import { findBotMentions } from '../talk/mention-detector.ts';
import type { Database } from '../storage/schema.ts';
import type { ParsedMessage } from '../talk/message-parser.ts';
import type { InvocationContext, ToolResult } from '../tools/tool-provider.ts';
import { actionHash } from './canonical.ts';
import { canonicalJson } from '../validation/canonical-json.ts';
import { ConfirmationStore, type ConfirmationRow } from './confirmation-store.ts';
import { confirmationTexts, type ConfirmationTexts } from './confirmation-texts.ts';
import {
  firstText,
  toStored,
  type AuthorizationCheck,
  type BotLookup,
  type ReplyContext,
  type ReplyOutcome,
  type ReplyStatus,
  type SecretSealer,
} from './confirmation-types.ts';
import {
  type ConfirmationExecutor,
  type NotificationPayload,
  type ProposedAction,
  type RequestedConfirmation,
  type StoredAction,
} from '../tools/confirmable.ts';

export const CONFIRMATION_TTL_MS = 10 * 60_000;
/** How long after expiry a late reply is still answered with the reason. */
const REPLY_GRACE_MS = 60 * 60_000;
const MAX_RESULT_CHARS = 2000;

export type { AuthorizationCheck, BotLookup, ReplyContext, ReplyOutcome, ReplyStatus, SecretSealer } from './confirmation-types.ts';

export interface ConfirmationServiceOptions {
  db: Kysely<Database>;
  /** Without it, actions that carry secrets are refused rather than stored in plain text. */
  sealer?: SecretSealer | null;
  nextcloud: NextcloudClient;
  /** The ExApp id, used as the notification's object type. */
  appId?: string;
  now?: () => number;
  ttlMs?: number;
  /** Digits of the code (4–6). */
  codeDigits?: number;
  /** Wrong codes before the action is cancelled. */
  maxAttempts?: number;
  /** Affirmative and negative words (configurable). */
  words?: () => ConfirmationOptions | Promise<ConfirmationOptions>;
  /** Whether the room is one-to-one, from Talk's room API as the user (S5). */
  isOneToOne?: (user: ActingUser, roomToken: string) => Promise<boolean>;
  /** Posts the server's own message into the room as the bot, with the given referenceId. */
  postToRoom?: (target: { botId: string; roomToken: string }, text: string, referenceId: string) => Promise<void>;
  bots?: BotLookup;
  /** The bot answering every message in a room (always-mode), if any. */
  alwaysModeBot?: (roomToken: string) => Promise<string | null>;
  /** Full authorisation, checked again right before the action runs (bot active, access, tool assigned). */
  authorize?: AuthorizationCheck;
  /** Recognises referenceIds of messages the server posted as the user (see reference-ids.ts). */
  isOwnReferenceId?: (referenceId: string) => boolean;
  logger?: Logger;
}

function hhmm(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

/** The turn language's reply words when the parser accepts them (with `words`), else "yes"/"no". */
function replyWords(t: ConfirmationTexts, words: ConfirmationOptions): { yes: string; no: string } {
  const yes = parseConfirmationReply(`${t.words.yes} 0000`, words)?.answer === 'yes' ? t.words.yes : 'yes';
  const no = parseConfirmationReply(t.words.no, words)?.answer === 'no' ? t.words.no : 'no';
  return { yes, no };
}

function sealName(id: string): string {
  return `confirmation:${id}`;
}

export class ConfirmationError extends Error {
  override name = 'ConfirmationError';
}

export class ConfirmationService {
  readonly #store: ConfirmationStore;
  readonly #nextcloud: NextcloudClient;
  readonly #appId: string;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #digits: number;
  readonly #maxAttempts: number;
  readonly #words: () => ConfirmationOptions | Promise<ConfirmationOptions>;
  readonly #opts: ConfirmationServiceOptions;
  readonly #executors = new Map<string, ConfirmationExecutor>();
  /** Told when a request was posted, and when one ended (✅ run, ❌ declined or failed). */
  readonly #posted: Array<(id: string) => void> = [];
  readonly #settled: Array<(row: ConfirmationRow, ok: boolean) => void> = [];
  /** `room:<token>` / `actor:users/<uid>` → until when a reply there may concern a confirmation. */
  readonly #index = new Map<string, number>();
  /** The last loaded reply words, for the synchronous webhook check. */
  #wordsCache: ConfirmationOptions = { affirmatives: DEFAULT_AFFIRMATIVES, negatives: DEFAULT_NEGATIVES };

  constructor(options: ConfirmationServiceOptions) {
    this.#store = new ConfirmationStore(options.db);
    this.#nextcloud = options.nextcloud;
    this.#appId = options.appId ?? 'educai';
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlMs ?? CONFIRMATION_TTL_MS;
    this.#digits = Math.min(6, Math.max(4, options.codeDigits ?? 4));
    this.#maxAttempts = options.maxAttempts ?? 5;
    this.#words = options.words ?? (() => ({ affirmatives: DEFAULT_AFFIRMATIVES, negatives: DEFAULT_NEGATIVES }));
    this.#opts = options;
  }

  registerExecutor(executor: ConfirmationExecutor): void {
    if (this.#executors.has(executor.id)) throw new Error(`a confirmation executor ${executor.id} is already registered`);
    this.#executors.set(executor.id, executor);
  }

  /** `posted(id)` after a request is in the room; `settled(row, ok)` once it ran (ok) or was declined or failed. */
  watch(listener: { posted?: (id: string) => void; settled?: (row: ConfirmationRow, ok: boolean) => void }): void {
    if (listener.posted) this.#posted.push(listener.posted);
    if (listener.settled) this.#settled.push(listener.settled);
  }

  #tellSettled(row: ConfirmationRow, ok: boolean): void {
    for (const fn of this.#settled) fn(row, ok);
  }

  /** Loads the webhook's relevance index from storage (call at start-up). */
  async loadIndex(): Promise<void> {
    this.#wordsCache = await this.#words();
    const now = this.#now();
    for (const r of await this.#store.recent(now - REPLY_GRACE_MS)) this.#remember(r.room_token, r.user_uid, Number(r.expires_at));
  }

  /**
   * The webhook's cheap, in-memory check (S19): can a message in this room by this actor
   * (`users/<uid>`) concern a confirmation? True for rooms with a recent pending action and
   * for actors who have one anywhere (so a reply in the wrong room is answered too); with
   * `rawText`, only when the text reads as a confirmation reply.
   */
  mightConcern(roomToken: string, actorRawId: string, rawText?: string): boolean {
    const now = this.#now();
    const pending = (this.#index.get(`room:${roomToken}`) ?? 0) > now || (this.#index.get(`actor:${actorRawId}`) ?? 0) > now;
    if (!pending || rawText === undefined) return pending;
    // With the raw text, only what reads as a yes/no reply is kept (S19).
    return parseConfirmationReply(rawText, this.#wordsCache) !== null || parseConfirmationReply(`${rawText} 0000`, this.#wordsCache) !== null;
  }

  #remember(roomToken: string, uid: string, expiresAt: number): void {
    const until = expiresAt + REPLY_GRACE_MS;
    for (const key of [`room:${roomToken}`, `actor:users/${uid}`]) this.#index.set(key, Math.max(this.#index.get(key) ?? 0, until));
    if (this.#index.size > 20_000) {
      const now = this.#now();
      for (const [k, v] of this.#index) if (v <= now) this.#index.delete(k);
    }
  }

  /** Stores the action and returns what the server must post (and notify). Nothing runs. */
  async requestConfirmation(ctx: InvocationContext, action: ProposedAction): Promise<RequestedConfirmation> {
    const user = ctx.user;
    if (user === null) throw new ConfirmationError('confirmations need a signed-in user');
    if (ctx.roomToken === null) throw new ConfirmationError('confirmations need a Talk conversation');
    const now = this.#now();
    const expiresAt = now + this.#ttlMs;
    const code = String(randomInt(10 ** (this.#digits - 1), 10 ** this.#digits));
    const args = JSON.parse(canonicalJson(action.args)) as Record<string, unknown>;
    const binding = JSON.parse(canonicalJson(action.binding)) as Record<string, unknown>;
    const id = randomUUID();
    // Unguessable until posted: the request's Talk message is found by it (a 👍 on it answers, issue 23).
    const referenceId = randomBytes(32).toString('hex');
    const sealed = await this.#seal(id, action.secrets);
    const execution = action.execution ? canonicalJson(action.execution) : null;
    const hash = actionHash({
      userUid: user.uid,
      botId: ctx.botId,
      roomToken: ctx.roomToken,
      providerId: action.providerId,
      tool: action.tool,
      args,
      binding,
      sealed,
      execution,
    });
    const superseded = await this.#store.insertReplacing({
      id,
      user_uid: user.uid,
      bot_id: ctx.botId,
      room_token: ctx.roomToken,
      provider_id: action.providerId,
      tool_name: action.tool,
      args: canonicalJson(args),
      binding: canonicalJson(binding),
      sealed_secrets: sealed,
      description: action.description.slice(0, 2000),
      action_hash: hash,
      code,
      status: 'pending',
      attempts: 0,
      created_at: now,
      expires_at: expiresAt,
      consumed_at: null,
      consumed_message_id: null,
      result: null,
      updated_at: now,
      execution,
      talk_reference_id: referenceId,
      talk_message_id: null,
    });
    this.#remember(ctx.roomToken, user.uid, expiresAt);
    const bot = (await this.#opts.bots?.get(ctx.botId).catch(() => null)) ?? null;
    const say = (words: string): string => (bot ? `@${bot.mention} ${words}` : words);
    const minutes = Math.round(this.#ttlMs / 60_000);
    const t = confirmationTexts();
    const replies = replyWords(t, await this.#words());
    const text = [
      t.requestTitle({ code }),
      t.requestAction({ mention: bot ? bot.mention : null, description: action.description }),
      t.requestReason({ reason: action.reason }),
      t.requestHowTo({ uid: user.uid, minutes, time: hhmm(expiresAt), confirm: say(`${replies.yes} ${code}`), cancel: say(replies.no) }),
      t.requestReactions(),
      ...(superseded.length > 0 ? [t.requestSupersedes()] : []),
    ].join('\n');
    const oneToOne = this.#opts.isOneToOne ? await this.#opts.isOneToOne(user, ctx.roomToken).catch(() => false) : false;
    const notification = oneToOne ? null : this.#notification(t, replies, id, code, action, expiresAt, ctx.roomToken);
    return { id, code, expiresAt, text, notification, superseded, referenceId };
  }

  async #seal(id: string, secrets: Record<string, string> | undefined): Promise<string | null> {
    if (!secrets || Object.keys(secrets).length === 0) return null;
    if (!this.#opts.sealer) throw new ConfirmationError('this action carries a secret and no vault is configured to keep it');
    return this.#opts.sealer.encrypt(sealName(id), JSON.stringify(secrets));
  }

  async #unseal(row: ConfirmationRow): Promise<Record<string, string>> {
    if (row.sealed_secrets === null) return {};
    if (!this.#opts.sealer) throw new ConfirmationError("no vault is configured to open this action's secret");
    const value: unknown = JSON.parse(await this.#opts.sealer.decrypt(sealName(row.id), row.sealed_secrets));
    const out: Record<string, string> = {};
    if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) if (typeof v === 'string') out[k] = v;
    return out;
  }

  #notification(
    t: ConfirmationTexts,
    replies: { yes: string; no: string },
    id: string,
    code: string,
    action: ProposedAction,
    expiresAt: number,
    roomToken: string,
  ): NotificationPayload {
    return {
      params: {
        object: this.#appId,
        object_id: id,
        subject_type: `${this.#appId}_confirmation`,
        subject_params: {
          rich_subject: t.notificationSubject(),
          rich_subject_params: { action: { type: 'highlight', id, name: action.description.slice(0, 300) } },
          rich_message: t.notificationMessage({ ...replies, code, time: hhmm(expiresAt) }),
          rich_message_params: {},
          link: talkCallUrl(this.#nextcloud, roomToken),
        },
      },
    };
  }

  /** Posts the request in the room and sends the notification as the user; failures are logged. */
  async deliver(ctx: InvocationContext, requested: RequestedConfirmation): Promise<{ posted: boolean; notified: boolean }> {
    let posted = false;
    let notified = false;
    if (this.#opts.postToRoom && ctx.roomToken !== null) {
      try {
        await this.#opts.postToRoom({ botId: ctx.botId, roomToken: ctx.roomToken }, requested.text, requested.referenceId);
        posted = true;
        for (const fn of this.#posted) fn(requested.id);
      } catch (err) {
        this.#opts.logger?.warn({ err, roomToken: ctx.roomToken }, 'could not post a confirmation request');
      }
    }
    if (requested.notification && ctx.user) {
      try {
        await sendAppApiNotification(this.#nextcloud.as(ctx.user), requested.notification);
        notified = true;
      } catch (err) {
        this.#opts.logger?.warn({ err }, 'could not send the confirmation notification');
      }
    }
    return { posted, notified };
  }

  /** Cancels a pending action (e.g. when its request could not be posted). */
  async cancel(id: string): Promise<boolean> {
    return this.#store.transition(id, 'pending', 'cancelled', this.#now());
  }

  async get(id: string): Promise<{ action: StoredAction; status: string; code: string } | null> {
    const row = await this.#store.get(id);
    return row ? { action: toStored(row), status: row.status, code: row.code } : null;
  }

  /**
   * Call for every verified message BEFORE normal routing. `handled: false` means "not a
   * confirmation reply": route it as usual. Otherwise the server posts `reply` (as `botId`)
   * and routes nothing.
   */
  async handleReply(message: ParsedMessage, context: ReplyContext): Promise<ReplyOutcome> {
    if (context.deliveredType !== 'Create' || message.kind !== 'chat' || message.edited || message.attachments.length > 0) return { handled: false };
    if (message.referenceId !== null && this.#opts.isOwnReferenceId?.(message.referenceId) === true) return { handled: false };
    const words = await this.#words();
    this.#wordsCache = words;
    const parsed = parseConfirmationReply(message.rawText, words);
    // "yes" alone: parseConfirmationReply wants a code, so try again with a placeholder one.
    const bare = parsed === null && parseConfirmationReply(`${message.rawText} 0000`, words)?.answer === 'yes';
    if (parsed === null && !bare) return { handled: false };

    const t = confirmationTexts();
    const now = this.#now();
    const author = context.author;
    const isUser = message.actor.kind === 'user' && author !== null && author.uid === message.actor.id;
    const rows = await this.#store.relevant(message.roomToken, isUser ? author.uid : null, now - REPLY_GRACE_MS);
    const code = parsed?.answer === 'yes' ? parsed.code : null;

    if (!isUser) {
      const theirs = code ? rows.find((r) => r.room_token === message.roomToken && r.status === 'pending' && r.code === code) : undefined;
      return theirs ? this.#answer('not-yours', theirs, t.notYours({ uid: theirs.user_uid })) : { handled: false };
    }

    const uid = author.uid;
    const mine = rows.filter((r) => r.user_uid === uid && r.room_token === message.roomToken);
    const addressed = await this.#addressedBots(message);
    const mineAddressed = addressed === null ? mine : mine.filter((r) => addressed.has(r.bot_id));
    const active = mineAddressed.find((r) => r.status === 'pending');

    if (parsed?.answer === 'no') {
      if (!active) return { handled: false };
      return this.#decline(active, now);
    }

    if (bare) {
      if (!active) return { handled: false };
      if (Number(active.expires_at) <= now) return this.#expire(active, now);
      return this.#answer('missing-code', active, t.missingCode({ yes: replyWords(t, words).yes }));
    }

    if (active && code !== null) {
      if (Number(active.expires_at) <= now) return this.#expire(active, now);
      if (active.code !== code) {
        const attempts = await this.#store.countAttempt(active.id, now);
        if (attempts >= this.#maxAttempts && (await this.#store.transition(active.id, 'pending', 'cancelled', now))) {
          this.#tellSettled(active, false);
          return this.#answer('cancelled', active, t.tooManyWrongCodes());
        }
        return this.#answer('code-mismatch', active, t.codeMismatch());
      }
      return this.#run(active, message.messageId, message.roomToken, author, now);
    }

    const sameCode = mineAddressed.find((r) => r.code === code);
    if (sameCode) {
      if (sameCode.status === 'running' && sameCode.consumed_message_id === message.messageId.slice(0, 32)) {
        return this.#answer('interrupted', sameCode, t.interrupted());
      }
      if (sameCode.status === 'running' || sameCode.status === 'done' || sameCode.status === 'failed')
        return this.#answer('already-used', sameCode, t.alreadyUsed());
      if (sameCode.status === 'cancelled') return this.#answer('cancelled', sameCode, t.requestCancelled());
      if (sameCode.status === 'superseded') return this.#answer('superseded', sameCode, t.superseded());
      return this.#answer('expired', sameCode, t.expired());
    }
    const someoneElses = rows.find((r) => r.room_token === message.roomToken && r.user_uid !== uid && r.code === code && r.status === 'pending');
    if (someoneElses) return this.#answer('not-yours', someoneElses, t.notYours({ uid: someoneElses.user_uid }));
    const elsewhere = rows.find((r) => r.user_uid === uid && r.room_token !== message.roomToken && r.code === code);
    if (elsewhere) return this.#answer('other-room', elsewhere, t.otherRoom(), true);
    const otherBot = mine.find((r) => r.code === code && r.status === 'pending');
    if (otherBot) {
      const bot = await this.#opts.bots?.get(otherBot.bot_id).catch(() => null);
      return this.#answer('not-addressed', otherBot, t.notAddressed({ mention: bot ? bot.mention : null }));
    }
    return { handled: false };
  }

  async #addressedBots(message: ParsedMessage): Promise<Set<string> | null> {
    const bots = this.#opts.bots;
    if (!bots) return null;
    const mentions = await bots.activeMentions();
    const found = findBotMentions(message.rawText, new Set(mentions.keys()));
    if (found.length > 0) return new Set(found.map((f) => mentions.get(f.mention)).filter((id): id is string => id !== undefined));
    const always = this.#opts.alwaysModeBot ? await this.#opts.alwaysModeBot(message.roomToken) : null;
    return new Set(always ? [always] : []);
  }

  async #expire(row: ConfirmationRow, now: number): Promise<ReplyOutcome> {
    await this.#store.transition(row.id, 'pending', 'expired', now);
    return this.#answer('expired', row, confirmationTexts().expired());
  }

  #answer(status: ReplyStatus, row: ConfirmationRow, reply: string, otherRoom = false): ReplyOutcome {
    // In another room the pending action's bot is not the one addressed here.
    return { handled: true, status, botId: otherRoom ? null : row.bot_id, reply, action: toStored(row) };
  }

  /**
   * A 👍 (`yes`) or 👎 (`no`) by `reactor` on the request's Talk message `messageId` (issue 23). The
   * reactor was read from Talk's reaction list as the requester; the same atomic consume, hash, state
   * and authorisation checks as "yes <code>" apply. `handled: false` when it concerns nothing pending.
   */
  async handleReaction(id: string, reactor: ActingUser, answer: 'yes' | 'no', messageId: string): Promise<ReplyOutcome> {
    const row = await this.#store.get(id);
    if (!row || row.status !== 'pending' || row.user_uid !== reactor.uid || row.talk_message_id !== messageId) return { handled: false };
    const now = this.#now();
    if (Number(row.expires_at) <= now) {
      await this.#store.transition(row.id, 'pending', 'expired', now);
      return { handled: false };
    }
    if (answer === 'no') return this.#decline(row, now);
    return this.#run(row, `reaction:${messageId}`, row.room_token, reactor, now);
  }

  async #decline(row: ConfirmationRow, now: number): Promise<ReplyOutcome> {
    const t = confirmationTexts();
    if (!(await this.#store.transition(row.id, 'pending', 'cancelled', now))) return this.#answer('already-used', row, t.noLongerPending());
    this.#tellSettled(row, false);
    return this.#answer('cancelled', row, t.cancelled({ description: row.description }));
  }

  /** The request's Talk message id, once found by its referenceId. */
  async setTalkMessageId(id: string, messageId: string): Promise<void> {
    await this.#store.setTalkMessageId(id, messageId, this.#now());
  }

  /** Pending requests posted with a referenceId (what the reaction watcher reads). */
  async pendingRequests(): Promise<ConfirmationRow[]> {
    return this.#store.pendingPosted(this.#now());
  }

  async #run(row: ConfirmationRow, consumedBy: string, roomToken: string, user: ActingUser, now: number): Promise<ReplyOutcome> {
    const t = confirmationTexts();
    // Consumed before anything runs, in its own transaction: a resumed or repeated reply finds it used.
    if (!(await this.#store.consume(row.id, consumedBy, now))) {
      return this.#answer('already-used', row, t.alreadyUsed());
    }
    const action = toStored(row);
    // What leaves this method never carries the unsealed secrets.
    const publicAction = toStored(row);
    const finish = async (status: 'done' | 'failed', text: string, result?: ToolResult): Promise<ReplyOutcome> => {
      await this.#store.transition(row.id, 'running', status, this.#now(), text.slice(0, MAX_RESULT_CHARS));
      this.#tellSettled(row, status === 'done');
      const reply = status === 'done' ? t.done({ description: action.description }) : t.notDone({ description: action.description, detail: text });
      return {
        handled: true,
        status: status === 'done' ? 'executed' : 'failed',
        botId: row.bot_id,
        reply,
        action: publicAction,
        ...(result ? { result } : {}),
      };
    };
    const recomputed = actionHash({
      userUid: action.userUid,
      botId: action.botId,
      roomToken: action.roomToken,
      providerId: action.providerId,
      tool: action.tool,
      args: action.args,
      binding: action.binding,
      sealed: row.sealed_secrets,
      execution: row.execution ?? null,
    });
    if (recomputed !== row.action_hash || action.userUid !== user.uid || action.roomToken !== roomToken) {
      this.#opts.logger?.error({ confirmation: row.id }, 'stored action does not match its hash; refused');
      return finish('failed', t.integrityFailed());
    }
    if (this.#opts.authorize) {
      const auth = await this.#opts
        .authorize(action, user)
        .catch((err: unknown) => ({ ok: false as const, reason: err instanceof Error ? err.message : 'authorisation check failed' }));
      if (!auth.ok) return finish('failed', t.noLongerAllowed({ reason: auth.reason }));
    }
    const executor = this.#executors.get(action.providerId);
    if (!executor) return finish('failed', t.toolUnavailable());
    let result: ToolResult;
    try {
      action.secrets = await this.#unseal(row);
    } catch (err) {
      this.#opts.logger?.error({ err, confirmation: row.id }, 'the secret of a confirmed action cannot be opened');
      return finish('failed', t.secretUnreadable());
    }
    try {
      result = await executor.executeConfirmed(action, user);
    } catch (err) {
      this.#opts.logger?.warn({ err, confirmation: row.id, tool: action.tool }, 'confirmed action failed');
      return finish('failed', t.actionFailed());
    }
    const text = firstText(result);
    return result.isError ? finish('failed', text, result) : finish('done', text, result);
  }

  /** Deletes rows that expired before `before` (retention; S19). */
  async prune(before: number): Promise<number> {
    return this.#store.prune(before);
  }
}
