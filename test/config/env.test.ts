import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, normalizeNextcloudUrl } from '../../lib/config/env.ts';

const base = {
  APP_ID: 'educai',
  APP_SECRET: 'a-development-secret-of-some-length',
  APP_VERSION: '0.1.0',
  APP_HOST: '0.0.0.0',
  APP_PORT: '23001',
  NEXTCLOUD_URL: 'https://cloud.example.org/index.php/',
  APP_PERSISTENT_STORAGE: '/tmp/educai-data',
};

describe('configuration', () => {
  it('parses a valid environment and strips /index.php', () => {
    const c = loadConfig(base);
    assert.equal(c.nextcloudUrl, 'https://cloud.example.org');
    assert.equal(c.appPort, 23001);
    assert.equal(c.databaseUrl, null);
    assert.equal(c.unixSocket, null);
    assert.equal(c.processingNice, 0, 'both threads at the same priority by default');
    assert.equal(loadConfig({ ...base, EDUCAI_PROCESSING_NICE: '10' }).processingNice, 10);
  });

  it('keeps a sub-path install and uses the HaRP socket when HP_SHARED_KEY is set', () => {
    const c = loadConfig({ ...base, NEXTCLOUD_URL: 'http://host:8080/nextcloud/index.php', HP_SHARED_KEY: 'k' });
    assert.equal(c.nextcloudUrl, 'http://host:8080/nextcloud');
    assert.equal(c.unixSocket, '/tmp/exapp.sock');
    assert.equal(normalizeNextcloudUrl('http://h/'), 'http://h');
  });

  it('names the problem in one line', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ ...base, APP_SECRET: '' }, /APP_SECRET is required/],
      [{ ...base, NEXTCLOUD_URL: 'not a url' }, /NEXTCLOUD_URL is not a valid URL/],
      [{ ...base, NEXTCLOUD_URL: 'ftp://x' }, /http/],
      [{ ...base, APP_PORT: '99999' }, /APP_PORT/],
      [{ ...base, DATABASE_URL: 'mysql://x' }, /postgres/],
      [{ ...base, EDUCAI_PROCESSING_NICE: '20' }, /EDUCAI_PROCESSING_NICE must be between 0 and 19/],
      [{ ...base, EDUCAI_PROCESSING_NICE: '-5' }, /EDUCAI_PROCESSING_NICE must be between 0 and 19/],
    ];
    for (const [env, re] of cases) {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && re.test((err as Error).message) && !(err as Error).message.includes('\n'),
      );
    }
    const { APP_SECRET: _omit, ...withoutSecret } = base;
    assert.throws(() => loadConfig(withoutSecret), /APP_SECRET is required/);
  });

  it('ends the process with a one-line error, not a stack trace', () => {
    const node = process.execPath;
    for (const [env, expected] of [
      [{ ...base, APP_SECRET: '' }, 'APP_SECRET is required'],
      [{ ...base, NEXTCLOUD_URL: 'nextcloud' }, 'NEXTCLOUD_URL is not a valid URL'],
    ] as const) {
      const r = spawnSync(node, ['lib/main.ts'], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 78);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0] ?? '', new RegExp(`configuration error: .*${expected}`));
      assert.doesNotMatch(r.stderr, /at .*\.ts:\d+/);
    }
  });
});
