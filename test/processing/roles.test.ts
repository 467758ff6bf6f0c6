import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readManifest } from '../../lib/appapi/manifest.ts';
import { claimSqliteFolder, ROLES, scaleOutRefusal } from '../../lib/processing/roles.ts';
import { freePort } from '../helpers/exapp-process.ts';
import { TEST_SECRET } from '../helpers/harness.ts';

const root = new URL('../..', import.meta.url).pathname;

describe('process roles', () => {
  it('info.xml declares a web and a worker role for the Kubernetes deploy, only web exposed', () => {
    const roles = readManifest(join(root, 'appinfo/info.xml')).serviceRoles;
    assert.deepEqual(
      roles.map((r) => [r.name, r.env, r.expose]),
      [
        ['web', 'EDUCAI_ROLE=web', true],
        ['worker', 'EDUCAI_ROLE=worker', false],
      ],
    );
    // Each declared role is one the app knows, and only the role that serves the app is exposed.
    for (const r of roles) {
      const plan = ROLES[r.env.split('=')[1] as keyof typeof ROLES];
      assert.ok(plan, r.env);
      assert.equal(plan.serves === 'app', r.expose);
    }
  });

  it("keeps today's single process as the default, and scale-out roles off the processing thread", () => {
    assert.equal(ROLES.all.processingThread, true);
    assert.equal(ROLES.all.scaleOut, false);
    for (const role of ['web', 'worker'] as const) {
      assert.equal(ROLES[role].processingThread, false);
      assert.equal(ROLES[role].scaleOut, true);
    }
  });

  it('refuses a scale-out role without PostgreSQL', () => {
    assert.equal(scaleOutRefusal('all', null), null);
    assert.equal(scaleOutRefusal('worker', 'postgres://db/x'), null);
    assert.match(scaleOutRefusal('worker', null) ?? '', /EDUCAI_ROLE=worker needs PostgreSQL/);
  });

  it("lets one live process hold an SQLite folder, and takes over a dead one's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'educai-roles-'));
    assert.equal(claimSqliteFolder(dir, process.pid), null);
    assert.match(claimSqliteFolder(dir, process.pid + 1_000_000) ?? '', new RegExp(`pid ${process.pid}\\b.*SQLite serves one process only`));
    // A pid that no longer runs (a crash, kill -9): its file is taken over.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(join(dir, 'educai.pid'), dead);
    assert.equal(claimSqliteFolder(dir, process.pid), null);
    assert.equal(readFileSync(join(dir, 'educai.pid'), 'utf8'), String(process.pid));
  });

  it('a process with EDUCAI_ROLE=worker on SQLite stops at start with one line', async () => {
    const port = String(await freePort());
    const dir = mkdtempSync(join(tmpdir(), 'educai-roles-'));
    const r = spawnSync(process.execPath, ['lib/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        APP_ID: 'educai',
        APP_SECRET: TEST_SECRET,
        APP_VERSION: '0.1.0',
        NEXTCLOUD_URL: 'http://127.0.0.1:1',
        APP_PERSISTENT_STORAGE: dir,
        APP_PORT: port,
        EDUCAI_ROLE: 'worker',
      },
      timeout: 60_000,
    });
    assert.equal(r.status, 78);
    const lines = r.stderr.toString().trim().split('\n');
    assert.equal(lines.length, 1, r.stderr.toString());
    assert.match(lines[0]!, /^educai: EDUCAI_ROLE=worker needs PostgreSQL \(DATABASE_URL\)/);
  });
});
