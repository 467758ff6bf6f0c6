import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { migrateToLatest } from '../../lib/storage/migrate.ts';
import { migrations } from '../../lib/storage/migrations/index.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

for (const dialect of DIALECTS) {
  describe(`migrations on ${dialect}`, () => {
    it('applies every migration once, in order, with progress', async () => {
      const tdb = await createTestDatabase(dialect, { migrate: false });
      try {
        const steps: string[] = [];
        const applied = await migrateToLatest(tdb, (p) => {
          steps.push(`${p.done}/${p.total} ${p.name}`);
        });
        const names = Object.keys(migrations).sort();
        assert.deepEqual(applied, names);
        assert.equal(steps.length, names.length);
        assert.equal(steps.at(-1), `${names.length}/${names.length} ${names.at(-1)}`);
        assert.deepEqual(await migrateToLatest(tdb), [], 'a second run applies nothing');
        const tables = await tdb.db.introspection.getTables();
        const tableNames = tables.map((t) => t.name);
        assert.ok(tableNames.includes('settings'));
        assert.ok(tableNames.includes('secrets'));
        if (dialect === 'sqlite') assert.equal(statSync(join(tdb.dataDir, 'educai.sqlite')).mode & 0o777, 0o600, 'owner-only database file');
      } finally {
        await tdb.drop();
      }
    });

    it('keeps data across a reopen and stores JSON settings', async () => {
      const tdb = await createTestDatabase(dialect);
      try {
        const store = new SettingsStore(tdb.db, () => 1_700_000_000_000);
        await store.set('model.default', { id: 'primary:llama', temperature: 0.2 });
        await store.set('model.default', { id: 'primary:mistral', temperature: 0.4 });
        await tdb.close();
        const again = tdb.reopen();
        try {
          const reread = new SettingsStore(again.db);
          assert.deepEqual(await reread.get('model.default'), { id: 'primary:mistral', temperature: 0.4 });
          const row = await again.db.selectFrom('settings').selectAll().executeTakeFirstOrThrow();
          assert.equal(typeof row.updated_at, 'number', 'bigint columns come back as numbers on both dialects');
          assert.equal(row.updated_at, 1_700_000_000_000);
          const count = await sql<{ n: number }>`select count(*) as n from settings`.execute(again.db);
          assert.equal(Number(count.rows[0]?.n), 1);
        } finally {
          await again.close();
        }
      } finally {
        await tdb.drop();
      }
    });
  });
}
