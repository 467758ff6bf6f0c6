import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { RateLimiter } from '../../lib/ratelimit/rate-limiter.ts';
import { DEFAULT_QUEUE_TEMPLATE, RequestQueue, renderQueueMessage, type QueuedRequest } from '../../lib/ratelimit/request-queue.ts';
import { createApp } from '../../lib/server/app.ts';
import { DEFAULT_RATE_LIMIT_SETTINGS, RATELIMIT_SETTINGS_KEY, loadRateLimitSettings } from '../../lib/ratelimit/rate-limit-settings.ts';
import { rateLimitAdminRoutes, type ProcessQueueResult } from '../../lib/server/routes/ratelimit-admin.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const APP_ID = 'educai';
const APP_SECRET = 'ratelimit-admin-test-secret-0123456789abcdef';
const CSRF = { requesttoken: 'token-from-the-page' };
const LEAKY = 'Bearer provider-token-in-an-error-4d3c2b1a';
const URL = '/api/v1/admin/ratelimit';

function appApiHeaders(uid: string): Record<string, string> {
  return {
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${APP_SECRET}`).toString('base64'),
    'X-Origin-IP': '198.51.100.7',
  };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

for (const dialect of DIALECTS) {
  describe(`rate-limit admin routes on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let app: Express;
    let settings: SettingsStore;
    let limiter: RateLimiter;
    let queue: RequestQueue;
    const clock = { t: Date.UTC(2025, 2, 3, 10, 0, 30) };
    const answered: QueuedRequest[] = [];
    let impl: () => Promise<ProcessQueueResult>;

    /** "Process now" built on the queue: expire, claim, run each turn (rooms named broken-* fail). */
    async function processWithQueue(): Promise<ProcessQueueResult> {
      const errors: string[] = [];
      for (const item of await queue.expire()) errors.push(`request ${item.id} expired`);
      let processed = 0;
      for (const item of await queue.claimReady(10)) {
        try {
          if (item.roomToken.startsWith('broken')) throw new Error(`provider said no (${LEAKY})`);
          answered.push(item);
          await queue.complete(item.id);
          processed++;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          const failed = await queue.fail(item.id, message);
          errors.push(`request ${item.id}: ${message}${failed?.final ? ' (gave up)' : ''}`);
        }
      }
      return { processed, remaining: (await queue.stats()).pending, errors };
    }

    const enqueue = (roomToken: string) =>
      queue.enqueue({ botId: 'bot-1', roomToken, route: 'talk_bot', inboxPayload: { text: `hello from ${roomToken}` }, uid: 'alice', replyTo: '7' });

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET });
      const logger = createLogger({ level: 'silent' });
      const nextcloud = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
      settings = new SettingsStore(tdb.db, () => clock.t);
      limiter = new RateLimiter(
        tdb.db,
        () => loadRateLimitSettings(settings, logger),
        () => clock.t,
      );
      queue = new RequestQueue(tdb.db, { now: () => clock.t, maxAttempts: 1 });
      impl = processWithQueue;
      app = createApp({
        appId: APP_ID,
        appSecret: APP_SECRET,
        logger,
        routers: [rateLimitAdminRoutes({ settings, limiter, queue, processQueueNow: () => impl(), adminCheck: new AdminCheck(nextcloud), logger })],
      });
    });

    after(async () => {
      await nc.close();
      await tdb.drop();
    });

    it('is for admins only, and changes need the CSRF header', async () => {
      for (const [method, path] of [
        ['get', URL],
        ['put', URL],
        ['post', `${URL}/process`],
      ] as const) {
        const user = await request(app)[method](path).set(appApiHeaders('alice')).set(CSRF).send({});
        assert.equal(user.status, 403, `${method} ${path}`);
        assert.equal(user.body.error.code, 'admin_required');
        assert.equal(user.headers['cache-control'], 'no-store');
        assert.equal(user.headers['x-content-type-options'], 'nosniff');
        assert.equal((await request(app)[method](path).set(appApiHeaders('')).set(CSRF)).status, 401);
      }
      const noCsrf = await request(app).put(URL).set(appApiHeaders('admin')).send({ enabled: true });
      assert.equal(noCsrf.status, 403);
      assert.equal(noCsrf.body.error.code, 'csrf');
      assert.equal((await request(app).post(`${URL}/process`).set(appApiHeaders('admin'))).status, 403);
      assert.equal(await settings.get(RATELIMIT_SETTINGS_KEY), undefined, 'nothing stored');
    });

    it('shows the defaults, the live status and the queue counts', async () => {
      const res = await request(app).get(URL).set(appApiHeaders('admin'));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(res.body.settings, DEFAULT_RATE_LIMIT_SETTINGS);
      assert.equal(res.body.defaultQueueMessage, DEFAULT_QUEUE_TEMPLATE);
      assert.equal(res.body.queueMessagePreview, renderQueueMessage(3, 90_000, null));
      assert.equal(res.body.status.enabled, false);
      assert.deepEqual(
        res.body.status.chat.instance.map((w: { window: string; limit: number | null }) => [w.window, w.limit]),
        [
          ['second', null],
          ['minute', 30],
          ['hour', 200],
          ['day', 1000],
        ],
      );
      assert.equal(res.body.status.chat.user, undefined);
      assert.deepEqual(res.body.queue, { pending: 0, processing: 0, failed: 0, expired: 0 });
      const badUid = await request(app).get(URL).query({ uid: '../alice' }).set(appApiHeaders('admin'));
      assert.equal(badUid.status, 400);
      assert.deepEqual(badUid.body.error.details, { uid: 'Not a user id' });
    });

    it('stores a valid patch under ratelimit.settings, and the limiter follows it', async () => {
      const res = await request(app)
        .put(URL)
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({
          enabled: true,
          chat: { user: { minute: 2, day: 50 } },
          embeddings: { guestRoom: { minute: 5 } },
          queueMessage: 'Busy: you are number {position}, about {wait}.',
        });
      assert.equal(res.status, 200, res.text);
      const expected = {
        enabled: true,
        chat: { instance: { second: null, minute: 30, hour: 200, day: 1000 }, user: { second: null, minute: 2, hour: null, day: 50 }, guestRoom: null },
        embeddings: {
          instance: { second: null, minute: 100, hour: 2000, day: 4000 },
          user: { second: null, minute: null, hour: null, day: null },
          guestRoom: { second: null, minute: 5, hour: null, day: null },
        },
        queueMessage: 'Busy: you are number {position}, about {wait}.',
      };
      assert.deepEqual(res.body.settings, expected);
      assert.deepEqual(await settings.get(RATELIMIT_SETTINGS_KEY), expected);

      const key = { scope: 'chat' as const, uid: 'alice', guestRoom: null };
      assert.equal((await limiter.tryAcquire(key)).ok, true);
      assert.equal((await limiter.tryAcquire(key)).ok, true);
      const third = await limiter.tryAcquire(key);
      assert.equal(third.ok, false);
      assert.equal(!third.ok && third.level, 'user');

      const status = await request(app).get(URL).query({ uid: 'alice' }).set(appApiHeaders('admin'));
      assert.equal(status.body.status.enabled, true);
      const minute = status.body.status.chat.user.find((w: { window: string }) => w.window === 'minute');
      assert.deepEqual({ limit: minute.limit, used: minute.used }, { limit: 2, used: 2 });
      assert.equal(status.body.queueMessagePreview, 'Busy: you are number 3, about 2 minutes.');

      // An empty message goes back to the built-in text; null clears a limit.
      const reset = await request(app)
        .put(URL)
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({ queueMessage: '  ', chat: { user: { minute: null } } });
      assert.equal(reset.body.settings.queueMessage, null);
      assert.equal(reset.body.settings.chat.user.minute, null);
      assert.equal(reset.body.settings.chat.user.day, 50, 'untouched fields keep their value');
    });

    it('refuses invalid settings with one error per field and keeps the stored ones', async () => {
      const before = await settings.get(RATELIMIT_SETTINGS_KEY);
      const res = await request(app)
        .put(URL)
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({
          enabled: 'yes',
          chat: { instance: { minute: -1, hour: 1.5, day: 'many' }, user: { second: 10, minute: 5 } },
          embeddings: { guestRoom: { week: 3 } },
          queueMessage: 'You are at {pos}',
          burst: 4,
        });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_settings');
      assert.deepEqual(res.body.error.details, {
        enabled: 'Must be true or false',
        'chat.instance.minute': 'Must be 0 or more',
        'chat.instance.hour': 'Must be a whole number',
        'chat.instance.day': 'Must be a whole number, or empty for no limit',
        'chat.user.second': 'Must not exceed the minute limit (5)',
        'embeddings.guestRoom.week': 'Unknown field',
        queueMessage: 'Unknown placeholder {pos}: use {position} and {wait}',
        burst: 'Unknown field',
      });
      const long = await request(app)
        .put(URL)
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({ queueMessage: 'x'.repeat(1001), chat: 'fast' });
      assert.deepEqual(long.body.error.details, { queueMessage: 'At most 1000 characters', chat: 'Must be an object' });
      const array = await request(app).put(URL).set(appApiHeaders('admin')).set(CSRF).send([1]);
      assert.equal(array.status, 400);
      assert.deepEqual(await settings.get(RATELIMIT_SETTINGS_KEY), before);
    });

    it('processes the queue now and reports what happened', async () => {
      await enqueue('room-a');
      await enqueue('room-b');
      await enqueue('broken-c');
      const res = await request(app).post(`${URL}/process`).set(appApiHeaders('admin')).set(CSRF);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.processed, 2);
      assert.equal(res.body.remaining, 0);
      assert.equal(res.body.errors.length, 1);
      assert.match(res.body.errors[0], /provider said no .* \(gave up\)$/);
      assert.ok(!res.text.includes(LEAKY), 'credentials in an error are redacted');
      assert.deepEqual(res.body.queue, { pending: 0, processing: 0, failed: 1, expired: 0 });
      assert.deepEqual(answered.map((a) => a.roomToken).sort(), ['room-a', 'room-b']);

      // A request older than the expiry is reported, not answered.
      await enqueue('room-d');
      clock.t += 2 * 3_600_000;
      const later = await request(app).post(`${URL}/process`).set(appApiHeaders('admin')).set(CSRF);
      assert.equal(later.body.processed, 0);
      assert.deepEqual(
        later.body.errors.map((e: string) => /expired$/.test(e)),
        [true],
      );
      assert.equal(later.body.queue.expired, 1);
      assert.equal(answered.length, 2);
    });

    it('runs one processing at a time and hides a crash behind a generic error', async () => {
      const started = deferred();
      const release = deferred();
      impl = async () => {
        started.resolve();
        await release.promise;
        return { processed: 0, remaining: 0, errors: [] };
      };
      const first = request(app)
        .post(`${URL}/process`)
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .then((r) => r);
      await started.promise;
      const second = await request(app).post(`${URL}/process`).set(appApiHeaders('admin')).set(CSRF);
      assert.equal(second.status, 409);
      assert.equal(second.body.error.code, 'queue_busy');
      release.resolve();
      assert.equal((await first).status, 200);

      impl = async () => {
        throw new Error(`queue table is gone (${LEAKY})`);
      };
      const crashed = await request(app).post(`${URL}/process`).set(appApiHeaders('admin')).set(CSRF);
      assert.equal(crashed.status, 500);
      assert.deepEqual(crashed.body, { error: { code: 'queue_failed', message: 'Processing the queue failed' } });
      impl = processWithQueue;
      const again = await request(app).post(`${URL}/process`).set(appApiHeaders('admin')).set(CSRF);
      assert.equal(again.status, 200, 'the guard is released after a failure');
    });
  });
}
