// Confirm with a 👍 (issue 23, S7). Talk 21's bot post returns no message id, and the reaction
// webhook names the AUTHOR of the reacted message, not who reacted
// (test/fixtures/nextcloud33/talk-21-reactions.json). So, as the requester: find the request's
// message by our referenceId, then read its reactions; only the requester's own 👍/👎 counts.
// A reaction webhook only makes the next read come sooner. Reads happen only while a request is
// pending, at most one per request every `minIntervalMs` and `maxReadsPerTick` per tick, and stop
// at expiry. The answer goes through the same atomic consume as "yes <code>".
import { withTalkLanguage, type TalkLanguage } from '../l10n/talk-language.ts';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { issueForStoredPrincipal } from '../nextcloud/identity.ts';
import { findBotMessageByReferenceId, readReactions, type ReactionActor } from '../nextcloud/talk-reactions.ts';
import type { ConfirmationService } from './confirmation-service.ts';
import type { ConfirmationRow } from './confirmation-store.ts';

export const YES_REACTION = '👍';
export const NO_REACTION = '👎';
export const DONE_REACTION = '✅';
export const NOT_DONE_REACTION = '❌';

type Target = { botId: string; roomToken: string };

export interface ReactionWatcherOptions {
  confirmations: ConfirmationService;
  nextcloud: NextcloudClient;
  /** Posts the answer as the request's bot. */
  post: (target: Target, text: string) => Promise<void>;
  /** The bot's own reaction on the request (✅/❌). */
  react: (target: Target, messageId: string, emoji: string) => Promise<void>;
  /** The requester's language for the answer (English without it). */
  languageOf?: (uid: string) => Promise<TalkLanguage>;
  now?: () => number;
  logger?: Logger;
  /** Per pending request, at most one read this often (ms). */
  minIntervalMs?: number;
  /** Where Talk sends reaction webhooks (the bot has the `reaction` feature), a safety read this often. */
  webhookIntervalMs?: number;
  /** A webhook brings the next read forward, but never closer than this to the previous one. */
  hintIntervalMs?: number;
  /** Reads across all requests per tick (the global cap). */
  maxReadsPerTick?: number;
  tickMs?: number;
}

/** 👍 with or without a skin tone; 👎 likewise. */
function answerOf(emoji: string): 'yes' | 'no' | null {
  const base = emoji.replace(/[\u{1F3FB}-\u{1F3FF}]|\uFE0F/gu, '');
  return base === YES_REACTION ? 'yes' : base === NO_REACTION ? 'no' : null;
}

/** The requester's own answer among the reactions; null when none, or both. */
export function requesterAnswer(reactions: Map<string, ReactionActor[]>, uid: string): 'yes' | 'no' | null {
  const answers = new Set<'yes' | 'no'>();
  for (const [emoji, actors] of reactions) {
    const answer = answerOf(emoji);
    if (answer !== null && actors.some((a) => a.actorType === 'users' && a.actorId === uid)) answers.add(answer);
  }
  return answers.size === 1 ? [...answers][0]! : null;
}

export class ReactionWatcher {
  readonly #o: Required<Omit<ReactionWatcherOptions, 'logger' | 'languageOf'>> & { logger: Logger | null; languageOf: ReactionWatcherOptions['languageOf'] };
  /** Request id → earliest time of its next read. */
  readonly #due = new Map<string, number>();
  readonly #lastRead = new Map<string, number>();
  /** Rooms where a reaction webhook arrived: the bot there has Talk's `reaction` feature. */
  readonly #webhookRooms = new Set<string>();
  readonly #busy = new Set<string>();
  readonly #hinted: Array<{ roomToken: string; messageId: string }> = [];
  readonly #settling = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #closed = false;
  /** Reads made (chat lookups and reaction lists), for the runtime status and tests. */
  reads = 0;

  constructor(options: ReactionWatcherOptions) {
    this.#o = {
      now: Date.now,
      minIntervalMs: 5_000,
      webhookIntervalMs: 30_000,
      hintIntervalMs: 1_000,
      maxReadsPerTick: 10,
      tickMs: 1_000,
      ...options,
      logger: options.logger ?? null,
      languageOf: options.languageOf,
    };
    options.confirmations.watch({
      posted: (id) => {
        this.#due.set(id, this.#o.now());
        this.wake();
      },
      settled: (row, ok) => {
        const p = this.#settle(row, ok).finally(() => this.#settling.delete(p));
        this.#settling.add(p);
      },
    });
  }

  /** Whether the timer runs (only while requests are pending). */
  get running(): boolean {
    return this.#timer !== null;
  }

  /** Starts reading if requests are pending (at start-up, and after each posted request). */
  wake(): void {
    if (this.#closed || this.#timer !== null) return;
    this.#timer = setTimeout(() => void this.#loop(), this.#o.tickMs);
    this.#timer.unref();
  }

  /** A reaction webhook for a message in a room: read that room's pending requests soon. */
  hint(roomToken: string, messageId: string): void {
    this.#webhookRooms.add(roomToken);
    // Nothing pending here: a reaction on any other message costs nothing.
    if (this.#due.size === 0) return;
    this.#hinted.push({ roomToken, messageId });
    if (this.#hinted.length > 100) this.#hinted.shift();
    this.wake();
  }

  /** Waits for the ✅/❌ reactions under way (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#settling.size > 0) await Promise.all([...this.#settling]);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #loop(): Promise<void> {
    this.#timer = null;
    const more = await this.tick().catch((err: unknown) => {
      this.#o.logger?.warn({ err }, 'reading confirmation reactions failed');
      return true;
    });
    if (more) this.wake();
  }

  /** One round of reads; false when nothing is pending any more (the timer then stops). */
  async tick(): Promise<boolean> {
    while (this.#ticking) await this.#ticking;
    let done!: () => void;
    this.#ticking = new Promise<void>((r) => (done = r));
    try {
      return await this.#tick();
    } finally {
      this.#ticking = null;
      done();
    }
  }

  async #tick(): Promise<boolean> {
    const rows = await this.#o.confirmations.pendingRequests();
    const now = this.#o.now();
    const live = new Set(rows.map((r) => r.id));
    for (const id of [...this.#due.keys()]) if (!live.has(id)) this.#forget(id);
    const hinted = this.#hinted.splice(0);
    for (const h of hinted) {
      for (const r of rows) {
        if (r.room_token !== h.roomToken || (r.talk_message_id !== null && r.talk_message_id !== undefined && r.talk_message_id !== h.messageId)) continue;
        const last = this.#lastRead.get(r.id) ?? 0;
        this.#due.set(r.id, Math.min(this.#due.get(r.id) ?? now, Math.max(now, last + this.#o.hintIntervalMs)));
      }
    }
    let budget = this.#o.maxReadsPerTick;
    for (const row of rows) {
      if (budget <= 0) break;
      if ((this.#due.get(row.id) ?? now) > now || this.#busy.has(row.id)) continue;
      budget -= 1;
      this.#busy.add(row.id);
      try {
        await this.#read(row);
      } catch (err) {
        this.#o.logger?.warn({ err, confirmation: row.id }, 'could not read the reactions of a confirmation request');
      } finally {
        this.#busy.delete(row.id);
        const interval = this.#webhookRooms.has(row.room_token) ? this.#o.webhookIntervalMs : this.#o.minIntervalMs;
        this.#lastRead.set(row.id, this.#o.now());
        this.#due.set(row.id, this.#o.now() + interval);
      }
    }
    return rows.length > 0;
  }

  #forget(id: string): void {
    this.#due.delete(id);
    this.#lastRead.delete(id);
  }

  async #read(row: ConfirmationRow): Promise<void> {
    const session = this.#o.nextcloud.as(issueForStoredPrincipal(row.user_uid));
    let messageId = row.talk_message_id ?? null;
    if (messageId === null) {
      if (!row.talk_reference_id) return;
      this.reads += 1;
      messageId = await findBotMessageByReferenceId(session, row.room_token, row.talk_reference_id);
      if (messageId === null) return;
      await this.#o.confirmations.setTalkMessageId(row.id, messageId);
    }
    this.reads += 1;
    const answer = requesterAnswer(await readReactions(session, row.room_token, messageId), row.user_uid);
    if (answer === null) return;
    const language = this.#o.languageOf ? await this.#o.languageOf(row.user_uid).catch((): TalkLanguage => 'en') : 'en';
    const outcome = await withTalkLanguage(language, () =>
      this.#o.confirmations.handleReaction(row.id, issueForStoredPrincipal(row.user_uid), answer, messageId),
    );
    if (outcome.handled && outcome.reply !== '') await this.#o.post({ botId: row.bot_id, roomToken: row.room_token }, outcome.reply);
  }

  /** ✅ on the request after it ran, ❌ when it was declined or failed (as well as the answer). */
  async #settle(row: ConfirmationRow, ok: boolean): Promise<void> {
    this.#forget(row.id);
    try {
      let messageId = row.talk_message_id ?? null;
      if (messageId === null && row.talk_reference_id) {
        messageId = await findBotMessageByReferenceId(this.#o.nextcloud.as(issueForStoredPrincipal(row.user_uid)), row.room_token, row.talk_reference_id);
      }
      if (messageId !== null) await this.#o.react({ botId: row.bot_id, roomToken: row.room_token }, messageId, ok ? DONE_REACTION : NOT_DONE_REACTION);
    } catch (err) {
      this.#o.logger?.warn({ err, confirmation: row.id }, 'could not react on the confirmation request');
    }
  }
}
