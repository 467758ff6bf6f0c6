import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { intakePathFor, openDatabase } from '../../lib/storage/database.ts';

describe('intake file upgrade', () => {
  it('version 1 files get one row per delivery route, keeping waiting events', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'educai-intake-'));
    try {
      const main = join(dir, 'educai.sqlite');
      const v1 = new BetterSqlite3(intakePathFor(main));
      v1.exec(`create table inbox (id integer primary key autoincrement, room_token varchar(64) not null, message_id varchar(32) not null,
        actor_id varchar(255) not null, route varchar(191) not null, kind varchar(32) not null, payload text not null, received_at bigint not null,
        constraint inbox_event unique (room_token, message_id, actor_id))`);
      v1.exec('create index inbox_room on inbox (room_token, id)');
      v1.prepare(
        "insert into inbox (room_token, message_id, actor_id, route, kind, payload, received_at) values ('r1', '7', 'users/alice', 'talk_bot', 'chat', '{}', 1)",
      ).run();
      v1.pragma('user_version = 1');
      v1.close();

      const handle = openDatabase({ sqlitePath: main });
      try {
        const statements = handle.intakeStatements;
        assert.ok(statements);
        const row = { room_token: 'r1', message_id: '7', actor_id: 'users/alice', kind: 'chat', payload: '{}', received_at: 2 };
        assert.equal(statements.insert({ ...row, route: 'talk_bot' }), null, 'the same delivery is still deduplicated');
        const kept = statements.insert({ ...row, route: 'talk_bot_b1' });
        assert.ok(kept !== null && kept > 1, "another route's delivery of it is kept, with its new id");
        assert.ok(handle.intake);
        const rows = await handle.intake.selectFrom('inbox').select(['id', 'route']).orderBy('id').execute();
        assert.deepEqual(
          rows.map((r) => r.route),
          ['talk_bot', 'talk_bot_b1'],
        );
        assert.equal(rows[1]?.id, kept);
        assert.equal(rows[0]?.id, 1, 'the waiting event keeps its id');
      } finally {
        await handle.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
