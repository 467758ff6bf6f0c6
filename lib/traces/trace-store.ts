import { createHash, randomUUID } from 'node:crypto';
import { sql, type Expression, type ExpressionBuilder, type Generated, type Kysely, type SqlBool } from 'kysely';
import { REDACTED, redactValue } from '../log/redact.ts';
import type { Database } from '../storage/schema.ts';

import type { TraceEventType, TraceRunsTable, TraceSource, TraceStatus, TraceTables } from './trace-tables.ts';

export type { TraceAuditTable, TraceEventsTable, TraceEventType, TraceRunsTable, TraceSource, TraceStatus, TraceTables } from './trace-tables.ts';

type Db = Kysely<Database & TraceTables>;
type RunsEb = ExpressionBuilder<Database & TraceTables, 'trace_runs'>;

export interface StartRunInput {
  uid: string;
  botId: string | null;
  botMention: string;
  roomToken: string | null;
  messageId: string | null;
  source: TraceSource;
  /** The invoker's own message; only a redacted preview is kept. */
  userText: string;
  /** The invoker's opt-in to keep tool results in full (S20). */
  storeToolContent?: boolean;
}

export interface ChatMessageLike {
  role: string;
  content?: unknown;
}

export interface TokenUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
}

export type TraceEventInput =
  | { type: 'user_message'; text: string }
  | { type: 'llm_request'; model?: string | null; messages: readonly ChatMessageLike[]; tools?: readonly unknown[] }
  | {
      type: 'llm_response';
      model?: string | null;
      usage?: TokenUsage | null;
      finishReason?: string | null;
      content?: string | null;
      toolCalls?: readonly { name: string }[];
      durationMs?: number | null;
    }
  | { type: 'tool_call'; toolName: string; args: unknown }
  | { type: 'tool_result'; toolName: string; result: unknown; isError?: boolean; durationMs?: number | null }
  | { type: 'error'; stage: string; message: string }
  | { type: 'assistant_response'; text: string };

export interface TraceRunMetadata {
  id: string;
  uid: string;
  botId: string | null;
  botMention: string;
  roomToken: string | null;
  messageId: string | null;
  source: TraceSource;
  status: TraceStatus;
  storeToolContent: boolean;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  toolCallCount: number;
  eventCount: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface TraceRun extends TraceRunMetadata {
  preview: string;
  errorSummary: string | null;
}

export interface TraceEvent {
  seq: number;
  type: TraceEventType;
  toolName: string | null;
  status: string | null;
  durationMs: number | null;
  payload: unknown;
  preview: string | null;
  createdAt: number;
}

export interface TraceFilters {
  /** Case-insensitive text in the preview, the error summary or the mention. */
  q?: string | null;
  status?: TraceStatus | null;
  botId?: string | null;
  botMention?: string | null;
  /** started_at bounds in ms, inclusive. */
  from?: number | null;
  to?: number | null;
  onlyErrors?: boolean;
  onlyWithTools?: boolean;
  /** 1..100, default 25. */
  limit?: number;
  offset?: number;
}

export interface AdminTraceFilters extends Omit<TraceFilters, 'q'> {
  uid?: string | null;
  /** Case-insensitive text in the uid or the mention (never in content). */
  q?: string | null;
}

export interface TraceAuditEntry {
  id: number;
  adminUid: string;
  runId: string;
  ownerUid: string;
  at: number;
}

export interface TraceLogger {
  warn(obj: object, msg?: string): void;
}

export interface TraceStoreOptions {
  now?: () => number;
  logger?: TraceLogger;
}

const RUN_PREVIEW_CHARS = 500;
const EVENT_PREVIEW_CHARS = 1000;
const ERROR_CHARS = 1000;
const TOOL_CONTENT_CHARS = 64 * 1024;
const DAY_MS = 86_400_000;

// Credentials recognised by their shape, on top of the key-name and registered-secret redaction.
const VALUE_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  // Nextcloud app passwords: five groups of five.
  /\b[A-Za-z0-9]{5}(?:-[A-Za-z0-9]{5}){4}\b/g,
];
const HEADER_LINE = /\b(proxy-authorization|authorization|x-api-key|api[-_]?key|set-cookie|cookie)(["']?\s*[:=]\s*)(["']?)([^"'\r\n,}]+)\3/gi;

function redactPatterns(text: string): string {
  let out = text.replace(HEADER_LINE, (_m, name: string, sep: string, quote: string) => `${name}${sep}${quote}${REDACTED}${quote}`);
  for (const p of VALUE_PATTERNS) out = out.replace(p, REDACTED);
  return out;
}

function mapStrings(value: unknown, fn: (s: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return fn(value);
  if (value === null || typeof value !== 'object' || depth > 14) return value;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = mapStrings(v, fn, depth + 1);
  return out;
}

/** Key-name, registered-secret, Bearer/Basic and credential-shape redaction (S20). */
export function sanitizeForTrace(value: unknown): unknown {
  return mapStrings(redactValue(value), redactPatterns);
}

export function sanitizeText(text: string): string {
  return sanitizeForTrace(text) as string;
}

/** Cuts to n UTF-16 units without leaving half a surrogate pair. */
function clip(text: string, n: number): string {
  if (text.length <= n) return text;
  const cut = text.slice(0, n);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/** 'users/alice' and 'alice' are the same user. */
export function normalizeTraceUid(uid: string): string {
  return uid.startsWith('users/') ? uid.slice('users/'.length) : uid;
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

function toolNameOf(tool: unknown): string | null {
  if (typeof tool === 'string') return tool;
  if (tool && typeof tool === 'object') {
    const t = tool as { name?: unknown; function?: { name?: unknown } };
    if (typeof t.name === 'string') return t.name;
    if (typeof t.function?.name === 'string') return t.function.name;
  }
  return null;
}

function count(n: number | null | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

interface PreparedEvent {
  type: TraceEventType;
  toolName: string | null;
  status: string | null;
  durationMs: number | null;
  payload: unknown;
  preview: string | null;
  errorSummary: string | null;
  usage: { prompt: number; completion: number; total: number };
  toolCall: boolean;
}

/** Reduces an event to what a trace may keep (S11, S20). Payloads are redacted once, where they are written (eventRow). */
function prepareEvent(e: TraceEventInput, storeToolContent: boolean): PreparedEvent {
  const base: PreparedEvent = {
    type: e.type,
    toolName: null,
    status: null,
    durationMs: null,
    payload: {},
    preview: null,
    errorSummary: null,
    usage: { prompt: 0, completion: 0, total: 0 },
    toolCall: false,
  };
  switch (e.type) {
    case 'user_message':
    case 'assistant_response': {
      const text = sanitizeText(e.text);
      return { ...base, payload: { length: e.text.length }, preview: clip(text, EVENT_PREVIEW_CHARS) };
    }
    case 'llm_request': {
      // Counts and sizes only: a system prompt or retrieved context never reaches a trace.
      const byRole: Record<string, { count: number; chars: number }> = {};
      let chars = 0;
      for (const m of e.messages) {
        const size = asText(m.content ?? '').length;
        chars += size;
        const slot = (byRole[m.role] ??= { count: 0, chars: 0 });
        slot.count++;
        slot.chars += size;
      }
      const tools = (e.tools ?? []).map(toolNameOf).filter((n): n is string => n !== null);
      return { ...base, payload: { model: e.model ?? null, messageCount: e.messages.length, totalChars: chars, byRole, tools } };
    }
    case 'llm_response': {
      const usage = { prompt: count(e.usage?.prompt_tokens), completion: count(e.usage?.completion_tokens), total: count(e.usage?.total_tokens) };
      if (usage.total === 0) usage.total = usage.prompt + usage.completion;
      const payload = {
        model: e.model ?? null,
        finishReason: e.finishReason ?? null,
        usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.total },
        contentLength: e.content?.length ?? 0,
        toolCalls: (e.toolCalls ?? []).map((c) => c.name),
      };
      return { ...base, durationMs: e.durationMs ?? null, payload, usage };
    }
    case 'tool_call': {
      const text = asText(e.args);
      const args = e.args && typeof e.args === 'object' && !Array.isArray(e.args) ? Object.keys(e.args) : [];
      const payload: Record<string, unknown> = { argumentNames: args, size: Buffer.byteLength(text), sha256: sha256(text) };
      // Redacted here too: below the payload's root, the depth limit of the write-time pass would stop earlier.
      if (storeToolContent) payload.arguments = sanitizeForTrace(e.args);
      return { ...base, toolName: clip(e.toolName, 128), payload, toolCall: true };
    }
    case 'tool_result': {
      const text = asText(e.result);
      const payload: Record<string, unknown> = { size: Buffer.byteLength(text), sha256: sha256(text), isError: e.isError === true };
      let preview: string | null = null;
      if (storeToolContent) {
        const kept = clip(sanitizeText(text), TOOL_CONTENT_CHARS);
        payload.content = kept;
        payload.truncated = kept.length < text.length;
        preview = clip(kept, EVENT_PREVIEW_CHARS);
      }
      return {
        ...base,
        toolName: clip(e.toolName, 128),
        status: e.isError ? 'error' : 'ok',
        durationMs: e.durationMs ?? null,
        payload,
        preview,
      };
    }
    case 'error': {
      const message = clip(sanitizeText(e.message), ERROR_CHARS);
      const stage = clip(sanitizeText(e.stage), 64);
      return { ...base, status: 'error', payload: { stage, message }, preview: message, errorSummary: clip(`${stage}: ${message}`, RUN_PREVIEW_CHARS) };
    }
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function escapeLike(text: string): string {
  return text.replace(/[!%_]/g, (c) => `!${c}`);
}

function toMetadata(r: TraceRunsTable): TraceRunMetadata {
  return {
    id: r.id,
    uid: r.uid,
    botId: r.bot_id,
    botMention: r.bot_mention,
    roomToken: r.room_token,
    messageId: r.message_id,
    source: r.source,
    status: r.status,
    storeToolContent: r.store_tool_content === 1,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    durationMs: r.duration_ms,
    toolCallCount: r.tool_call_count,
    eventCount: r.event_count,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    totalTokens: r.total_tokens,
  };
}

function toRun(r: TraceRunsTable): TraceRun {
  return { ...toMetadata(r), preview: r.preview, errorSummary: r.error_summary };
}

function toEvent(e: { seq: number; type: TraceEventType; tool_name: string | null; status: string | null; duration_ms: number | null; payload: string; preview: string | null; created_at: number }): TraceEvent {
  let payload: unknown;
  try {
    payload = JSON.parse(e.payload);
  } catch {
    payload = null;
  }
  return { seq: e.seq, type: e.type, toolName: e.tool_name, status: e.status, durationMs: e.duration_ms, payload, preview: e.preview, createdAt: e.created_at };
}

function normalizeMention(m: string): string {
  return m.trim().replace(/^[@/]/, '').toLowerCase();
}

/** A run made by TraceStore.newRun and not written yet. */
export interface PendingRun {
  readonly id: string;
  readonly storeContent: boolean;
  /** The columns known when the turn starts; the outcome and counters come when it is written. */
  readonly row: Pick<TraceRunsTable, 'uid' | 'bot_id' | 'bot_mention' | 'room_token' | 'message_id' | 'source' | 'preview' | 'store_tool_content' | 'started_at'>;
}

function eventRow(runId: string, seq: number, e: PreparedEvent, now: number) {
  return {
    run_id: runId,
    seq,
    type: e.type,
    tool_name: e.toolName,
    status: e.status,
    duration_ms: e.durationMs === null ? null : Math.round(e.durationMs),
    payload: JSON.stringify(sanitizeForTrace(e.payload)),
    preview: e.preview,
    created_at: now,
  };
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
        .values({ id: run.id, ...run.row, status: 'running', error_summary: null, finished_at: null, duration_ms: null, tool_call_count: 0, event_count: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 })
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
        if (prepared.length > 0) await trx.insertInto('trace_events').values(prepared.map((e, i) => eventRow(run.id, 1 + i, e, now))).execute();
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
    const rows = await this.#db.selectFrom('trace_runs').selectAll().where(conditions).orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
    const total = await this.#db.selectFrom('trace_runs').select((eb) => eb.fn.countAll<number>().as('n')).where(conditions).executeTakeFirstOrThrow();
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
    const rows = await this.#db.selectFrom('trace_runs').selectAll().where(conditions).orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
    const total = await this.#db.selectFrom('trace_runs').select((eb) => eb.fn.countAll<number>().as('n')).where(conditions).executeTakeFirstOrThrow();
    return { traces: rows.map(toMetadata), total: Number(total.n) };
  }

  /** An admin reads a run's content: the audit entry is written in the same transaction, before the read. */
  async readContentAsAdmin(adminUid: string, runId: string): Promise<{ run: TraceRun; events: TraceEvent[] } | null> {
    return this.#db.transaction().execute(async (trx) => {
      const run = await trx.selectFrom('trace_runs').selectAll().where('id', '=', runId).executeTakeFirst();
      if (!run) return null;
      await trx.insertInto('trace_audit').values({ admin_uid: normalizeTraceUid(adminUid), run_id: runId, owner_uid: run.uid, at: this.#now() }).execute();
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
