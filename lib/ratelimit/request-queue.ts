import { sql, type Kysely } from 'kysely';
import { redactString } from '../log/redact.ts';
import { localized } from '../l10n/talk-language.ts';
import type { Database } from '../storage/schema.ts';

import type { RequestQueueTables } from '../storage/tables/request-queue-tables.ts';

export type { QueueStatus, RequestQueueTable, RequestQueueTables } from '../storage/tables/request-queue-tables.ts';

type Db = Kysely<Database & RequestQueueTables>;

export interface NewQueuedRequest {
  botId: string;
  roomToken: string;
  /** The Talk identity route the reply goes out through. */
  route: string;
  inboxPayload: unknown;
  uid: string | null;
  replyTo: string | null;
  /** The limiter's retryAfterMs, so the estimate is never shorter than the block. */
  retryAfterMs?: number;
}

export interface QueuedRequest {
  id: number;
  botId: string;
  roomToken: string;
  route: string;
  uid: string | null;
  replyTo: string | null;
  inboxPayload: unknown;
  attempts: number;
  createdAt: number;
}

export interface QueueStats {
  pending: number;
  processing: number;
  failed: number;
  expired: number;
}

export interface RequestQueueOptions {
  now?: () => number;
  /** Pending rows older than this expire (default 1 h). */
  expireAfterMs?: number;
  /** A processing row older than this was left by a crashed process (default 5 min). */
  staleAfterMs?: number;
  /** Attempts before a request fails for good (default 3). */
  maxAttempts?: number;
  /** Estimated wait per queued request ahead and including this one (default 2 s). */
  perItemMs?: number;
}

export const DEFAULT_QUEUE_TEMPLATE =
  "⏳ Your request is queued (position {position}, about {wait}). You'll get the answer here as soon as capacity is available.";
/** What a user whose request waited in the queue is told when it will not be answered. */
export const queueNotices = localized({
  en: {
    expired: '⚠️ Your request expired before capacity became available. Please send it again.',
    failed: '⚠️ Your request could not be processed after several attempts. Please try again later.',
    botGone: '⚠️ The bot is no longer available.',
  },
  de: {
    expired: '⚠️ Die Anfrage ist abgelaufen, bevor wieder Kapazität frei war. Bitte erneut senden.',
    failed: '⚠️ Die Anfrage konnte auch nach mehreren Versuchen nicht bearbeitet werden. Bitte später noch einmal versuchen.',
    botGone: '⚠️ Der Bot ist nicht mehr verfügbar.',
  },
});

// Singular and plural of each unit; German's dative after "in etwa" has the same forms.
const WAIT_UNITS = localized({
  en: { second: ['second', 'seconds'], minute: ['minute', 'minutes'], hour: ['hour', 'hours'] },
  de: { second: ['Sekunde', 'Sekunden'], minute: ['Minute', 'Minuten'], hour: ['Stunde', 'Stunden'] },
});

const QUEUE_TEMPLATE = localized({
  en: DEFAULT_QUEUE_TEMPLATE,
  de: '⏳ Die Anfrage steht in der Warteschlange (Position {position}, etwa {wait}). Die Antwort erscheint hier, sobald wieder Kapazität frei ist.',
});

function plural(n: number, unit: 'second' | 'minute' | 'hour'): string {
  const [one, many] = WAIT_UNITS()[unit];
  return `${n} ${n === 1 ? one : many}`;
}

/** "1 second", "45 seconds", "3 minutes", "1 hour 5 minutes" (rounded up, so never promising too early). */
export function humanizeWait(ms: number): string {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  if (seconds < 60) return plural(seconds, 'second');
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return plural(minutes, 'minute');
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? plural(hours, 'hour') : `${plural(hours, 'hour')} ${plural(rest, 'minute')}`;
}

/** The user-facing queue text; an admin template may use {position} and {wait}. */
export function renderQueueMessage(position: number, waitMs: number, template?: string | null): string {
  // The admin's own template is used as written; ours follows the turn's language.
  const text = template && template.trim() !== '' ? template : QUEUE_TEMPLATE();
  return text.replaceAll('{position}', String(position)).replaceAll('{wait}', humanizeWait(waitMs));
}

type Row = {
  id: number;
  bot_id: string;
  room_token: string;
  route: string;
  uid: string | null;
  reply_to: string | null;
  payload: string;
  attempts: number;
  created_at: number;
};

function toRequest(row: Row): QueuedRequest {
  return {
    id: row.id,
    botId: row.bot_id,
    roomToken: row.room_token,
    route: row.route,
    uid: row.uid,
    replyTo: row.reply_to,
    inboxPayload: JSON.parse(row.payload) as unknown,
    attempts: row.attempts,
    createdAt: row.created_at,
  };
}

/**
 * Durable queue of turns that hit a rate limit. Requests of one room run one
 * after another in arrival order; a processing row left behind by a crashed
 * process goes back to pending (recoverStale).
 */
export class RequestQueue {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #expireAfterMs: number;
  readonly #staleAfterMs: number;
  readonly #maxAttempts: number;
  readonly #perItemMs: number;

  constructor(db: Db, options: RequestQueueOptions = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
    this.#expireAfterMs = options.expireAfterMs ?? 3_600_000;
    this.#staleAfterMs = options.staleAfterMs ?? 300_000;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#perItemMs = options.perItemMs ?? 2_000;
  }

  async enqueue(input: NewQueuedRequest): Promise<{ id: number; position: number; estimatedWaitMs: number }> {
    const row = await this.#db
      .insertInto('request_queue')
      .values({
        bot_id: input.botId,
        room_token: input.roomToken,
        route: input.route,
        uid: input.uid,
        reply_to: input.replyTo,
        payload: JSON.stringify(input.inboxPayload ?? null),
        status: 'pending',
        last_error: null,
        created_at: this.#now(),
        claimed_at: null,
        finished_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const id = Number(row.id);
    const ahead = await this.#db
      .selectFrom('request_queue')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', 'in', ['pending', 'processing'])
      .where('id', '<=', id)
      .executeTakeFirstOrThrow();
    const position = Math.max(1, Number(ahead.n));
    const estimatedWaitMs = Math.max(input.retryAfterMs ?? 0, position * this.#perItemMs);
    return { id, position, estimatedWaitMs };
  }

  message(position: number, waitMs: number, template?: string | null): string {
    return renderQueueMessage(position, waitMs, template);
  }

  /**
   * Claims up to `limit` requests, oldest first: only the oldest unexpired
   * pending request of each room that has nothing in progress.
   */
  async claimReady(limit: number): Promise<QueuedRequest[]> {
    if (limit <= 0) return [];
    const now = this.#now();
    const freshFrom = now - this.#expireAfterMs;
    const candidates = await this.#db
      .selectFrom('request_queue as q')
      .select(['q.id', 'q.bot_id', 'q.room_token', 'q.route', 'q.uid', 'q.reply_to', 'q.payload', 'q.attempts', 'q.created_at'])
      .where('q.status', '=', 'pending')
      .where('q.created_at', '>=', freshFrom)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('request_queue as o')
              .select(sql<number>`1`.as('one'))
              .whereRef('o.room_token', '=', 'q.room_token')
              .where((eb) =>
                eb.or([
                  eb('o.status', '=', 'processing'),
                  eb.and([eb('o.status', '=', 'pending'), eb('o.created_at', '>=', freshFrom), eb('o.id', '<', eb.ref('q.id'))]),
                ]),
              ),
          ),
        ),
      )
      .orderBy('q.id')
      .limit(limit * 4)
      .execute();
    const claimed: QueuedRequest[] = [];
    for (const row of candidates) {
      if (claimed.length >= limit) break;
      if (claimed.some((c) => c.roomToken === row.room_token)) continue;
      const updated = await this.#db
        .updateTable('request_queue')
        .set({ status: 'processing', claimed_at: now })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) continue;
      claimed.push(toRequest(row));
    }
    return claimed;
  }

  /** Keeps a long-running claim from being taken for a crashed one. */
  async touch(id: number): Promise<void> {
    await this.#db.updateTable('request_queue').set({ claimed_at: this.#now() }).where('id', '=', id).where('status', '=', 'processing').execute();
  }

  /** The answer went out: the row is removed (nothing of the user's text is kept). */
  async complete(id: number): Promise<void> {
    await this.#db.deleteFrom('request_queue').where('id', '=', id).execute();
  }

  /**
   * Counts a failed attempt. Below the attempt limit the request goes back to
   * pending; at the limit it fails for good (final: tell the user).
   */
  async fail(id: number, reason: string): Promise<{ final: boolean; attempts: number } | null> {
    const row = await this.#db.selectFrom('request_queue').select(['attempts', 'status']).where('id', '=', id).executeTakeFirst();
    if (!row || (row.status !== 'processing' && row.status !== 'pending')) return null;
    const attempts = row.attempts + 1;
    const final = attempts >= this.#maxAttempts;
    const error = redactString(reason).slice(0, 1000);
    const updated = await this.#db
      .updateTable('request_queue')
      .set(
        final
          ? { status: 'failed', attempts, last_error: error, finished_at: this.#now(), payload: 'null', claimed_at: null }
          : { status: 'pending', attempts, last_error: error, claimed_at: null },
      )
      .where('id', '=', id)
      .where('attempts', '=', row.attempts)
      .where('status', '=', row.status)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) return null;
    return { final, attempts };
  }

  /**
   * Pending requests older than the expiry (1 h) become expired. Returns them
   * so the caller can tell each user (queueNotices().expired).
   */
  async expire(now: number = this.#now()): Promise<QueuedRequest[]> {
    const rows = await this.#db
      .selectFrom('request_queue')
      .select(['id', 'bot_id', 'room_token', 'route', 'uid', 'reply_to', 'payload', 'attempts', 'created_at'])
      .where('status', '=', 'pending')
      .where('created_at', '<', now - this.#expireAfterMs)
      .orderBy('id')
      .execute();
    const expired: QueuedRequest[] = [];
    for (const row of rows) {
      const r = await this.#db
        .updateTable('request_queue')
        .set({ status: 'expired', finished_at: now, payload: 'null' })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 1) expired.push(toRequest(row));
    }
    return expired;
  }

  /**
   * Processing rows claimed longer ago than the stale limit (a crashed
   * process) go back to pending with one more attempt; those that reach the
   * attempt limit fail and are returned so the user can be told.
   */
  async recoverStale(): Promise<{ requeued: number; failed: QueuedRequest[] }> {
    const now = this.#now();
    const rows = await this.#db
      .selectFrom('request_queue')
      .select(['id', 'bot_id', 'room_token', 'route', 'uid', 'reply_to', 'payload', 'attempts', 'created_at'])
      .where('status', '=', 'processing')
      .where('claimed_at', '<', now - this.#staleAfterMs)
      .orderBy('id')
      .execute();
    let requeued = 0;
    const failed: QueuedRequest[] = [];
    for (const row of rows) {
      const attempts = row.attempts + 1;
      const final = attempts >= this.#maxAttempts;
      const r = await this.#db
        .updateTable('request_queue')
        .set(
          final
            ? { status: 'failed', attempts, last_error: 'interrupted', finished_at: now, payload: 'null', claimed_at: null }
            : { status: 'pending', attempts, claimed_at: null },
        )
        .where('id', '=', row.id)
        .where('status', '=', 'processing')
        .where('attempts', '=', row.attempts)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) continue;
      if (final) failed.push({ ...toRequest(row), attempts });
      else requeued++;
    }
    return { requeued, failed };
  }

  async stats(): Promise<QueueStats> {
    const rows = await this.#db
      .selectFrom('request_queue')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    const stats: QueueStats = { pending: 0, processing: 0, failed: 0, expired: 0 };
    for (const r of rows) if (r.status in stats) stats[r.status] = Number(r.n);
    return stats;
  }

  /** The bot was deleted: drops its rows and returns the ones still waiting, so their users can be told. */
  async removeBot(botId: string): Promise<QueuedRequest[]> {
    return this.#db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('request_queue')
        .select(['id', 'bot_id', 'room_token', 'route', 'uid', 'reply_to', 'payload', 'attempts', 'created_at'])
        .where('bot_id', '=', botId)
        .where('status', 'in', ['pending', 'processing'])
        .orderBy('id')
        .execute();
      await trx.deleteFrom('request_queue').where('bot_id', '=', botId).execute();
      return rows.map(toRequest);
    });
  }

  /** Failed and expired rows are kept a while for the admin's counts, then dropped. */
  async purgeFinished(olderThanMs = 86_400_000): Promise<number> {
    const r = await this.#db
      .deleteFrom('request_queue')
      .where('status', 'in', ['failed', 'expired'])
      .where('finished_at', '<', this.#now() - olderThanMs)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
