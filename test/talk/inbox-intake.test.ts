import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Inbox, type NewInboxEvent } from '../../lib/intake/inbox.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const event = (roomToken: string, messageId: string): NewInboxEvent => ({
  roomToken,
  messageId,
  actorId: 'users/alice',
  route: 'talk_bot',
  kind: 'message',
  payload: { type: 'Create', systemName: null, actorId: 'users/alice', roomToken, messageId },
});

const inboxOf = (tdb: TestDatabase, now: () => number = Date.now) => new Inbox(tdb.db, now, tdb.intake ?? tdb.db, tdb.intakeStatements);

for (const dialect of DIALECTS) {
  describe(`inbox write paths on ${dialect}`, () => {
    const opened: TestDatabase[] = [];
    after(async () => {
      for (const t of opened) await t.drop();
    });

    it('queues once per (room, message, actor), runs a room in order and rooms side by side', async () => {
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const inbox = inboxOf(tdb);
      assert.equal(await inbox.add(event('r1', '1')), true);
      assert.equal(await inbox.add(event('r1', '1')), false, 'a redelivery is not queued twice');
      assert.equal(await inbox.add(event('r1', '2')), true);
      assert.equal(await inbox.add(event('r2', '1')), true);
      const first = await inbox.claim(8, new Set());
      assert.deepEqual(
        first.map((e) => [e.roomToken, e.messageId, e.attempts]),
        [
          ['r1', '1', 1],
          ['r2', '1', 1],
        ],
      );
      assert.deepEqual(await inbox.claim(8, new Set()), [], 'nothing more until a room finishes');
      await inbox.complete(first[0]!.id);
      const next = await inbox.claim(8, new Set());
      assert.deepEqual(
        next.map((e) => [e.roomToken, e.messageId]),
        [['r1', '2']],
      );
      assert.equal(await inbox.pendingCount(), 2);
      inbox.stop();
    });

    it('skips the dedupe read only for message ids above the newest it queued in that room', async () => {
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const inbox = inboxOf(tdb);
      assert.equal(inbox.isBeyondNewest('r1', '10'), false, 'a room it knows nothing of is read');
      assert.equal(await inbox.add(event('r1', '10')), true);
      assert.equal(inbox.isBeyondNewest('r1', '11'), true);
      assert.equal(inbox.isBeyondNewest('r1', '10'), false, 'a redelivery is read');
      assert.equal(inbox.isBeyondNewest('r1', '9'), false, 'an older message is read');
      assert.equal(inbox.isBeyondNewest('r2', '11'), false, 'per room');
      assert.equal(inbox.isBeyondNewest('r1', 'x12'), false, 'a non-numeric id is read');
      assert.equal(await inbox.add(event('r1', '10')), false);
      assert.equal(await inbox.add(event('r1', '12')), true);
      assert.equal(inbox.isBeyondNewest('r1', '11'), false);
      // A fresh intake (a restart) knows nothing: it reads.
      await tdb.db.insertInto('handled_messages').values({ room_token: 'r1', message_id: '12', inbox_id: 1, handled_at: 1 }).execute();
      const restarted = inboxOf(tdb);
      assert.equal(restarted.isBeyondNewest('r1', '12'), false);
      assert.equal(await restarted.isHandled('r1', '12'), true);
    });

    it('skips the read of new rows when the worker knows nothing was inserted', async () => {
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const inbox = inboxOf(tdb, () => 1_000_000);
      assert.equal(await inbox.add(event('r1', '1')), true);
      assert.deepEqual(
        (await inbox.claim(8, new Set())).map((e) => e.roomToken),
        ['r1'],
      );
      assert.equal(await inbox.add(event('r2', '1')), true);
      assert.deepEqual(await inbox.claim(8, new Set(['r1']), { readNew: false }), [], 'not read yet');
      assert.deepEqual(
        (await inbox.claim(8, new Set(['r1']))).map((e) => e.roomToken),
        ['r2'],
      );
    });

    it('hands a queued row to the worker, which takes it without a read when no row came between', async () => {
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const intake = inboxOf(tdb);
      const worker = inboxOf(tdb, () => 3_000_000);
      const first = await intake.accept(event('r1', '1'));
      assert.equal(await intake.accept(event('r1', '1')), false, 'a redelivery is not handed over');
      if (dialect === 'postgres') {
        // Ids of concurrent inserts may become visible out of order: nothing is handed over, the worker reads.
        assert.equal(first, null);
        return;
      }
      assert.ok(first);
      assert.deepEqual([first.room_token, first.message_id, JSON.parse(first.payload).messageId], ['r1', '1', '1']);
      assert.equal(worker.offer(first), false, 'a worker that has read nothing yet reads');
      assert.deepEqual(
        (await worker.claim(8, new Set())).map((e) => [e.roomToken, e.messageId]),
        [['r1', '1']],
      );
      assert.equal(await intake.accept(event('r1', '1')), false, 'a refused duplicate leaves an unused id behind');
      const second = await intake.accept(event('r2', '1'));
      assert.ok(second);
      assert.equal(second.after, first.id);
      assert.equal(worker.offer(second), true);
      assert.deepEqual(
        (await worker.claim(8, new Set(['r1']), { readNew: false })).map((e) => [e.roomToken, e.messageId]),
        [['r2', '1']],
        'taken without a read',
      );
      // A row the worker was not handed (another writer's) comes between: the next one is refused, the read finds both.
      const unseen = await intake.accept(event('r3', '1'));
      const next = await intake.accept(event('r4', '1'));
      assert.ok(unseen && next);
      assert.equal(worker.offer(next), false);
      assert.deepEqual(
        (await worker.claim(8, new Set(['r1', 'r2']))).map((e) => e.roomToken),
        ['r3', 'r4'],
      );
      assert.equal(worker.offer(next), false, 'a row already read is not taken twice');
    });

    it('reads only new rows between full reads, which catch rows that became visible late', async () => {
      let clock = 2_000_000;
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const inbox = inboxOf(tdb, () => clock);
      await inbox.add(event('r1', '1'));
      await inbox.add(event('r2', '1'));
      const first = await inbox.claim(8, new Set());
      assert.deepEqual(
        first.map((e) => e.roomToken),
        ['r1', 'r2'],
      );
      // A row with a lower id than those already read, as when a PostgreSQL insert commits after a later one.
      const low = Math.min(...first.map((e) => e.id)) - 1;
      await (tdb.intake ?? tdb.db)
        .insertInto('inbox')
        .values({
          id: low,
          room_token: 'r3',
          message_id: '1',
          actor_id: 'users/alice',
          route: 'talk_bot',
          kind: 'message',
          payload: JSON.stringify(event('r3', '1').payload),
          received_at: clock,
        })
        .execute();
      await inbox.add(event('r4', '1'));
      assert.deepEqual(
        (await inbox.claim(8, new Set())).map((e) => e.roomToken),
        ['r4'],
        'between full reads only newer rows are read',
      );
      clock += 5_000;
      assert.deepEqual(
        (await inbox.claim(8, new Set())).map((e) => e.roomToken),
        ['r3'],
        'the next full read finds the late row',
      );
      // Rooms stay in order: r1's second message waits for its first.
      await inbox.add(event('r1', '2'));
      assert.deepEqual(await inbox.claim(8, new Set()), []);
      await inbox.complete(first[0]!.id);
      assert.deepEqual(
        (await inbox.claim(8, new Set())).map((e) => [e.roomToken, e.messageId]),
        [['r1', '2']],
      );
      inbox.stop();
    });

    it('leaves a row that another worker claimed, and sees it again once it is released', async () => {
      let clock = 3_000_000;
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const mine = inboxOf(tdb, () => clock);
      const other = inboxOf(tdb, () => clock);
      await mine.add(event('r1', '1'));
      assert.equal((await mine.claim(1, new Set(['r1']))).length, 0, 'an excluded room is not claimed');
      const [theirs] = await other.claim(1, new Set());
      assert.ok(theirs);
      assert.deepEqual(await mine.claim(1, new Set()), [], 'claimed elsewhere: not run twice');
      await other.retryLater(theirs.id, 0);
      clock += 5_000;
      const [again] = await mine.claim(1, new Set());
      assert.equal(again?.id, theirs.id);
      assert.equal(again?.attempts, 2);
      mine.stop();
      other.stop();
    });

    it('retries later, resumes after a restart, and prunes finished rows on both sides', async () => {
      let clock = 1_000_000;
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const inbox = inboxOf(tdb, () => clock);
      await inbox.add(event('r1', '1'));
      const [claimed] = await inbox.claim(1, new Set());
      await inbox.retryLater(claimed!.id, 5_000);
      assert.deepEqual(await inbox.claim(1, new Set()), [], 'not before its retry time');
      clock += 5_000;
      const [again] = await inbox.claim(1, new Set());
      assert.equal(again!.attempts, 2);
      // A crash while it runs: after a restart it is released and claimed again.
      inbox.stop();
      await tdb.close();
      const reopened = tdb.reopen();
      const after = new Inbox(reopened.db, () => clock, reopened.intake ?? reopened.db, reopened.intakeStatements);
      assert.equal(await after.releaseInterrupted(), 1);
      const [resumed] = await after.claim(1, new Set());
      assert.equal(resumed!.messageId, '1');
      assert.equal(resumed!.attempts, 3);
      await after.complete(resumed!.id);
      assert.equal(await after.pendingCount(), 0);
      assert.equal(await after.forgetPruned(), 0, 'progress stays while the inbox row exists');
      assert.equal(await after.prune(), 1, 'the intake deletes the finished row');
      assert.equal(await after.forgetPruned(), 1, 'then the worker forgets it');
      assert.equal((await reopened.db.selectFrom('inbox').select('id').execute()).length, 0);
      await after.maintain();
      after.stop();
      await reopened.close();
    });
  });
}

describe('the SQLite intake file', () => {
  let tdb: TestDatabase;
  after(async () => tdb.drop());

  it('accepts and dedupes webhooks while the processing side holds the main write lock', async () => {
    tdb = await createTestDatabase('sqlite');
    const inbox = inboxOf(tdb);
    const intakeFile = join(tdb.dataDir, 'educai-intake.sqlite');
    assert.equal(statSync(intakeFile).mode & 0o777, 0o600, 'owner-only intake file');
    // Another connection (the processing thread) holds the main database's write lock.
    const worker = new BetterSqlite3(join(tdb.dataDir, 'educai.sqlite'));
    worker.pragma('busy_timeout = 0');
    worker.exec('begin immediate');
    worker.prepare("insert into handled_messages (room_token, message_id, inbox_id, handled_at) values ('r9', '9', 1, 1)").run();
    try {
      // With a shared file this insert would sleep in SQLite's busy handler and then fail with SQLITE_BUSY.
      assert.equal(await inbox.add(event('r1', '1')), true);
      assert.equal(await inbox.isHandled('r9', '9'), false, 'uncommitted work is not seen');
    } finally {
      worker.exec('commit');
      worker.close();
    }
    assert.equal(await inbox.isHandled('r9', '9'), true, 'the dedupe check reads the main file');
    assert.equal(await inbox.pendingCount(), 1);
    inbox.stop();
  });
});
