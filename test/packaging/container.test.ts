import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const root = new URL('../..', import.meta.url).pathname;

describe('Dockerfile (static: no Docker engine on this machine)', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages.at(-1) ?? '';

  it('builds on a slim Node 24 image and runs as a non-root user', () => {
    for (const stage of stages) assert.match(stage, /^node:24[\w.-]*-slim/);
    assert.match(runtime, /^USER node$/m);
    assert.doesNotMatch(runtime, /^USER root$/m);
  });

  it('has a HEALTHCHECK on /heartbeat and the frpc start path', () => {
    assert.match(runtime, /^HEALTHCHECK .*healthcheck\.sh/m);
    assert.match(readFileSync(join(root, 'scripts/healthcheck.sh'), 'utf8'), /\/heartbeat/);
    assert.match(runtime, /COPY --from=frpc \/usr\/local\/bin\/frpc/);
    assert.match(dockerfile, /sha256sum -c/, 'frpc is checked against a digest');
  });

  it('installs no dev dependencies into what the runtime image gets', () => {
    // The frontend stage needs vite (dev) to build; only its built js/ and css/ leave it.
    const shipped = stages.filter((s) => !s.startsWith('node:24-bookworm-slim AS frontend'));
    assert.match(dockerfile, /npm ci --omit=dev/);
    for (const stage of shipped) assert.doesNotMatch(stage, /npm (ci|install)(?![^\n]*--omit=dev)/);
    const fromFrontend = [...dockerfile.matchAll(/COPY --from=frontend (\S+)/g)].map((m) => m[1]);
    assert.deepEqual(fromFrontend, ['/app/ex_app/js', '/app/ex_app/css']);
  });
});

describe('scripts/start.sh', () => {
  function run(env: Record<string, string>) {
    const dir = mkdtempSync(join(tmpdir(), 'educai-start-'));
    // A stand-in frpc records that it was started and with which config.
    writeFileSync(join(dir, 'frpc'), `#!/bin/sh\necho "frpc $*" >> "${dir}/frpc.log"\ncp "$2" "${dir}/frpc.toml"\n`);
    chmodSync(join(dir, 'frpc'), 0o755);
    const r = spawnSync('sh', [join(root, 'scripts/start.sh'), 'sh', '-c', 'echo app started'], {
      env: { PATH: `${dir}:/usr/bin:/bin`, FRPC_CONFIG: join(dir, 'generated.toml'), APP_ID: 'educai', APP_PORT: '23001', ...env },
      encoding: 'utf8',
    });
    let log = '';
    let toml = '';
    try {
      execFileSync('sleep', ['0.2']);
      log = readFileSync(join(dir, 'frpc.log'), 'utf8');
      toml = readFileSync(join(dir, 'frpc.toml'), 'utf8');
    } catch {
      // frpc did not run
    }
    return { r, log, toml };
  }

  it('starts only the app without HaRP', () => {
    const { r, log } = run({});
    assert.equal(r.status, 0);
    assert.match(r.stdout, /app started/);
    assert.equal(log, '');
  });

  it('starts frpc towards the unix socket with HaRP', () => {
    const { r, log, toml } = run({ HP_SHARED_KEY: 'shared-key', HP_FRP_ADDRESS: 'harp.local', HP_FRP_PORT: '8782' });
    assert.equal(r.status, 0);
    assert.match(r.stdout, /app started/);
    assert.match(log, /^frpc -c /);
    assert.match(toml, /serverAddr = "harp.local"/);
    assert.match(toml, /unixPath = "\/tmp\/exapp.sock"/);
    assert.match(toml, /remotePort = 23001/);
    assert.match(toml, /auth.token = "shared-key"/);
  });
});
