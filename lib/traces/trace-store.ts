import { randomUUID } from 'node:crypto';
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import type { Database } from '../storage/schema.ts';

import type { TraceStatus, TraceTables } from '../storage/tables/trace-tables.ts';
import type {
  AdminTraceFilters,
  PendingRun,
  StartRunInput,
  TraceAuditEntry,
  TraceEvent,
  TraceEventInput,
  TraceFilters,
  TraceLogger,
  TraceRun,
  TraceRunMetadata,
  TraceStoreOptions,
} from './trace-types.ts';
import { clip, sanitizeText } from './trace-redaction.ts';
import { DAY_MS, RUN_PREVIEW_CHARS, eventRow, prepareEvent, toEvent, toMetadata, toRun, type PreparedEvent } from './trace-events.ts';

export type {
  TraceAuditTable,
  TraceEventsTable,
  TraceEventType,
  TraceRunsTable,
  TraceSource,
  TraceStatus,
  TraceTables,
} from '../storage/tables/trace-tables.ts';
export type * from './trace-types.ts';
export { sanitizeForTrace, sanitizeText } from './trace-redaction.ts';

type Db = Kysely<Database & TraceTables>;
type RunsEb = ExpressionBuilder<Database & TraceTables, 'trace_runs'>;

/** 'users/alice' and 'alice' are the same user. */
export function normalizeTraceUid(uid: string): string {
  return uid.startsWith('users/') ? uid.slice('users/'.length) : uid;
}

function escapeLike(text: string): string {
  return text.replace(/[!%_]/g, (c) => `!${c}`);
}

function normalizeMention(m: string): string {
  return m.trim().replace(/^[@/]/, '').toLowerCase();
}

/**
 * Per-turn traces ("Activity"): a run and its numbered events. Writes never
 * throw into the turn. Invokers see their own runs; admins see metadata, and
 * reading content as an admin leaves an audit entry (S11, S20).
 */
export class TraceStore {
  readonly #db: Db;
  readonly #now: () => number;
  readonly #log: TraceLogger | undefined;
  readonly #storeContent = new Map<string, boolean>();

  constructor(db: Db, options: TraceStoreOptions = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
    this.#log = options.logger;
  }

  /**
   * A run's row, ready but not written: TurnTrace writes it together with its
   * events and outcome when the turn ends quickly, or on its own once the turn
   * has run for a while (so that it shows as running). Null when it cannot be made.
   */
  newRun(input: StartRunInput): PendingRun | null {
    try {
      const store = input.storeToolContent === true;
      return {
        id: randomUUID(),
        storeContent: store,
        row: {
          uid: normalizeTraceUid(input.uid),
          bot_id: input.botId,
          bot_mention: clip(normalizeMention(input.botMention), 100),
          room_token: input.roomToken,
          message_id: input.messageId,
          source: input.source,
          preview: clip(sanitizeText(input.userText), RUN_PREVIEW_CHARS),
          store_tool_content: store ? 1 : 0,
          started_at: this.#now(),
        },
      };
    } catch (err) {
      this.#warn('startRun', err);
      return null;
    }
  }

  /** Writes a pending run as running; false when it could not be written (its events are then dropped). */
  async insertRun(run: PendingRun): Promise<boolean> {
    try {
      await this.#db
        .insertInto('trace_runs')
        .values({
          id: run.id,
          ...run.row,
          status: 'running',
          error_summary: null,
          finished_at: null,
          duration_ms: null,
          tool_call_count: 0,
          event_count: 0,
          prompt_tokens: 0,
          completion_tokens: 0,
          total_tokens: 0,
        })
        .execute();
      // A run that never finished (crash mid-turn) must not grow this cache forever.
      if (this.#storeContent.size > 10_000) this.#storeContent.clear();
      this.#storeContent.set(run.id, run.storeContent);
      return true;
    } catch (err) {
      this.#warn('startRun', err);
      return false;
    }
  }

  /** Returns the run id, or null when the trace could not be written (the turn goes on). */
  async startRun(input: StartRunInput): Promise<string | null> {
    const run = this.newRun(input);
    return run && (await this.insertRun(run)) ? run.id : null;
  }

  /**
   * A whole run that was never written: its row with the final counters and
   * status, and its events, in one transaction (a quick turn costs two
   * statements instead of four).
   */
  async writeRun(run: PendingRun, events: readonly TraceEventInput[], status: Exclude<TraceStatus, 'running'>, errorSummary: string | null): Promise<void> {
    try {
      const prepared = events.map((event) => prepareEvent(event, run.storeContent));
      const now = this.#now();
      const sum = (f: (e: PreparedEvent) => number) => prepared.reduce((n, e) => n + f(e), 0);
      const lastError = prepared.findLast((e) => e.errorSummary !== null)?.errorSummary ?? null;
      await this.#db.transaction().execute(async (trx) => {
        await trx
          .insertInto('trace_runs')
          .values({
            id: run.id,
            ...run.row,
            status,
            error_summary: errorSummary ? clip(sanitizeText(errorSummary), RUN_PREVIEW_CHARS) : lastError,
            finished_at: now,
            duration_ms: now - run.row.started_at,
            tool_call_count: sum((e) => (e.toolCall ? 1 : 0)),
            event_count: prepared.length,
            prompt_tokens: sum((e) => e.usage.prompt),
            completion_tokens: sum((e) => e.usage.completion),
            total_tokens: sum((e) => e.usage.total),
          })
          .execute();
        if (prepared.length > 0)
          await trx
            .insertInto('trace_events')
            .values(prepared.map((e, i) => eventRow(run.id, 1 + i, e, now)))
            .execute();
      });
    } catch (err) {
      this.#warn('finishRun', err);
    }
  }

  /** Appends one event; a null run id (tracing failed at start) is ignored. */
  async recordEvent(runId: string | null, event: TraceEventInput): Promise<void> {
    await this.recordEvents(runId, [event]);
  }

  /**
   * Appends events in order, in one transaction: one counter update and one
   * multi-row insert, so the processing thread holds the write lock once per
   * batch instead of once per event.
   */
  async recordEvents(runId: string | null, events: readonly TraceEventInput[]): Promise<void> {
    if (runId === null || events.length === 0) return;
    try {
      const store = this.#storeContent.get(runId) ?? (await this.#storesContent(runId));
      const prepared = events.map((event) => prepareEvent(event, store));
      const now = this.#now();
      const sum = (f: (e: PreparedEvent) => number) => prepared.reduce((n, e) => n + f(e), 0);
      const lastError = prepared.findLast((e) => e.errorSummary !== null)?.errorSummary ?? null;
      await this.#db.transaction().execute(async (trx) => {
        const run = await trx
          .updateTable('trace_runs')
          .set({
            event_count: sql`event_count + ${prepared.length}`,
            tool_call_count: sql`tool_call_count + ${sum((e) => (e.toolCall ? 1 : 0))}`,
            prompt_tokens: sql`prompt_tokens + ${sum((e) => e.usage.prompt)}`,
            completion_tokens: sql`completion_tokens + ${sum((e) => e.usage.completion)}`,
            total_tokens: sql`total_tokens + ${sum((e) => e.usage.total)}`,
            ...(lastError !== null ? { error_summary: lastError } : {}),
          })
          .where('id', '=', runId)
          .returning('event_count')
          .executeTakeFirst();
        if (!run) throw new Error('unknown trace run');
        const first = Number(run.event_count) - prepared.length + 1;
        await trx
          .insertInto('trace_events')
          .values(prepared.map((e, i) => eventRow(runId, first + i, e, now)))
          .execute();
      });
    } catch (err) {
      this.#warn('recordEvent', err);
    }
  }

  async finishRun(runId: string | null, status: Exclude<TraceStatus, 'running'>, errorSummary?: string | null): Promise<void> {
    if (runId === null) return;
    try {
      const now = this.#now();
      await this.#db
        .updateTable('trace_runs')
        .set({
          status,
          finished_at: now,
          duration_ms: sql`${now} - started_at`,
          ...(errorSummary ? { error_summary: clip(sanitizeText(errorSummary), RUN_PREVIEW_CHARS) } : {}),
        })
        .where('id', '=', runId)
        .execute();
    } catch (err) {
      this.#warn('finishRun', err);
    } finally {
      this.#storeContent.delete(runId);
    }
  }

  async listForUser(uid: string, filters: TraceFilters = {}): Promise<{ traces: TraceRun[]; total: number }> {
    const owner = normalizeTraceUid(uid);
    const conditions = (eb: RunsEb) => {
      const all: Expression<SqlBool>[] = [eb('uid', '=', owner), ...this.#common(eb, filters)];
      const q = filters.q?.trim();
      if (q) {
        const pattern = `%${escapeLike(q.toLowerCase())}%`;
        all.push(
          eb.or([
            sql<SqlBool>`lower(preview) like ${pattern} escape '!'`,
            sql<SqlBool>`lower(coalesce(error_summary, '')) like ${pattern} escape '!'`,
            sql<SqlBool>`lower(bot_mention) like ${pattern} escape '!'`,
          ]),
        );
      }
      return eb.and(all);
    };
    const { limit, offset } = page(filters);
    const rows = await this.#db
      .selectFrom('trace_runs')
      .selectAll()
      .where(conditions)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
    const total = await this.#db
      .selectFrom('trace_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(conditions)
      .executeTakeFirstOrThrow();
    return { traces: rows.map(toRun), total: Number(total.n) };
  }

  /** The run with its events, or null when it does not exist or belongs to someone else. */
  async getForUser(uid: string, runId: string): Promise<{ run: TraceRun; events: TraceEvent[] } | null> {
    const run = await this.#db.selectFrom('trace_runs').selectAll().where('id', '=', runId).where('uid', '=', normalizeTraceUid(uid)).executeTakeFirst();
    if (!run) return null;
    return { run: toRun(run), events: await this.#events(this.#db, runId) };
  }

  async deleteForUser(uid: string, runId: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const run = await trx.selectFrom('trace_runs').select('id').where('id', '=', runId).where('uid', '=', normalizeTraceUid(uid)).executeTakeFirst();
      if (!run) return false;
      await trx.deleteFrom('trace_events').where('run_id', '=', runId).execute();
      await trx.deleteFrom('trace_runs').where('id', '=', runId).execute();
      return true;
    });
  }

  async clearForUser(uid: string): Promise<{ runs: number; events: number }> {
    const owner = normalizeTraceUid(uid);
    return this.#db.transaction().execute(async (trx) => {
      const events = await trx
        .deleteFrom('trace_events')
        .where('run_id', 'in', trx.selectFrom('trace_runs').select('id').where('uid', '=', owner))
        .executeTakeFirst();
      const runs = await trx.deleteFrom('trace_runs').where('uid', '=', owner).executeTakeFirst();
      return { runs: Number(runs.numDeletedRows), events: Number(events.numDeletedRows) };
    });
  }

  /** Admin overview: metadata only, never previews, errors or events. */
  async listAll(filters: AdminTraceFilters = {}): Promise<{ traces: TraceRunMetadata[]; total: number }> {
    const conditions = (eb: RunsEb) => {
      const all: Expression<SqlBool>[] = this.#common(eb, filters);
      if (filters.uid) all.push(eb('uid', '=', normalizeTraceUid(filters.uid)));
      const q = filters.q?.trim();
      if (q) {
        const pattern = `%${escapeLike(q.toLowerCase())}%`;
        all.push(eb.or([sql<SqlBool>`lower(uid) like ${pattern} escape '!'`, sql<SqlBool>`lower(bot_mention) like ${pattern} escape '!'`]));
      }
      return eb.and(all);
    };
    const { limit, offset } = page(filters);
    const rows = await this.#db
      .selectFrom('trace_runs')
      .selectAll()
      .where(conditions)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
    const total = await this.#db
      .selectFrom('trace_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(conditions)
      .executeTakeFirstOrThrow();
    return { traces: rows.map(toMetadata), total: Number(total.n) };
  }

  /** An admin reads a run's content: the audit entry is written in the same transaction, before the read. */
  async readContentAsAdmin(adminUid: string, runId: string): Promise<{ run: TraceRun; events: TraceEvent[] } | null> {
    return this.#db.transaction().execute(async (trx) => {
      const run = await trx.selectFrom('trace_runs').selectAll().where('id', '=', runId).executeTakeFirst();
      if (!run) return null;
      await trx
        .insertInto('trace_audit')
        .values({ admin_uid: normalizeTraceUid(adminUid), run_id: runId, owner_uid: run.uid, at: this.#now() })
        .execute();
      return { run: toRun(run), events: await this.#events(trx, runId) };
    });
  }

  /** Newest first; filter by run or by the user whose run was read. */
  async auditLog(filters: { runId?: string; ownerUid?: string; limit?: number; offset?: number } = {}): Promise<TraceAuditEntry[]> {
    let q = this.#db.selectFrom('trace_audit').selectAll();
    if (filters.runId) q = q.where('run_id', '=', filters.runId);
    if (filters.ownerUid) q = q.where('owner_uid', '=', normalizeTraceUid(filters.ownerUid));
    const { limit, offset } = page({ limit: filters.limit ?? 100, offset: filters.offset ?? 0 });
    const rows = await q.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
    return rows.map((r) => ({ id: Number(r.id), adminUid: r.admin_uid, runId: r.run_id, ownerUid: r.owner_uid, at: r.at }));
  }

  /** Deletes runs started more than `retentionDays` ago, with their events. */
  async prune(retentionDays = 30): Promise<{ runs: number; events: number }> {
    const cutoff = this.#now() - retentionDays * DAY_MS;
    return this.#db.transaction().execute(async (trx) => {
      const events = await trx
        .deleteFrom('trace_events')
        .where('run_id', 'in', trx.selectFrom('trace_runs').select('id').where('started_at', '<', cutoff))
        .executeTakeFirst();
      const runs = await trx.deleteFrom('trace_runs').where('started_at', '<', cutoff).executeTakeFirst();
      return { runs: Number(runs.numDeletedRows), events: Number(events.numDeletedRows) };
    });
  }

  /** The bot was deleted: its runs stay for their users, without the bot id. */
  async removeBot(botId: string): Promise<number> {
    const r = await this.#db.updateTable('trace_runs').set({ bot_id: null }).where('bot_id', '=', botId).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  #common(eb: RunsEb, f: Omit<TraceFilters, 'q'>): Expression<SqlBool>[] {
    const all: Expression<SqlBool>[] = [];
    if (f.status) all.push(eb('status', '=', f.status));
    if (f.botId) all.push(eb('bot_id', '=', f.botId));
    if (f.botMention) all.push(eb('bot_mention', '=', normalizeMention(f.botMention)));
    if (typeof f.from === 'number') all.push(eb('started_at', '>=', f.from));
    if (typeof f.to === 'number') all.push(eb('started_at', '<=', f.to));
    if (f.onlyErrors) all.push(eb.or([eb('status', '=', 'error'), eb('error_summary', 'is not', null)]));
    if (f.onlyWithTools) all.push(eb('tool_call_count', '>', 0));
    return all;
  }

  async #events(q: Db, runId: string): Promise<TraceEvent[]> {
    const rows = await q
      .selectFrom('trace_events')
      .select(['seq', 'type', 'tool_name', 'status', 'duration_ms', 'payload', 'preview', 'created_at'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
    return rows.map(toEvent);
  }

  async #storesContent(runId: string): Promise<boolean> {
    const row = await this.#db.selectFrom('trace_runs').select('store_tool_content').where('id', '=', runId).executeTakeFirst();
    const store = row?.store_tool_content === 1;
    if (row) this.#storeContent.set(runId, store);
    return store;
  }

  #warn(op: string, err: unknown): void {
    try {
      this.#log?.warn({ op, err: err instanceof Error ? { type: err.name, message: err.message } : String(err) }, 'trace write failed');
    } catch {
      // Logging must not break the turn either.
    }
  }
}

function page(f: { limit?: number; offset?: number }): { limit: number; offset: number } {
  const limit = Math.min(100, Math.max(1, Math.floor(f.limit ?? 25)));
  const offset = Math.max(0, Math.floor(f.offset ?? 0));
  return { limit: Number.isFinite(limit) ? limit : 25, offset: Number.isFinite(offset) ? offset : 0 };
}
