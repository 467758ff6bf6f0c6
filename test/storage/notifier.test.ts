import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Notifier, type ChangeTopic } from '../../lib/storage/notifier.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../helpers/databases.ts';
import { waitFor } from '../helpers/harness.ts';

describe('LISTEN/NOTIFY notifier (PostgreSQL)', () => {
  let tdb: TestDatabase;
  let other: TestDatabase;
  const started: Notifier[] = [];
  const start = async (db: TestDatabase, origin: string, seen: ChangeTopic[], reconnects: { n: number } = { n: 0 }) => {
    const n = await Notifier.start({
      url: testDatabaseUrl(),
      schema: db.pgSchema!,
      origin,
      onChange: (t) => seen.push(t),
      onReconnect: () => reconnects.n++,
      onError: () => undefined,
      retryMs: 50,
    });
    started.push(n);
    return n;
  };

  before(async () => {
    tdb = await createTestDatabase('postgres');
    other = await createTestDatabase('postgres');
  });
  after(async () => {
    for (const n of started) await n.close();
    await tdb.drop();
    await other.drop();
  });

  it('delivers a change to the other processes of the schema, not to its sender nor to another schema', async () => {
    const a: ChangeTopic[] = [];
    const b: ChangeTopic[] = [];
    const elsewhere: ChangeTopic[] = [];
    const na = await start(tdb, 'a', a);
    await start(tdb, 'b', b);
    await start(other, 'c', elsewhere);
    await na.announce(tdb.db, 'settings');
    await na.announce(tdb.db, 'inbox');
    await waitFor(() => b.length === 2, 'both changes at b');
    assert.deepEqual(b, ['settings', 'inbox']);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(a, [], 'the sender skips its own');
    assert.deepEqual(elsewhere, [], 'another schema has its own channel');
  });

  it('reconnects after losing its connection, asks for a full reload, and hears changes again', async () => {
    const seen: ChangeTopic[] = [];
    const reconnects = { n: 0 };
    const listener = await start(tdb, 'listener', seen, reconnects);
    const sender = await start(tdb, 'sender', []);
    listener.dropConnection();
    await waitFor(() => reconnects.n === 1, 'the reconnection');
    await sender.announce(tdb.db, 'index');
    await waitFor(() => seen.includes('index'), 'a change after the reconnection');
  });
});
