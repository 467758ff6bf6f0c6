// S22: the app page runs in Nextcloud's origin with the session's request token, so no
// server or user text may ever become HTML: no v-html, no innerHTML-style sinks in our
// sources, and API answers are JSON that is neither sniffed nor cached.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startHarness, type Harness } from '../helpers/harness.ts';

const srcDir = new URL('../../ex_app/src/', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.(vue|ts|js)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const SINKS: Array<[string, RegExp]> = [
  ['v-html', /\bv-html\b/],
  ['innerHTML', /\.(inner|outer)HTML\s*=/],
  ['insertAdjacentHTML', /insertAdjacentHTML/],
  ['document.write', /document\.write/],
  ['Vue render with innerHTML prop', /\binnerHTML\s*:/],
  ['eval', /\beval\s*\(|new Function\s*\(/],
];

describe('S22: the app page renders no raw HTML', () => {
  it('has sources to check', () => {
    assert.ok(sources(srcDir).length >= 5);
  });

  it('uses no HTML sinks anywhere in ex_app/src', () => {
    const found: string[] = [];
    for (const file of sources(srcDir)) {
      const text = readFileSync(file, 'utf8');
      for (const [name, re] of SINKS) if (re.test(text)) found.push(`${file.slice(srcDir.length)}: ${name}`);
    }
    assert.deepEqual(found, []);
  });

  it('the check itself finds a v-html', () => {
    assert.ok(SINKS.some(([, re]) => re.test('<div v-html="bot.description" />')));
    assert.ok(SINKS.some(([, re]) => re.test('el.innerHTML = text')));
  });

  describe('API answers through the proxy', () => {
    let h: Harness;
    before(async () => {
      h = await startHarness({ dialect: 'sqlite' });
    });
    after(async () => h.close());

    it('are JSON with nosniff and no-store, also for errors', async () => {
      for (const [path, status] of [
        ['/api/v1/me', 200],
        ['/api/v1/catalog', 200],
        ['/api/v1/bots/not-a-bot', 404],
      ] as const) {
        const r = await h.fetch(path, { headers: h.browserHeaders('alice') });
        assert.equal(r.status, status, path);
        assert.match(r.headers.get('content-type') ?? '', /^application\/json/, path);
        assert.equal(r.headers.get('x-content-type-options'), 'nosniff', path);
        assert.match(r.headers.get('cache-control') ?? '', /no-store/, path);
      }
    });
  });
});
