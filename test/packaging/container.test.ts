import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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

  it('pins frpc for amd64 and arm64 in the file itself, and prepares /certs/frp for HaRP', () => {
    const frpc = stages.find((s) => s.includes('AS frpc')) ?? '';
    assert.match(frpc, /amd64\) sum=[0-9a-f]{64}/);
    assert.match(frpc, /arm64\) sum=[0-9a-f]{64}/);
    assert.doesNotMatch(frpc, /ARG FRP_/, 'no build argument can replace the version or a digest');
    // HaRP runs `mkdir -p /certs/frp` as the image user, who cannot create folders in /.
    assert.match(runtime, /mkdir -p \/certs\/frp && chown node:node \/certs\/frp/);
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
  function run(env: Record<string, string>, setup?: (dir: string) => void) {
    const dir = mkdtempSync(join(tmpdir(), 'educai-start-'));
    mkdirSync(join(dir, 'certs'));
    mkdirSync(join(dir, 'cas'));
    setup?.(dir);
    // A stand-in frpc records that it was started and with which config.
    writeFileSync(join(dir, 'frpc'), `#!/bin/sh\necho "frpc $*" >> "${dir}/frpc.log"\ncp "$2" "${dir}/frpc.toml"\n`);
    chmodSync(join(dir, 'frpc'), 0o755);
    const r = spawnSync('sh', [join(root, 'scripts/start.sh'), 'sh', '-c', 'echo app started; echo "extra=${NODE_EXTRA_CA_CERTS:-}"'], {
      env: {
        PATH: `${dir}:/usr/bin:/bin`,
        FRPC_CONFIG: join(dir, 'generated.toml'),
        FRP_CERTS_DIR: join(dir, 'certs'),
        EXTRA_CA_DIR: join(dir, 'cas'),
        NODE_EXTRA_CA_FILE: join(dir, 'extra-ca.pem'),
        APP_ID: 'educai',
        APP_PORT: '23001',
        ...env,
      },
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
    return { r, log, toml, dir };
  }

  it('starts only the app without HaRP', () => {
    const { r, log } = run({});
    assert.equal(r.status, 0);
    assert.match(r.stdout, /app started/);
    assert.equal(log, '');
  });

  it('starts frpc towards the unix socket with HaRP', () => {
    const { r, log, toml, dir } = run({ HP_SHARED_KEY: 'shared-key', HP_FRP_ADDRESS: 'harp.local', HP_FRP_PORT: '8782' });
    assert.equal(r.status, 0);
    assert.match(r.stdout, /app started/);
    assert.match(log, /^frpc -c /);
    assert.match(toml, /serverAddr = "harp.local"/);
    assert.match(toml, /unixPath = "\/tmp\/exapp.sock"/);
    assert.match(toml, /remotePort = 23001/);
    // HaRP's agent reads the login's metas (frpc metadatas), never frp's own auth.token.
    assert.match(toml, /^metadatas\.token = "shared-key"$/m);
    assert.doesNotMatch(toml, /auth\.(token|method)/);
    assert.match(toml, /^transport\.tls\.enable = false$/m, 'no certificates were installed (HaRP with HP_FRP_DISABLE_TLS)');
    assert.equal(statSync(join(dir, 'generated.toml')).mode & 0o077, 0, 'the config holds the key: owner only');
  });

  it('uses the client certificates HaRP installed, with the server name HaRP signs', () => {
    const { toml, dir } = run({ HP_SHARED_KEY: 'shared-key', HP_FRP_ADDRESS: 'harp.local', HP_FRP_PORT: '8782' }, (d) => {
      for (const f of ['client.crt', 'client.key', 'ca.crt']) writeFileSync(join(d, 'certs', f), `${f}\n`);
    });
    assert.match(toml, /^transport\.tls\.enable = true$/m);
    assert.match(toml, new RegExp(`^transport\\.tls\\.certFile = "${dir}/certs/client\\.crt"$`, 'm'));
    assert.match(toml, new RegExp(`^transport\\.tls\\.keyFile = "${dir}/certs/client\\.key"$`, 'm'));
    assert.match(toml, new RegExp(`^transport\\.tls\\.trustedCaFile = "${dir}/certs/ca\\.crt"$`, 'm'));
    assert.match(toml, /^transport\.tls\.serverName = "harp\.nc"$/m);
    assert.match(toml, /^metadatas\.token = "shared-key"$/m);
  });

  it('hands the CAs installed for Nextcloud to Node, with any the admin set', () => {
    const own = join(mkdtempSync(join(tmpdir(), 'educai-ca-')), 'own.pem');
    writeFileSync(own, 'ADMIN CA');
    const { r, dir } = run({ NODE_EXTRA_CA_CERTS: own }, (d) => {
      writeFileSync(join(d, 'cas', 'custom_ca_cert_0.crt'), 'CA ZERO');
      writeFileSync(join(d, 'cas', 'custom_ca_cert_1.crt'), 'CA ONE');
    });
    assert.equal(r.status, 0);
    assert.match(r.stdout, new RegExp(`extra=${dir}/extra-ca\\.pem`));
    assert.deepEqual(readFileSync(join(dir, 'extra-ca.pem'), 'utf8').split('\n').filter(Boolean), ['ADMIN CA', 'CA ZERO', 'CA ONE']);
    const none = run({});
    assert.match(none.r.stdout, /^extra=$/m, 'without installed CAs Node keeps its own list');
  });
});
