import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WikiRootStore } from '../../lib/wiki/wiki-roots.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

for (const dialect of DIALECTS) {
  describe(`wiki root registry on ${dialect}`, () => {
    it('registers, moves, records syncs and forgets roots', async () => {
      const tdb = await createTestDatabase(dialect);
      let t = 1_700_000_000_000;
      const store = new WikiRootStore(tdb.db, () => (t += 1000));
      try {
        await store.register({ botId: 'bot-1', uid: 'alice', location: 'personal_files', rootPath: 'Talk AI/Personal Wikis/tutor', rootFileId: '31' });
        await store.register({ botId: 'bot-2', uid: 'bob', location: 'collective', rootPath: 'Collectives/Math Team', rootFileId: '90' });
        assert.deepEqual(await store.get('bot-1'), {
          botId: 'bot-1',
          uid: 'alice',
          location: 'personal_files',
          rootPath: 'Talk AI/Personal Wikis/tutor',
          rootFileId: '31',
          rootEtag: '',
          syncedAt: null,
        });
        await store.markSynced('bot-1', '"abc"', 'Talk AI/Personal Wikis/tutor-old');
        const synced = await store.get('bot-1');
        assert.equal(synced?.rootEtag, '"abc"');
        assert.equal(synced?.rootPath, 'Talk AI/Personal Wikis/tutor-old');
        assert.equal(typeof synced?.syncedAt, 'number');
        // Registering again (a new location) keeps one row per bot.
        await store.register({ botId: 'bot-1', uid: 'alice', location: 'personal_files', rootPath: 'Talk AI/Class', rootFileId: '44' });
        assert.deepEqual(
          (await store.list()).map((r) => [r.botId, r.rootPath, r.rootFileId]),
          [
            ['bot-1', 'Talk AI/Class', '44'],
            ['bot-2', 'Collectives/Math Team', '90'],
          ],
        );
        await store.remove('bot-1');
        await store.remove('bot-2');
        assert.deepEqual(await store.list(), []);
      } finally {
        await tdb.drop();
      }
    });
  });
}
