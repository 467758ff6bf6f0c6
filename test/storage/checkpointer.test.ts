import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Checkpointer } from '../../lib/storage/checkpointer.ts';
import { openDatabase } from '../../lib/storage/database.ts';
import { waitFor } from '../helpers/harness.ts';

describe('SQLite checkpointer', () => {
  const dir = mkdtempSync(join(tmpdir(), 'educai-checkpoint-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('copies committed WAL frames into the database file from its own thread', async () => {
    const file = join(dir, 'a.sqlite');
    const db = new BetterSqlite3(file);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec('create table t (v text)');
    const insert = db.prepare('insert into t values (?)');
    db.transaction(() => {
      for (let i = 0; i < 500; i++) insert.run('x'.repeat(200));
    })();
    const before = statSync(file).size;
    assert.ok(statSync(`${file}-wal`).size > 100_000, 'the rows are in the WAL');
    const checkpointer = await Checkpointer.start([file], { intervalMs: 20 });
    try {
      await waitFor(() => statSync(file).size > before + 100_000, 'the database file to receive the WAL frames', 10_000);
    } finally {
      await checkpointer.stop();
    }
    assert.equal((db.prepare('select count(*) as n from t').get() as { n: number }).n, 500);
    db.close();
  });

  it('refuses a file that does not exist', async () => {
    await assert.rejects(Checkpointer.start([join(dir, 'missing.sqlite')]));
  });

  it('covers both files of an app database, and stopping twice is harmless', async () => {
    const handle = openDatabase({ sqlitePath: join(dir, 'educai.sqlite') });
    try {
      assert.deepEqual(handle.files, [join(dir, 'educai.sqlite'), join(dir, 'educai-intake.sqlite')]);
      const checkpointer = await Checkpointer.start(handle.files!, { intervalMs: 20 });
      await checkpointer.stop();
      await checkpointer.stop();
    } finally {
      await handle.close();
    }
    const memory = openDatabase({ sqlitePath: ':memory:' });
    assert.equal(memory.files, undefined, 'an in-memory database has nothing to checkpoint');
    await memory.close();
  });
});
