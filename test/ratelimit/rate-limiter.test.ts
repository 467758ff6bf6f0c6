import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import {
  parseProviderHeaders,
  RateLimiter,
  WINDOW_MS,
  windowStart,
  type RateLimitSettings,
  type RateLimitTables,
  type ScopeLimits,
} from '../../lib/ratelimit/rate-limiter.ts';
import type { OpenOptions } from '../../lib/storage/database.ts';
import { up } from '../../lib/storage/migrations/0005-ratelimits-traces.ts';
import type { Database } from '../../lib/storage/schema.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const run = promisify(execFile);
type Db = Kysely<Database & RateLimitTables>;

const UNLIMITED: ScopeLimits = { instance: {}, user: {} };

function settings(partial: Partial<RateLimitSettings>): RateLimitSettings {
  return { enabled: true, chat: UNLIMITED, embeddings: UNLIMITED, ...partial };
}

/** 10:30:20.250 UTC: inside every window, so the test knows exactly when each one ends. */
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20, 250);

class Clock {
  t = T0;
  now = () => this.t;
}

async function setup(dialect: (typeof DIALECTS)[number]): Promise<{ tdb: TestDatabase; db: Db }> {
  const tdb = await createTestDatabase(dialect, { migrate: false });
  await up(tdb.db as unknown as Kysely<unknown>);
  return { tdb, db: tdb.db as unknown as Db };
}

const chat = (uid: string | null, guestRoom: string | null = null) => ({ scope: 'chat' as const, uid, guestRoom });

for (const dialect of DIALECTS) {
  describe(`rate limiter on ${dialect}`, () => {
    it('limits the instance per minute and opens again when the clock-aligned window ends', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const limiter = new RateLimiter(db, async () => settings({ chat: { instance: { minute: 3 }, user: {} } }), clock.now);
        for (let i = 0; i < 3; i++) assert.deepEqual(await limiter.tryAcquire(chat('alice')), { ok: true });
        const denied = await limiter.tryAcquire(chat('bob'));
        const minuteEnd = windowStart('minute', T0) + WINDOW_MS.minute;
        assert.deepEqual(denied, { ok: false, retryAfterMs: minuteEnd - T0, window: 'minute', level: 'instance', source: 'limit' });
        clock.t = minuteEnd - 1;
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, false);
        clock.t = minuteEnd;
        assert.deepEqual(await limiter.tryAcquire(chat('alice')), { ok: true });
      } finally {
        await tdb.drop();
      }
    });

    it('applies the second, hour and day windows, and the day window resets at midnight UTC', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const limiter = new RateLimiter(db, async () => settings({ chat: { instance: { second: 2, hour: 100, day: 3 }, user: {} } }), clock.now);
        assert.equal((await limiter.tryAcquire(chat('a'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat('a'))).ok, true);
        const perSecond = await limiter.tryAcquire(chat('a'));
        assert.equal(perSecond.ok, false);
        assert.equal(!perSecond.ok && perSecond.window, 'second');
        assert.equal(!perSecond.ok && perSecond.retryAfterMs, windowStart('second', T0) + 1000 - T0);
        clock.t = windowStart('second', T0) + 1000;
        assert.equal((await limiter.tryAcquire(chat('a'))).ok, true, 'the next second has room, the day has one unit left');
        clock.t += 5_000;
        const perDay = await limiter.tryAcquire(chat('a'));
        const dayEnd = windowStart('day', T0) + WINDOW_MS.day;
        assert.deepEqual(perDay, { ok: false, retryAfterMs: dayEnd - clock.t, window: 'day', level: 'instance', source: 'limit' });
        const status = await limiter.status();
        const day = status.chat.instance.find((w) => w.window === 'day');
        assert.deepEqual(day, { window: 'day', limit: 3, used: 3, resetsAt: dayEnd });
        assert.equal(status.chat.instance.find((w) => w.window === 'minute')?.limit, null, 'unset windows are unlimited');
        clock.t = dayEnd;
        assert.deepEqual(await limiter.tryAcquire(chat('a')), { ok: true });
        const after = await limiter.status();
        assert.equal(after.chat.instance.find((w) => w.window === 'day')?.used, 1);
        assert.equal(after.chat.instance.find((w) => w.window === 'hour')?.used, 1, 'the hour window reset too');
      } finally {
        await tdb.drop();
      }
    });

    it('keeps a separate bucket per user, all counting against the instance', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const limiter = new RateLimiter(db, async () => settings({ chat: { instance: { minute: 5 }, user: { minute: 2 } } }), clock.now);
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, true);
        const alice = await limiter.tryAcquire(chat('alice'));
        assert.equal(!alice.ok && alice.level, 'user');
        assert.equal((await limiter.tryAcquire(chat('bob'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat('bob'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat(null))).ok, true, 'background work counts against the instance only');
        const carol = await limiter.tryAcquire(chat('carol'));
        assert.equal(!carol.ok && carol.level, 'instance', 'the instance bucket is full even though carol has not used hers');
        const status = await limiter.status({ uid: 'alice' });
        assert.equal(status.chat.instance.find((w) => w.window === 'minute')?.used, 5);
        assert.equal(status.chat.user?.find((w) => w.window === 'minute')?.used, 2, 'a denied call takes nothing');
        assert.equal(status.chat.user?.find((w) => w.window === 'minute')?.limit, 2);
      } finally {
        await tdb.drop();
      }
    });

    it('makes guests of one room share a bucket, counted against the instance (S4)', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const limiter = new RateLimiter(db, async () => settings({ chat: { instance: { hour: 4 }, user: { hour: 10 }, guestRoom: { hour: 2 } } }), clock.now);
        // Guest ids change with every session; the room is what they share.
        assert.equal((await limiter.tryAcquire(chat(null, 'room-a'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat(null, 'room-a'))).ok, true);
        const third = await limiter.tryAcquire(chat(null, 'room-a'));
        assert.equal(!third.ok && third.level, 'guest-room');
        assert.equal(!third.ok && third.window, 'hour');
        assert.equal((await limiter.tryAcquire(chat(null, 'room-b'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, true);
        const full = await limiter.tryAcquire(chat('alice'));
        assert.equal(!full.ok && full.level, 'instance', 'guest calls used the instance bucket');
        const status = await limiter.status({ guestRoom: 'room-a' });
        assert.equal(status.chat.guestRoom?.find((w) => w.window === 'hour')?.used, 2);
      } finally {
        await tdb.drop();
      }
    });

    it('falls back to the per-user limits for guest rooms when none are set', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const limiter = new RateLimiter(db, async () => settings({ chat: { instance: {}, user: { minute: 1 } } }), new Clock().now);
        assert.equal((await limiter.tryAcquire(chat(null, 'room-a'))).ok, true);
        const second = await limiter.tryAcquire(chat(null, 'room-a'));
        assert.equal(!second.ok && second.level, 'guest-room');
      } finally {
        await tdb.drop();
      }
    });

    it('counts embeddings separately from chat', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const limiter = new RateLimiter(
          db,
          async () => settings({ chat: { instance: { minute: 1 }, user: {} }, embeddings: { instance: { minute: 2 }, user: {} } }),
          clock.now,
        );
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, true);
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, false);
        const emb = { scope: 'embeddings' as const, uid: null, guestRoom: null };
        assert.equal((await limiter.tryAcquire(emb)).ok, true);
        assert.equal((await limiter.tryAcquire(emb)).ok, true);
        assert.equal((await limiter.tryAcquire(emb)).ok, false);
        const status = await limiter.status();
        assert.equal(status.chat.instance.find((w) => w.window === 'minute')?.used, 1);
        assert.equal(status.embeddings.instance.find((w) => w.window === 'minute')?.used, 2);
      } finally {
        await tdb.drop();
      }
    });

    it('lets everything through and counts nothing when disabled; null limits are unlimited', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        let current = settings({ enabled: false, chat: { instance: { minute: 1 }, user: { minute: 1 } } });
        const limiter = new RateLimiter(db, async () => current, clock.now);
        for (let i = 0; i < 5; i++) assert.equal((await limiter.tryAcquire(chat('alice'))).ok, true);
        assert.equal((await limiter.status()).chat.instance.find((w) => w.window === 'minute')?.used, 0);
        current = settings({ chat: { instance: { second: null, minute: null, hour: null, day: null }, user: {} } });
        for (let i = 0; i < 20; i++) assert.equal((await limiter.tryAcquire(chat('alice'))).ok, true);
        assert.equal((await limiter.status()).chat.instance.find((w) => w.window === 'minute')?.used, 20);
      } finally {
        await tdb.drop();
      }
    });

    it('never hands out more than the limit to many parallel callers', async () => {
      const { tdb, db } = await setup(dialect);
      const other = tdb.reopen();
      try {
        const clock = new Clock();
        const limit = 10;
        const config = async () => settings({ chat: { instance: { minute: limit }, user: { minute: 4 } } });
        const a = new RateLimiter(db, config, clock.now);
        // On SQLite a second connection in this process would block the event loop on the lock; share the handle there.
        const b = new RateLimiter(dialect === 'postgres' ? (other.db as unknown as Db) : db, config, clock.now);
        const users = ['u1', 'u2', 'u3', 'u4', 'u5'];
        const calls = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).tryAcquire(chat(users[i % users.length] ?? 'u1')));
        const results = await Promise.all(calls);
        assert.equal(results.filter((r) => r.ok).length, limit);
        const status = await a.status();
        assert.equal(status.chat.instance.find((w) => w.window === 'minute')?.used, limit);
        for (const uid of users) {
          const s = await a.status({ uid });
          assert.ok((s.chat.user?.find((w) => w.window === 'minute')?.used ?? 0) <= 4);
        }
      } finally {
        await other.close();
        await tdb.drop();
      }
    });

    it('never hands out more than the limit across processes', async () => {
      const { tdb } = await setup(dialect);
      try {
        const limit = 20;
        const open: OpenOptions =
          dialect === 'postgres' ? { databaseUrl: tdb.databaseUrl, pgSchema: tdb.pgSchema, pgPoolSize: 4 } : { sqlitePath: join(tdb.dataDir, 'educai.sqlite') };
        const child = `
          import { openDatabase } from ${JSON.stringify(new URL('../../lib/storage/database.ts', import.meta.url).href)};
          import { RateLimiter } from ${JSON.stringify(new URL('../../lib/ratelimit/rate-limiter.ts', import.meta.url).href)};
          const cfg = JSON.parse(process.env.RL_CHILD);
          const h = openDatabase(cfg.open);
          const rl = new RateLimiter(h.db, async () => cfg.settings, () => cfg.now);
          const results = await Promise.all(Array.from({ length: cfg.calls }, (_, i) => rl.tryAcquire({ scope: 'chat', uid: 'u' + (i % 3), guestRoom: null })));
          await h.close();
          process.stdout.write(String(results.filter((r) => r.ok).length));
        `;
        const cfg = { open, now: T0, calls: 15, settings: settings({ chat: { instance: { hour: limit }, user: {} } }) };
        const outputs = await Promise.all(
          [1, 2, 3].map(() =>
            run(process.execPath, ['--input-type=module', '-e', child], { env: { ...process.env, RL_CHILD: JSON.stringify(cfg) }, timeout: 60_000 }),
          ),
        );
        const granted = outputs.reduce((sum, o) => sum + Number(o.stdout.trim()), 0);
        assert.equal(granted, limit, `3 processes × ${cfg.calls} calls against ${limit}`);
        const limiter = new RateLimiter(
          tdb.db as unknown as Db,
          async () => cfg.settings,
          () => T0,
        );
        assert.equal((await limiter.status()).chat.instance.find((w) => w.window === 'hour')?.used, limit);
      } finally {
        await tdb.drop();
      }
    });

    it('blocks a scope while the provider says none remain, until its reset', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const limiter = new RateLimiter(db, async () => settings({}), clock.now);
        await limiter.observeProviderHeaders('chat', { 'X-RateLimit-Remaining-Requests': '0', 'X-RateLimit-Reset-Requests': '1m30s' });
        const denied = await limiter.tryAcquire(chat('alice'));
        assert.deepEqual(denied, { ok: false, retryAfterMs: 90_000, window: 'hour', level: 'instance', source: 'provider' });
        assert.equal((await limiter.tryAcquire({ scope: 'embeddings', uid: null, guestRoom: null })).ok, true, 'embeddings are not blocked');
        const status = await limiter.status();
        assert.deepEqual(status.chat.provider, { remaining: 0, blockedUntil: T0 + 90_000, blocked: true, observedAt: T0 });
        assert.equal(status.embeddings.provider, null);
        clock.t = T0 + 89_999;
        assert.equal((await limiter.tryAcquire(chat('alice'))).ok, false);
        clock.t = T0 + 90_000;
        assert.deepEqual(await limiter.tryAcquire(chat('alice')), { ok: true });
        assert.equal((await limiter.status()).chat.provider?.blocked, false);

        await limiter.observeProviderHeaders('embeddings', { 'retry-after': '7' });
        const emb = await limiter.tryAcquire({ scope: 'embeddings', uid: null, guestRoom: null });
        assert.equal(!emb.ok && emb.retryAfterMs, 7_000);
        await limiter.observeProviderHeaders('embeddings', { 'x-ratelimit-remaining-requests': '12', 'x-ratelimit-reset-requests': '2s' });
        assert.equal((await limiter.tryAcquire({ scope: 'embeddings', uid: null, guestRoom: null })).ok, true, 'a later answer with capacity lifts the block');
        assert.equal((await limiter.status()).embeddings.provider?.remaining, 12);

        await limiter.observeProviderHeaders('chat', { 'content-type': 'application/json' });
        assert.equal((await limiter.status()).chat.provider?.observedAt, T0, 'unrelated headers change nothing');
      } finally {
        await tdb.drop();
      }
    });
  });
}

describe('provider header parsing', () => {
  const now = T0;
  it('reads OpenAI durations, IETF deltas, epoch resets, HTTP dates and per-window headers', () => {
    assert.deepEqual(parseProviderHeaders({ 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '250ms' }, now), {
      remaining: 0,
      blockedUntil: now + 250,
    });
    assert.deepEqual(parseProviderHeaders({ 'RateLimit-Remaining': '0', 'RateLimit-Reset': '30' }, now), { remaining: 0, blockedUntil: now + 30_000 });
    const epoch = Math.floor(now / 1000) + 45;
    assert.deepEqual(parseProviderHeaders({ 'ratelimit-remaining': '0', 'ratelimit-reset': String(epoch) }, now), { remaining: 0, blockedUntil: epoch * 1000 });
    const date = new Date(now + 120_000).toUTCString();
    const fromDate = parseProviderHeaders({ 'Retry-After': date }, now);
    assert.ok(fromDate?.blockedUntil !== null && fromDate !== null);
    assert.ok(Math.abs((fromDate.blockedUntil ?? 0) - (now + 120_000)) < 1000, 'HTTP dates have second precision');
    assert.deepEqual(parseProviderHeaders({ 'x-ratelimit-remaining-minute': '0', 'x-ratelimit-remaining-day': '500' }, now), {
      remaining: 0,
      blockedUntil: windowStart('minute', now) + WINDOW_MS.minute,
    });
    assert.deepEqual(parseProviderHeaders({ 'x-ratelimit-remaining-requests': '3' }, now), { remaining: 3, blockedUntil: null });
    assert.deepEqual(parseProviderHeaders({ 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '6m0s' }, now), {
      remaining: null,
      blockedUntil: now + 360_000,
    });
    assert.equal(parseProviderHeaders({ 'x-ratelimit-remaining-requests': 'lots' }, now), null);
    assert.equal(parseProviderHeaders({}, now), null);
  });
});
