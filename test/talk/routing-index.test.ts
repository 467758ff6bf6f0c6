import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { BotStore } from '../../lib/bots/bot-store.ts';
import { RoutingIndex } from '../../lib/talk/routing-index.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

for (const dialect of DIALECTS) {
  describe(`routing index on ${dialect}`, () => {
    const opened: TestDatabase[] = [];
    after(async () => {
      for (const t of opened) await t.drop();
    });

    it('a refresh asked for during a running load sees changes made after that load read the tables', async () => {
      const tdb = await createTestDatabase(dialect);
      opened.push(tdb);
      const bots = new BotStore(tdb.db);
      await bots.create({ displayName: 'Tutor', mention: 'tutor', systemPrompt: 'x', visibility: 'personal' }, 'alice');
      let release!: () => void;
      let loads = 0;
      const gate = new Promise<void>((r) => (release = r));
      // The first load holds in its after-refresh step, after it read the bots.
      const index = new RoutingIndex(tdb.db, async () => {
        if (++loads === 1) await gate;
      });
      const first = index.refresh();
      while (loads === 0) await new Promise((r) => setImmediate(r));
      await bots.create({ displayName: 'Coach', mention: 'coach', systemPrompt: 'x', visibility: 'personal' }, 'bob');
      const second = index.refresh();
      const third = index.refresh();
      release();
      await first;
      assert.deepEqual([...index.mentions].sort(), ['tutor'], 'the running load read before the new bot existed');
      await Promise.all([second, third]);
      assert.deepEqual([...index.mentions].sort(), ['coach', 'tutor']);
      assert.equal(loads, 2, 'callers during one load share one follow-up load');
    });
  });
}
