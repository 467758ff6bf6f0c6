// scripts/ensure-postgres.sh as a user who is not root (issue 20): it installs and starts PostgreSQL
// through sudo, like the radicale and chromium scripts, and says what it needs when there is no sudo.
// Every command it runs is a stand-in on PATH that writes down how it was called: no package is
// installed and no database is touched.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const script = new URL('../../scripts/ensure-postgres.sh', import.meta.url).pathname;
const TOOLS = ['sh', 'bash', 'env', 'seq', 'sort', 'tail', 'sleep', 'cat', 'touch', 'chmod'];

function sandbox(withSudo: boolean): { dir: string; path: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ensure-pg-'));
  const shims = join(dir, 'shims');
  const bin = join(dir, 'bin');
  mkdirSync(shims);
  mkdirSync(bin);
  for (const tool of TOOLS) {
    const real = ['/usr/bin', '/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (real) symlinkSync(real, join(bin, tool));
  }
  const log = join(dir, 'calls.log');
  const started = join(dir, 'started');
  const shim = (name: string, body: string) => {
    writeFileSync(join(shims, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(shims, name), 0o755);
  };
  shim('id', 'case "$1" in -u) echo 1000;; -un) echo alice;; *) echo "uid=1000(alice)";; esac');
  if (withSudo) shim('sudo', `echo "sudo $*" >> ${log}\nif [ "$1" = -u ]; then shift 2; fi\nexec "$@"`);
  shim(
    'apt-get',
    `echo "apt-get $*" >> ${log}\nif [ "$1" = install ]; then printf '#!/bin/sh\\necho "pg_ctlcluster $*" >> ${log}\\ntouch ${started}\\n' > ${shims}/pg_ctlcluster; chmod +x ${shims}/pg_ctlcluster; fi`,
  );
  // The cluster's version comes from `ls /etc/postgresql`.
  shim('ls', '[ "$1" = /etc/postgresql ] && echo 15');
  shim('pg_isready', `[ -e ${started} ]`);
  shim('psql', `echo "psql $*" >> ${log}\necho 1`);
  return { dir, path: `${shims}:${bin}`, log };
}

describe('scripts/ensure-postgres.sh without root', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('installs and starts PostgreSQL through sudo, then prints the test URL', () => {
    const box = sandbox(true);
    dirs.push(box.dir);
    const r = spawnSync('/bin/bash', [script], { env: { PATH: box.path }, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'postgres://postgres@127.0.0.1:5432/test');
    const calls = readFileSync(box.log, 'utf8').split('\n');
    assert.ok(calls.includes('sudo apt-get update -qq'), calls.join('\n'));
    assert.ok(calls.includes('sudo apt-get install -y -qq postgresql'), calls.join('\n'));
    assert.ok(
      calls.some((c) => c === 'sudo pg_ctlcluster --skip-systemctl-redirect 15 main start'),
      calls.join('\n'),
    );
    assert.ok(
      !calls.includes('apt-get update -qq') || calls.indexOf('apt-get update -qq') > calls.indexOf('sudo apt-get update -qq'),
      'apt-get never runs without sudo',
    );
  });

  it('without sudo, stops before apt-get with one message that says what it needs', () => {
    const box = sandbox(false);
    dirs.push(box.dir);
    const r = spawnSync('/bin/bash', [script], { env: { PATH: box.path }, encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /needs root or sudo.*TEST_DATABASE_URL/);
    assert.equal(existsSync(box.log) ? readFileSync(box.log, 'utf8') : '', '', 'nothing was run');
  });
});
