// The audit trail of tool calls: mode, profile, who triggered it, as whom it ran, bot, room, tool,
// a hash of the arguments (never the arguments) and the outcome. Kept for an admin-set period.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { canonicalJson } from '../validation/canonical-json.ts';
import { redactString } from '../log/redact.ts';
import type { Database } from '../storage/schema.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import type { AuditOutcome, AuditRecord } from '../tools/audit-record.ts';

export const AUDIT_RETENTION_KEY = 'audit.retention-days';
export const DEFAULT_AUDIT_RETENTION_DAYS = 90;
const DAY = 24 * 3600_000;
const MAX_DETAIL = 300;

/** A stored record: the arguments only as their hash (S20). */
export interface AuditEntry extends Omit<AuditRecord, 'args' | 'detail' | 'traceId'> {
  id: string;
  at: number;
  argsHash: string;
  detail: string;
}

export interface AuditFilters {
  botId?: string;
  /** Invoker or acting account. */
  uid?: string;
  profileId?: string;
  mode?: 'user' | 'agent';
  tool?: string;
  outcome?: AuditOutcome;
  from?: number;
  to?: number;
  limit?: number;
  /** Cursor: the `next` of the previous page. */
  before?: string;
}

export function argsHash(args: unknown): string {
  let text: string;
  try {
    text = canonicalJson(args ?? {});
  } catch {
    text = JSON.stringify(String(args));
  }
  return createHash('sha256').update(text).digest('hex');
}

/** First line, redacted, short: what an admin needs to see, no payloads. */
export function auditDetail(text: string | undefined): string {
  const line = redactString((text ?? '').split(/\r?\n/)[0] ?? '').trim();
  return line.length > MAX_DETAIL ? `${line.slice(0, MAX_DETAIL - 3)}...` : line;
}

export class ToolAudit {
  readonly #db: Kysely<Database>;
  readonly #settings: SettingsStore;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, settings: SettingsStore, now: () => number = Date.now) {
    this.#db = db;
    this.#settings = settings;
    this.#now = now;
  }

  async record(r: AuditRecord): Promise<void> {
    await this.#db
      .insertInto('tool_audit')
      .values({
        at: this.#now(),
        mode: r.mode,
        profile_id: r.profileId,
        invoker_uid: r.invokerUid,
        acting_uid: r.actingUid,
        bot_id: r.botId.slice(0, 36),
        room_token: r.roomToken?.slice(0, 64) ?? null,
        tool: r.tool.slice(0, 64),
        args_hash: argsHash(r.args),
        outcome: r.outcome,
        detail: auditDetail(r.detail),
        trace_id: r.traceId?.slice(0, 64) ?? null,
      } as never)
      .execute();
  }

  async query(f: AuditFilters): Promise<{ entries: AuditEntry[]; next: string | null }> {
    const limit = Math.min(Math.max(f.limit ?? 50, 1), 200);
    let q = this.#db.selectFrom('tool_audit').selectAll();
    if (f.botId !== undefined) q = q.where('bot_id', '=', f.botId);
    if (f.uid !== undefined) q = q.where((eb) => eb.or([eb('invoker_uid', '=', f.uid as string), eb('acting_uid', '=', f.uid as string)]));
    if (f.profileId !== undefined) q = q.where('profile_id', '=', f.profileId);
    if (f.mode !== undefined) q = q.where('mode', '=', f.mode);
    if (f.tool !== undefined) q = q.where('tool', '=', f.tool);
    if (f.outcome !== undefined) q = q.where('outcome', '=', f.outcome);
    if (f.from !== undefined) q = q.where('at', '>=', f.from);
    if (f.to !== undefined) q = q.where('at', '<=', f.to);
    if (f.before !== undefined && /^\d{1,15}$/.test(f.before)) q = q.where('id', '<', Number(f.before));
    const rows = await q
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
    const page = rows.slice(0, limit);
    const entries = page.map((r) => ({
      id: String(r.id),
      at: Number(r.at),
      mode: r.mode,
      profileId: r.profile_id,
      invokerUid: r.invoker_uid,
      actingUid: r.acting_uid,
      botId: r.bot_id,
      roomToken: r.room_token,
      tool: r.tool,
      argsHash: r.args_hash,
      outcome: r.outcome,
      detail: r.detail,
    }));
    return { entries, next: rows.length > limit ? String(page[page.length - 1]?.id) : null };
  }

  async retentionDays(): Promise<number> {
    const days = await this.#settings.get<number>(AUDIT_RETENTION_KEY);
    return typeof days === 'number' && Number.isInteger(days) && days >= 1 ? days : DEFAULT_AUDIT_RETENTION_DAYS;
  }

  async setRetentionDays(days: number): Promise<void> {
    await this.#settings.set(AUDIT_RETENTION_KEY, days);
  }

  /** Deletes entries older than the retention period. */
  async prune(): Promise<number> {
    const before = this.#now() - (await this.retentionDays()) * DAY;
    const r = await this.#db.deleteFrom('tool_audit').where('at', '<', before).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
