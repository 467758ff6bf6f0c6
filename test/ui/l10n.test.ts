// The app page's German translation is complete and in Nextcloud's l10n format (ex_app/l10n/de.json,
// and de.js, which AppAPI injects), and keeps every placeholder of the English string.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { L10N_DIR, extractStrings, jsFor, readLanguage } from './l10n-strings.ts';

function placeholders(text: string): string[] {
  return [...text.matchAll(/\{[a-zA-Z]+\}|%n/g)].map((m) => m[0]).sort();
}

describe('translations of the app page (German)', () => {
  const de = readLanguage('de');
  const strings = extractStrings();

  it('finds the page’s strings', () => {
    assert.ok(strings.length > 200, `${strings.length} strings`);
    assert.ok(strings.some((s) => s.key === 'My bots'));
    assert.ok(strings.some((s) => s.key === '_%n tool_::_%n tools_' && s.plural));
  });

  it('translates every string of the page, the administration sections and the personal settings included', () => {
    const missing = strings.filter((s) => !(s.key in de.translations)).map((s) => `${s.file}: ${s.key}`);
    assert.deepEqual(missing, [], 'run `node test/ui/l10n-strings.ts de` to list and add them');
  });

  it('keeps the placeholders and gives plurals two forms', () => {
    const wrong: string[] = [];
    for (const [key, value] of Object.entries(de.translations)) {
      const plural = /^_(.*)_::_(.*)_$/s.exec(key);
      if (plural) {
        if (!Array.isArray(value) || value.length !== 2) wrong.push(`${key}: needs [singular, plural]`);
        else if (value.some((v) => !v.includes('%n'))) wrong.push(`${key}: lost %n`);
        continue;
      }
      if (typeof value !== 'string' || value.trim() === '') wrong.push(`${key}: empty`);
      else if (JSON.stringify(placeholders(key)) !== JSON.stringify(placeholders(value))) wrong.push(`${key}: ${value}`);
    }
    assert.deepEqual(wrong, []);
    assert.equal(de.pluralForm, 'nplurals=2; plural=(n != 1);');
  });

  it('ships de.js, generated from de.json, for AppAPI to inject', () => {
    assert.equal(readFileSync(join(L10N_DIR, 'de.js'), 'utf8'), jsFor('educai', de));
  });
});
