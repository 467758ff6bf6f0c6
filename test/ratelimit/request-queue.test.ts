import assert from 'node:assert/strict';
import { withTalkLanguage } from '../../lib/l10n/talk-language.ts';
import { describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import {
  DEFAULT_QUEUE_TEMPLATE,
  humanizeWait,
  renderQueueMessage,
  RequestQueue,
  type NewQueuedRequest,
  type RequestQueueTables,
} from '../../lib/ratelimit/request-queue.ts';
import { up } from '../../lib/storage/migrations/0005-ratelimits-traces.ts';
import type { Database } from '../../lib/storage/schema.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

type Db = Kysely<Database & RequestQueueTables>;
const T0 = Date.UTC(2025, 2, 3, 9, 0, 0);
const MIN = 60_000;

class Clock {
  t = T0;
  now = () => this.t;
}

async function setup(dialect: (typeof DIALECTS)[number]): Promise<{ tdb: TestDatabase; db: Db }> {
  const tdb = await createTestDatabase(dialect, { migrate: false });
  await up(tdb.db as unknown as Kysely<unknown>);
  return { tdb, db: tdb.db as unknown as Db };
}

function request(room: string, text: string, extra: Partial<NewQueuedRequest> = {}): NewQueuedRequest {
  return { botId: 'bot-1', roomToken: room, route: 'talk-ai', inboxPayload: { text, attachments: [] }, uid: 'alice', replyTo: '42', ...extra };
}

describe('queue message', () => {
  it('renders the default text with the position and a human wait', () => {
    assert.equal(renderQueueMessage(3, 95_000), DEFAULT_QUEUE_TEMPLATE.replace('{position}', '3').replace('{wait}', '2 minutes'));
    assert.ok(renderQueueMessage(1, 500).includes('position 1, about 1 second'));
  });

  it('uses an admin template with every placeholder replaced, and the default for a blank one', () => {
    assert.equal(renderQueueMessage(7, 30_000, 'Busy: #{position}, ~{wait} ({position})'), 'Busy: #7, ~30 seconds (7)');
    assert.equal(renderQueueMessage(2, 1000, '   '), renderQueueMessage(2, 1000));
    const queue = new RequestQueue(undefined as unknown as Db);
    assert.equal(queue.message(4, 10_000, 'P{position} W{wait}'), 'P4 W10 seconds');
  });

  it('rounds waits up into seconds, minutes and hours', () => {
    assert.equal(humanizeWait(0), '1 second');
    assert.equal(humanizeWait(1_001), '2 seconds');
    assert.equal(humanizeWait(59_000), '59 seconds');
    assert.equal(humanizeWait(60_000), '1 minute');
    assert.equal(humanizeWait(61_000), '2 minutes');
    assert.equal(humanizeWait(3_600_000), '1 hour');
    assert.equal(humanizeWait(3_600_000 + 5 * MIN), '1 hour 5 minutes');
  });

  it("speaks the turn's language, and keeps the admin's template as written", () => {
    withTalkLanguage('de', () => {
      assert.equal(humanizeWait(0), '1 Sekunde');
      assert.equal(humanizeWait(61_000), '2 Minuten');
      assert.equal(humanizeWait(3_600_000 + 1 * MIN), '1 Stunde 1 Minute');
      assert.equal(
        renderQueueMessage(3, 120_000),
        '⏳ Die Anfrage steht in der Warteschlange (Position 3, etwa 2 Minuten). Die Antwort erscheint hier, sobald wieder Kapazität frei ist.',
      );
      assert.equal(renderQueueMessage(3, 120_000, 'Queue #{position}'), 'Queue #3');
    });
    assert.equal(humanizeWait(61_000), '2 minutes', 'English outside a German turn');
  });
});

for (const dialect of DIALECTS) {
  describe(`request queue on ${dialect}`, () => {
    it('reports positions and a wait never shorter than the limiter block', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const perItemMs = 3_000;
        const queue = new RequestQueue(db, { now: new Clock().now, perItemMs });
        const a = await queue.enqueue(request('room-a', 'one'));
        const b = await queue.enqueue(request('room-b', 'two'));
        const c = await queue.enqueue(request('room-a', 'three', { retryAfterMs: 45_000 }));
        assert.deepEqual([a.position, b.position, c.position], [1, 2, 3]);
        assert.equal(a.estimatedWaitMs, perItemMs);
        assert.equal(b.estimatedWaitMs, 2 * perItemMs);
        assert.equal(c.estimatedWaitMs, 45_000);
        await queue.claimReady(1);
        await queue.complete(a.id);
        const d = await queue.enqueue(request('room-c', 'four'));
        assert.equal(d.position, 3, 'completed requests no longer count');
        assert.deepEqual(await queue.stats(), { pending: 3, processing: 0, failed: 0, expired: 0 });
      } finally {
        await tdb.drop();
      }
    });

    it('claims oldest first, one request per room at a time, in arrival order (FIFO per room)', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const queue = new RequestQueue(db, { now: new Clock().now });
        const a1 = await queue.enqueue(request('room-a', 'a1'));
        const a2 = await queue.enqueue(request('room-a', 'a2'));
        const b1 = await queue.enqueue(request('room-b', 'b1'));
        const c1 = await queue.enqueue(request('room-c', 'c1'));
        const first = await queue.claimReady(2);
        assert.deepEqual(
          first.map((r) => r.id),
          [a1.id, b1.id],
        );
        assert.deepEqual(first[0]?.inboxPayload, { text: 'a1', attachments: [] });
        assert.equal(first[0]?.replyTo, '42');
        assert.equal(first[0]?.route, 'talk-ai');
        const second = await queue.claimReady(10);
        assert.deepEqual(
          second.map((r) => r.id),
          [c1.id],
          'room-a waits for a1 to finish',
        );
        assert.deepEqual(await queue.stats(), { pending: 1, processing: 3, failed: 0, expired: 0 });
        await queue.complete(a1.id);
        assert.deepEqual(
          (await queue.claimReady(10)).map((r) => r.id),
          [a2.id],
        );
        assert.deepEqual(await queue.claimReady(10), []);
      } finally {
        await tdb.drop();
      }
    });

    it('retries a failed request, and fails it for good after three attempts', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const queue = new RequestQueue(db, { now: new Clock().now });
        const { id } = await queue.enqueue(request('room-a', 'hello'));
        for (let attempt = 1; attempt <= 2; attempt++) {
          const [claimed] = await queue.claimReady(1);
          assert.equal(claimed?.id, id);
          assert.equal(claimed?.attempts, attempt - 1);
          assert.deepEqual(await queue.fail(id, `provider down (Bearer abcdefghijkl) #${attempt}`), { final: false, attempts: attempt });
          assert.deepEqual(await queue.stats(), { pending: 1, processing: 0, failed: 0, expired: 0 });
        }
        await queue.claimReady(1);
        assert.deepEqual(await queue.fail(id, 'still down'), { final: true, attempts: 3 });
        assert.deepEqual(await queue.stats(), { pending: 0, processing: 0, failed: 1, expired: 0 });
        assert.deepEqual(await queue.claimReady(5), [], 'a final failure is not claimed again');
        assert.equal(await queue.fail(id, 'again'), null, 'failing a final row changes nothing');
        const row = await db.selectFrom('request_queue').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        assert.equal(row.payload, 'null', "the user's text is dropped once the request is final");
        assert.equal(row.last_error, 'still down');
      } finally {
        await tdb.drop();
      }
    });

    it('redacts credentials in stored failure reasons', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const queue = new RequestQueue(db, { now: new Clock().now });
        const { id } = await queue.enqueue(request('room-a', 'hello'));
        await queue.claimReady(1);
        await queue.fail(id, 'call failed: Authorization Bearer sk-abcdefghijklmnop');
        const row = await db.selectFrom('request_queue').select('last_error').where('id', '=', id).executeTakeFirstOrThrow();
        assert.ok(!row.last_error?.includes('sk-abcdefghijklmnop'));
      } finally {
        await tdb.drop();
      }
    });

    it('expires requests that waited for more than an hour and returns them for the expiry notice', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const queue = new RequestQueue(db, { now: clock.now });
        const old = await queue.enqueue(request('room-a', 'old'));
        clock.t = T0 + 30 * MIN;
        const fresh = await queue.enqueue(request('room-b', 'fresh'));
        assert.deepEqual(await queue.expire(T0 + 60 * MIN), [], 'exactly one hour is not yet expired');
        clock.t = T0 + 60 * MIN + 1;
        assert.deepEqual(
          (await queue.claimReady(10)).map((r) => r.id),
          [fresh.id],
          'an expired request is never run, even before expire() marks it',
        );
        const expired = await queue.expire(clock.t);
        assert.equal(expired.length, 1);
        assert.equal(expired[0]?.id, old.id);
        assert.equal(expired[0]?.roomToken, 'room-a');
        assert.equal(expired[0]?.replyTo, '42');
        assert.deepEqual(expired[0]?.inboxPayload, { text: 'old', attachments: [] });
        assert.deepEqual(await queue.expire(clock.t), [], 'expired once');
        assert.deepEqual(await queue.stats(), { pending: 0, processing: 1, failed: 0, expired: 1 });
        assert.equal(await queue.purgeFinished(MIN), 0);
        clock.t += 2 * MIN;
        assert.equal(await queue.purgeFinished(MIN), 1);
      } finally {
        await tdb.drop();
      }
    });

    it('honours a configured expiry', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const queue = new RequestQueue(db, { now: clock.now, expireAfterMs: 10 * MIN });
        await queue.enqueue(request('room-a', 'x'));
        assert.equal((await queue.expire(T0 + 10 * MIN + 1)).length, 1);
      } finally {
        await tdb.drop();
      }
    });

    it('puts a request claimed by a crashed process back after five minutes, with one more attempt', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const clock = new Clock();
        const queue = new RequestQueue(db, { now: clock.now });
        const { id } = await queue.enqueue(request('room-a', 'x'));
        await queue.enqueue(request('room-a', 'y'));
        assert.equal((await queue.claimReady(5)).length, 1);
        clock.t = T0 + 5 * MIN;
        assert.deepEqual(await queue.recoverStale(), { requeued: 0, failed: [] }, 'five minutes exactly is not stale');
        await queue.touch(id);
        clock.t = T0 + 9 * MIN;
        assert.deepEqual(await queue.recoverStale(), { requeued: 0, failed: [] }, 'a touched claim is alive');
        clock.t = T0 + 10 * MIN + 1;
        assert.deepEqual(await queue.recoverStale(), { requeued: 1, failed: [] });
        const [again] = await queue.claimReady(5);
        assert.equal(again?.id, id, 'the interrupted request resumes first in its room');
        assert.equal(again?.attempts, 1);
        clock.t += 6 * MIN;
        assert.deepEqual(await queue.recoverStale(), { requeued: 1, failed: [] });
        await queue.claimReady(5);
        clock.t += 6 * MIN;
        const third = await queue.recoverStale();
        assert.equal(third.requeued, 0);
        assert.deepEqual(
          third.failed.map((r) => [r.id, r.attempts]),
          [[id, 3]],
          'three interruptions are final',
        );
        assert.deepEqual(await queue.stats(), { pending: 1, processing: 0, failed: 1, expired: 0 });
      } finally {
        await tdb.drop();
      }
    });

    it('never gives one request to two claimers', async () => {
      const { tdb, db } = await setup(dialect);
      const other = tdb.reopen();
      try {
        const clock = new Clock();
        const a = new RequestQueue(db, { now: clock.now });
        const b = new RequestQueue(dialect === 'postgres' ? (other.db as unknown as Db) : db, { now: clock.now });
        for (let i = 0; i < 12; i++) await a.enqueue(request(`room-${i % 4}`, `m${i}`));
        const claims = await Promise.all([a.claimReady(10), b.claimReady(10), a.claimReady(10), b.claimReady(10)]);
        const ids = claims.flat().map((r) => r.id);
        assert.equal(new Set(ids).size, ids.length, 'no request claimed twice');
        const rooms = claims.flat().map((r) => r.roomToken);
        assert.equal(new Set(rooms).size, rooms.length, 'one request per room at a time');
        assert.equal(ids.length, 4);
      } finally {
        await other.close();
        await tdb.drop();
      }
    });

    it('drops a removed bot’s requests and returns the waiting ones', async () => {
      const { tdb, db } = await setup(dialect);
      try {
        const queue = new RequestQueue(db, { now: new Clock().now });
        const gone = await queue.enqueue(request('room-a', 'a', { botId: 'bot-gone' }));
        const kept = await queue.enqueue(request('room-b', 'b'));
        const removed = await queue.removeBot('bot-gone');
        assert.deepEqual(
          removed.map((r) => r.id),
          [gone.id],
        );
        assert.deepEqual(
          (await queue.claimReady(5)).map((r) => r.id),
          [kept.id],
        );
        assert.deepEqual(await queue.stats(), { pending: 0, processing: 1, failed: 0, expired: 0 });
      } finally {
        await tdb.drop();
      }
    });
  });
}
