import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../storage/migrations/dialect.ts';
import type { Database } from '../storage/schema.ts';
import type { RateLimitProviderStateTable, RateLimitTables } from '../storage/tables/rate-limit-tables.ts';

export type { RateLimitCountersTable, RateLimitProviderStateTable, RateLimitTables } from '../storage/tables/rate-limit-tables.ts';

export type RateScope = 'chat' | 'embeddings';
export type RateWindow = 'second' | 'minute' | 'hour' | 'day';
export type RateLevel = 'instance' | 'user' | 'guest-room';

/** Units per window; null or absent = unlimited. */
export interface WindowLimits {
  second?: number | null;
  minute?: number | null;
  hour?: number | null;
  day?: number | null;
}

export interface ScopeLimits {
  /** Shared by every caller of the instance, guests included. */
  instance: WindowLimits;
  /** Each local user's own bucket. */
  user: WindowLimits;
  /** The bucket all guests and federated users of one room share (S4); null or absent = the per-user limits. */
  guestRoom?: WindowLimits | null;
}

export interface RateLimitSettings {
  /** false: every call passes and nothing is counted. */
  enabled: boolean;
  chat: ScopeLimits;
  /** Embedding calls have their own, separate limits. */
  embeddings: ScopeLimits;
}

export interface RateKey {
  scope: RateScope;
  /** The local user; null for guests, federated users and background work. */
  uid: string | null;
  /** The room token when the actor is a guest or federated user (S4), else null. */
  guestRoom: string | null;
}

export type AcquireResult =
  | { ok: true }
  | {
      ok: false;
      retryAfterMs: number;
      window: RateWindow;
      level: RateLevel;
      /** 'provider' when the provider's own headers said it has no capacity left. */
      source: 'limit' | 'provider';
    };

export interface WindowStatus {
  window: RateWindow;
  limit: number | null;
  used: number;
  resetsAt: number;
}

export interface ProviderStatus {
  remaining: number | null;
  blockedUntil: number | null;
  blocked: boolean;
  observedAt: number;
}

export interface ScopeStatus {
  instance: WindowStatus[];
  /** Present when status() was asked about a user. */
  user?: WindowStatus[];
  /** Present when status() was asked about a guest room. */
  guestRoom?: WindowStatus[];
  provider: ProviderStatus | null;
}

export interface RateLimitStatus {
  enabled: boolean;
  at: number;
  chat: ScopeStatus;
  embeddings: ScopeStatus;
}

type Db = Kysely<Database & RateLimitTables>;

export const WINDOWS: readonly RateWindow[] = ['second', 'minute', 'hour', 'day'];
export const WINDOW_MS: Readonly<Record<RateWindow, number>> = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** A provider saying "0 left" without saying until when. */
const UNKNOWN_RESET_MS = 1_000;
const MAX_LOCK_ATTEMPTS = 8;

/** Fixed windows aligned to the clock (UTC for the day), so every window resets, the day window too. */
export function windowStart(window: RateWindow, now: number): number {
  const size = WINDOW_MS[window];
  return Math.floor(now / size) * size;
}

function windowForDelay(ms: number): RateWindow {
  if (ms <= WINDOW_MS.second) return 'second';
  if (ms <= WINDOW_MS.minute) return 'minute';
  if (ms <= WINDOW_MS.hour) return 'hour';
  return 'day';
}

interface Bucket {
  level: RateLevel;
  subject: string;
  limits: WindowLimits;
}

function bucketsFor(key: RateKey, limits: ScopeLimits): Bucket[] {
  const buckets: Bucket[] = [{ level: 'instance', subject: '', limits: limits.instance }];
  if (key.guestRoom !== null) buckets.push({ level: 'guest-room', subject: key.guestRoom, limits: limits.guestRoom ?? limits.user });
  else if (key.uid !== null) buckets.push({ level: 'user', subject: key.uid, limits: limits.user });
  return buckets;
}

function limitOf(limits: WindowLimits, window: RateWindow): number | null {
  const v = limits[window];
  return v === null || v === undefined ? null : Math.max(0, Math.floor(v));
}

function isTransientLockError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001' || code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
}

/**
 * Fixed-window limits per model call, instance-wide and per user (guests share
 * one bucket per room, S4), for chat and embeddings separately. Counters live
 * in the database, and every acquisition locks its rows (FOR UPDATE on
 * PostgreSQL, BEGIN IMMEDIATE on SQLite), so processes never both take the last unit.
 */
export class RateLimiter {
  readonly #db: Db;
  readonly #settings: () => Promise<RateLimitSettings>;
  readonly #now: () => number;
  readonly #pg: boolean;

  constructor(db: Db, settings: () => Promise<RateLimitSettings>, now: () => number = Date.now) {
    this.#db = db;
    this.#settings = settings;
    this.#now = now;
    this.#pg = isPostgres(db as Kysely<unknown>);
  }

  /** Takes one unit from every bucket that applies, or none when any window is exhausted. */
  async tryAcquire(key: RateKey): Promise<AcquireResult> {
    const settings = await this.#settings();
    if (!settings.enabled) return { ok: true };
    const now = this.#now();
    const provider = await this.#providerRow(key.scope);
    if (provider?.blocked_until != null && provider.blocked_until > now) {
      const retryAfterMs = provider.blocked_until - now;
      return { ok: false, retryAfterMs, window: windowForDelay(retryAfterMs), level: 'instance', source: 'provider' };
    }
    const buckets = bucketsFor(key, settings[key.scope]);
    await this.#ensureRows(key.scope, buckets, now);
    return this.#locked(async (q) => {
      let rowsQuery = q
        .selectFrom('rate_limit_counters')
        .selectAll()
        .where('scope', '=', key.scope)
        .where((eb) => eb.or(buckets.map((b) => eb.and([eb('level', '=', b.level), eb('subject', '=', b.subject)]))))
        .orderBy('level')
        .orderBy('subject')
        .orderBy('win');
      if (this.#pg) rowsQuery = rowsQuery.forUpdate();
      const rows = await rowsQuery.execute();
      const find = (b: Bucket, w: RateWindow) => rows.find((r) => r.level === b.level && r.subject === b.subject && r.win === w);
      let denied: Extract<AcquireResult, { ok: false }> | null = null;
      for (const b of buckets) {
        for (const w of WINDOWS) {
          const limit = limitOf(b.limits, w);
          if (limit === null) continue;
          const start = windowStart(w, now);
          const row = find(b, w);
          const used = row && row.window_start === start ? row.used : 0;
          if (used < limit) continue;
          const retryAfterMs = start + WINDOW_MS[w] - now;
          if (!denied || retryAfterMs > denied.retryAfterMs) denied = { ok: false, retryAfterMs, window: w, level: b.level, source: 'limit' };
        }
      }
      if (denied) return denied;
      for (const b of buckets) {
        for (const w of WINDOWS) {
          const start = windowStart(w, now);
          const row = find(b, w);
          const used = row && row.window_start === start ? row.used + 1 : 1;
          await q
            .updateTable('rate_limit_counters')
            .set({ used, window_start: start, updated_at: now })
            .where('scope', '=', key.scope)
            .where('level', '=', b.level)
            .where('subject', '=', b.subject)
            .where('win', '=', w)
            .execute();
        }
      }
      return { ok: true } as const;
    });
  }

  /**
   * Learns from a provider response: "0 remaining until T" (OpenAI's
   * x-ratelimit-*, IETF ratelimit-*, per-window x-ratelimit-remaining-<window>)
   * or retry-after blocks the scope until T. The latest observation wins.
   */
  async observeProviderHeaders(scope: RateScope, headers: Record<string, string>): Promise<void> {
    const now = this.#now();
    const observed = parseProviderHeaders(headers, now);
    if (!observed) return;
    await this.#db
      .insertInto('rate_limit_provider_state')
      .values({ scope, remaining: observed.remaining, blocked_until: observed.blockedUntil, observed_at: now })
      .onConflict((oc) => oc.column('scope').doUpdateSet({ remaining: observed.remaining, blocked_until: observed.blockedUntil, observed_at: now }))
      .execute();
  }

  /** For the admin: per window limit, use and reset, plus what the provider said. */
  async status(about: { uid?: string | null; guestRoom?: string | null } = {}): Promise<RateLimitStatus> {
    const settings = await this.#settings();
    const now = this.#now();
    const rows = await this.#db
      .selectFrom('rate_limit_counters')
      .selectAll()
      .where((eb) => {
        const levels = [eb.and([eb('level', '=', 'instance'), eb('subject', '=', '')])];
        if (about.uid) levels.push(eb.and([eb('level', '=', 'user'), eb('subject', '=', about.uid)]));
        if (about.guestRoom) levels.push(eb.and([eb('level', '=', 'guest-room'), eb('subject', '=', about.guestRoom)]));
        return eb.or(levels);
      })
      .execute();
    const providers = await this.#db.selectFrom('rate_limit_provider_state').selectAll().execute();
    const windows = (scope: RateScope, level: RateLevel, subject: string, limits: WindowLimits): WindowStatus[] =>
      WINDOWS.map((w) => {
        const start = windowStart(w, now);
        const row = rows.find((r) => r.scope === scope && r.level === level && r.subject === subject && r.win === w);
        return { window: w, limit: limitOf(limits, w), used: row && row.window_start === start ? row.used : 0, resetsAt: start + WINDOW_MS[w] };
      });
    const scopeStatus = (scope: RateScope): ScopeStatus => {
      const limits = settings[scope];
      const p = providers.find((r) => r.scope === scope);
      const out: ScopeStatus = {
        instance: windows(scope, 'instance', '', limits.instance),
        provider: p
          ? { remaining: p.remaining, blockedUntil: p.blocked_until, blocked: p.blocked_until !== null && p.blocked_until > now, observedAt: p.observed_at }
          : null,
      };
      if (about.uid) out.user = windows(scope, 'user', about.uid, limits.user);
      if (about.guestRoom) out.guestRoom = windows(scope, 'guest-room', about.guestRoom, limits.guestRoom ?? limits.user);
      return out;
    };
    return { enabled: settings.enabled, at: now, chat: scopeStatus('chat'), embeddings: scopeStatus('embeddings') };
  }

  /** Drops counters untouched for longer than a day window (users and rooms come and go). */
  async pruneIdle(): Promise<number> {
    const r = await this.#db
      .deleteFrom('rate_limit_counters')
      .where('updated_at', '<', this.#now() - 2 * WINDOW_MS.day)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async #providerRow(scope: RateScope): Promise<RateLimitProviderStateTable | undefined> {
    return this.#db.selectFrom('rate_limit_provider_state').selectAll().where('scope', '=', scope).executeTakeFirst();
  }

  // Outside the locked section, so that inserts of new rows never hold locks in different orders.
  async #ensureRows(scope: RateScope, buckets: Bucket[], now: number): Promise<void> {
    const values = buckets.flatMap((b) =>
      WINDOWS.map((w) => ({ scope, level: b.level, subject: b.subject, win: w, window_start: windowStart(w, now), used: 0, updated_at: now })),
    );
    await this.#retrying(() =>
      this.#db
        .insertInto('rate_limit_counters')
        .values(values)
        .onConflict((oc) => oc.columns(['scope', 'level', 'subject', 'win']).doNothing())
        .execute(),
    );
  }

  async #locked<T>(fn: (q: Db) => Promise<T>): Promise<T> {
    if (this.#pg) return this.#retrying(() => this.#db.transaction().execute((trx) => fn(trx)));
    return this.#retrying(() =>
      this.#db.connection().execute(async (conn) => {
        // IMMEDIATE takes the write lock up front; a deferred read-then-write could fail on a stale snapshot.
        await sql`begin immediate`.execute(conn);
        try {
          const result = await fn(conn);
          await sql`commit`.execute(conn);
          return result;
        } catch (err) {
          await sql`rollback`.execute(conn).catch(() => undefined);
          throw err;
        }
      }),
    );
  }

  async #retrying<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= MAX_LOCK_ATTEMPTS || !isTransientLockError(err)) throw err;
        await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.floor(Math.random() * 10)));
      }
    }
  }
}

export interface ProviderObservation {
  remaining: number | null;
  blockedUntil: number | null;
}

/** Parses provider rate-limit headers; null when none is present. Header names are case-insensitive. */
export function parseProviderHeaders(headers: Record<string, string>, now: number): ProviderObservation | null {
  const h = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v).trim()]));
  let seen = false;
  let remaining: number | null = null;
  let blockedUntil: number | null = null;
  const block = (until: number) => {
    blockedUntil = blockedUntil === null ? until : Math.max(blockedUntil, until);
  };
  const retryAfter = h.get('retry-after');
  if (retryAfter !== undefined) {
    const delay = parseRetryAfter(retryAfter, now);
    if (delay !== null) {
      seen = true;
      block(now + delay);
    }
  }
  const pairs: Array<[string, string]> = [
    ['x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
    ['x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
    ['ratelimit-remaining', 'ratelimit-reset'],
  ];
  for (const [remKey, resetKey] of pairs) {
    const rem = parseCount(h.get(remKey));
    if (rem === null) continue;
    seen = true;
    if (remKey !== 'x-ratelimit-remaining-tokens') remaining = remaining === null ? rem : Math.min(remaining, rem);
    if (rem > 0) continue;
    const reset = parseReset(h.get(resetKey), now);
    block(now + (reset ?? UNKNOWN_RESET_MS));
  }
  for (const w of WINDOWS) {
    const rem = parseCount(h.get(`x-ratelimit-remaining-${w}`));
    if (rem === null) continue;
    seen = true;
    remaining = remaining === null ? rem : Math.min(remaining, rem);
    if (rem === 0) block(windowStart(w, now) + WINDOW_MS[w]);
  }
  return seen ? { remaining, blockedUntil } : null;
}

function parseCount(v: string | undefined): number | null {
  if (v === undefined || !/^\d+$/.test(v)) return null;
  return Number(v);
}

/** Seconds, or an HTTP date. */
function parseRetryAfter(v: string, now: number): number | null {
  if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Delta seconds, epoch seconds (some providers), or OpenAI's "1m30s" / "250ms" form. */
function parseReset(v: string | undefined, now: number): number | null {
  if (v === undefined || v === '') return null;
  if (/^\d+(\.\d+)?$/.test(v)) {
    const n = Number(v);
    return n > 1_000_000_000 ? Math.max(0, n * 1000 - now) : Math.ceil(n * 1000);
  }
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(v)) return null;
  const unit: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) total += Number(m[1]) * (unit[m[2] ?? 's'] ?? 1_000);
  return Math.ceil(total);
}
