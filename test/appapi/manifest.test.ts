import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readManifest } from '../../lib/appapi/manifest.ts';
import { registrationCommands } from '../../lib/appapi/registration-commands.ts';
import { ROUTE_MATCHERS } from '../../lib/appapi/route-matchers.ts';

const manifest = readManifest(new URL('../../appinfo/info.xml', import.meta.url).pathname);
const pkg = (await import('../../package.json', { with: { type: 'json' } })).default;

/** Paths AppAPI calls directly; a declared route matching them would let anonymous proxy traffic forge system calls (S3). */
const SYSTEM_PATHS = ['/heartbeat', '/init', '/enabled', '/enabled?enabled=1', '/talk_bot', '/talk_bot/7', '/wiki_file_events', '/HEARTBEAT', '/Init'];

/** One example per route, and what each must reach. */
const MUST_MATCH: Array<[string, string]> = [
  ['/js/educai-main.js', 'USER'],
  ['/css/educai-main.css', 'USER'],
  ['/img/app.svg', 'USER'],
  ['/l10n/de.json', 'USER'],
  ['/api/v1/bots', 'USER'],
  ['/api/v1/admin/settings', 'ADMIN'],
];

function firstMatch(matcher: (u: string, p: string) => boolean, path: string) {
  return manifest.routes.find((r) => matcher(r.url, path));
}

describe('appinfo/info.xml', () => {
  it('declares the app identity and licence', () => {
    assert.equal(manifest.id, 'educai');
    assert.equal(manifest.name, 'Talk AI');
    assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
    assert.equal(manifest.version, pkg.version, 'info.xml and package.json agree on the version');
    assert.equal(manifest.licence, 'agpl');
    assert.ok(manifest.image.image && manifest.image.tag === manifest.version);
    assert.ok(manifest.environmentVariables.includes('DATABASE_URL'));
  });

  it('declares no PUBLIC route and only portable regexes', () => {
    assert.ok(manifest.routes.length > 0);
    for (const r of manifest.routes) {
      assert.notEqual(r.access_level, 'PUBLIC', `${r.url} must not be PUBLIC`);
      assert.match(r.url, /^\^\\\/\?/, `${r.url} starts with ^\\/?`);
      assert.doesNotMatch(r.url, /(^|[^\\])\//, `${r.url} has no unescaped slash`);
    }
  });

  for (const [name, matcher] of Object.entries(ROUTE_MATCHERS)) {
    it(`routes work under ${name}`, () => {
      for (const [path, level] of MUST_MATCH) {
        const route = firstMatch(matcher, path);
        assert.ok(route, `${path} is routed under ${name}`);
        assert.equal(route.access_level, level, `${path} is ${level} under ${name}`);
      }
    });

    it(`no route reaches a system path under ${name}`, () => {
      for (const path of SYSTEM_PATHS) {
        const route = firstMatch(matcher, path.split('?')[0] ?? path);
        assert.equal(route, undefined, `${path} must not match ${route?.url} under ${name}`);
      }
    });
  }

  it('the emulated AppAPI 3.2.3 matcher rejects the unportable form', () => {
    const m = ROUTE_MATCHERS['AppAPI 3.2.3']!;
    assert.equal(m('^/api/.*', '/api/v1/x'), false);
    assert.equal(m('^\\/?api\\/.*', '/api/v1/x'), true);
    assert.equal(ROUTE_MATCHERS.HaRP!('^api\\/.*', '/api/v1/x'), false);
  });
});

describe('registration commands', () => {
  it('read the secret from a file in the shell, never print it, and carry the routes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'educai-reg-'));
    const secretFile = join(dir, "dev app'secret");
    writeFileSync(secretFile, 'the-real-secret-value');
    const [daemon, register] = registrationCommands({
      manifest,
      appHost: '0.0.0.0',
      appPort: 23000,
      nextcloudUrl: 'http://nc.local',
      secretFrom: { file: secretFile },
    });
    assert.equal(daemon, 'occ app_api:daemon:register manual_install "Manual Install" manual-install http 127.0.0.1 http://nc.local');
    assert.ok(register?.startsWith('occ app_api:app:register educai manual_install --json-info '));
    assert.ok(!register?.includes('the-real-secret-value'), 'the secret is not printed');
    // Let bash evaluate the printed command with a stand-in for occ that prints its arguments.
    const out = execFileSync('bash', ['-c', `occ() { printf '%s\\n' "$@"; }; ${register}`], { encoding: 'utf8' });
    const args = out.trim().split('\n');
    const info = JSON.parse(args[args.indexOf('--json-info') + 1] ?? '');
    assert.equal(info.secret, 'the-real-secret-value');
    assert.equal(info.port, 23000);
    assert.equal(info.id, 'educai');
    assert.deepEqual(
      info.routes.map((r: { url: string }) => r.url),
      manifest.routes.map((r) => r.url),
    );
    assert.ok(info.routes.every((r: { access_level: number }) => r.access_level === 1 || r.access_level === 2));
    assert.equal(args.at(-1), '--wait-finish');
  });
});
