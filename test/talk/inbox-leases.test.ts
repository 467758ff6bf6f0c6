import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InboxLeases } from '../../lib/intake/inbox-leases.ts';
import { LeaderLock } from '../../lib/storage/leader-lock.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';

describe('inbox leases and leader leases (PostgreSQL, several processes)', () => {
  let tdb: TestDatabase;
  let clock = 1_000_000;
  const now = () => clock;
  const add = async (room: string, messageId: string) =>
    tdb.db
      .insertInto('inbox')
      .values({ room_token: room, message_id: messageId, actor_id: 'users/alice', route: 'talk_bot', kind: 'message', payload: '{}', received_at: clock })
      .returning('id')
      .executeTakeFirstOrThrow();

  before(async () => {
    tdb = await createTestDatabase('postgres');
  });
  after(async () => {
    await tdb.drop();
  });

  it("hands each row to one worker, a room to one worker at a time in order, and a dead worker's row on after its lease", async () => {
    const a = new InboxLeases(tdb.db, { owner: 'a', ttlMs: 3000 }, now);
    const b = new InboxLeases(tdb.db, { owner: 'b', ttlMs: 3000 }, now);
    const r1 = await add('room1', '1');
    const r2 = await add('room1', '2');
    const s1 = await add('room2', '1');
    // Two workers claim at once: each row once, and only the first row of each room.
    const [ca, cb] = await Promise.all([a.claim(10, []), b.claim(10, [])]);
    const ids = [...ca, ...cb].map((r) => r.id).sort((x, y) => x - y);
    assert.deepEqual(ids, [r1.id, s1.id]);
    const holderOfRoom1 = ca.some((r) => r.id === r1.id) ? a : b;
    const otherWorker = holderOfRoom1 === a ? b : a;
    // The room's next row waits for the first.
    assert.deepEqual(await otherWorker.claim(10, []), []);
    // A worker that cannot renew (it died): after the lease its row passes to the other, which finishes it.
    clock += 3001;
    const taken = await otherWorker.claim(10, []);
    assert.ok(taken.some((r) => r.id === r1.id && r.attempts === 2));
    assert.equal(await holderOfRoom1.complete(r1.id), false, 'the old holder no longer completes it');
    assert.equal(await otherWorker.complete(r1.id), true);
    for (const r of taken) if (r.id !== r1.id) await otherWorker.complete(r.id);
    const next = await a.claim(10, []);
    assert.deepEqual(
      next.map((r) => r.id),
      [r2.id],
    );
    // Renewal keeps a row while its turn runs.
    clock += 2000;
    await a.renew();
    clock += 2000;
    assert.deepEqual(await b.claim(10, []), [], 'the renewed lease still holds');
    a.stop();
    b.stop();
  });

  it('lets one process at a time hold a housekeeping lease, and another take it once it expired', async () => {
    const one = new LeaderLock(tdb.db, 'one', now);
    const two = new LeaderLock(tdb.db, 'two', now);
    assert.equal(await one.acquire('retention', 1000), true);
    assert.equal(await two.acquire('retention', 1000), false);
    assert.equal(await one.acquire('retention', 1000), true, 'the holder renews');
    clock += 1001;
    assert.equal(await two.acquire('retention', 1000), true);
    // exclusive: waits for the holder, runs, frees.
    const order: string[] = [];
    await Promise.all([one.exclusive('enabled', 5000, async () => order.push('one')), two.exclusive('enabled', 5000, async () => order.push('two'))]);
    assert.deepEqual([...order].sort(), ['one', 'two']);
  });
});
