import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandWikiAssignments, locationOf, validateWikiConfig, WIKI_TOOL_NAMES } from '../../lib/wiki/wiki-config.ts';
import { defaultRootFor, parseCustomRoot, parsePagePath } from '../../lib/wiki/wiki-paths.ts';

describe('wiki page path safety', () => {
  const refused: Array<[unknown, RegExp]> = [
    ['../secret.md', /must not contain "\.\."/],
    ['notes/../../x.md', /must not contain "\.\."/],
    ['/etc/passwd.md', /must be relative/],
    ['\\share\\x.md', /must be relative/],
    ['C:/x.md', /must be relative/],
    ['.hidden.md', /hidden/],
    ['notes/.git/config.md', /hidden/],
    ['notes//x.md', /empty/],
    ['./x.md', /empty or "\."/],
    ['script.sh', /\.md, \.txt or \.json/],
    ['image.png', /\.md, \.txt or \.json/],
    ['noext', /\.md, \.txt or \.json/],
    ['a\u0000b.md', /control/],
    [`${'a'.repeat(510)}.md`, /at most 512/],
    ['', /must not be empty/],
    [42, /must be a string/],
  ];
  for (const [input, message] of refused) {
    it(`refuses ${JSON.stringify(String(input)).slice(0, 40)}`, () => {
      assert.throws(
        () => parsePagePath(input),
        (err: Error) => err.name === 'InvalidArgumentError' && message.test(err.message),
      );
    });
  }

  it('accepts plain relative pages of the allowed types', () => {
    assert.equal(parsePagePath('topics/Brüche 1.md').relative, 'topics/Brüche 1.md');
    assert.equal(parsePagePath('data.JSON').relative, 'data.JSON');
    assert.equal(parsePagePath('sources/notes.txt').relative, 'sources/notes.txt');
  });

  it('builds the default root from the bot mention and checks custom roots', () => {
    assert.equal(defaultRootFor('Math-Tutor').relative, 'Talk AI/Personal Wikis/math-tutor');
    assert.equal(parseCustomRoot('Talk AI/Class 7b/').relative, 'Talk AI/Class 7b');
    assert.throws(() => parseCustomRoot('Documents/wiki'), /inside "Talk AI\/"/);
    assert.throws(() => parseCustomRoot('Talk AI'), /inside "Talk AI\/"/);
    assert.throws(() => parseCustomRoot('Talk AI/../Documents'), /"\.\."/);
    assert.throws(() => parseCustomRoot('/Talk AI/x'), /relative/);
    assert.throws(() => parseCustomRoot('Talk AI/.secret'), /hidden/);
    assert.throws(() => parseCustomRoot(`Talk AI/${'x'.repeat(520)}`), /at most 512/);
  });
});

describe('wiki location config', () => {
  it('validates with one error per field', () => {
    assert.deepEqual(validateWikiConfig({}), { ok: true, config: { location: 'personal_files' } });
    assert.deepEqual(validateWikiConfig({ location: 'personal_files', rootPath: 'Talk AI/Class/' }), {
      ok: true,
      config: { location: 'personal_files', rootPath: 'Talk AI/Class' },
    });
    assert.deepEqual(validateWikiConfig({ location: 'collective', collective: 'Math Team' }), {
      ok: true,
      config: { location: 'collective', collective: 'Math Team' },
    });
    const bad = validateWikiConfig({ location: 'personal_files', rootPath: '../x', collective: 'A', url: 'http://x' });
    assert.equal(bad.ok, false);
    assert.ok(
      !bad.ok &&
        /"\.\."/.test(bad.errors['rootPath']!) &&
        bad.errors['collective'] === 'Only for the collective location' &&
        bad.errors['url'] === 'Unknown setting',
    );
    const where = validateWikiConfig({ location: 'dropbox' });
    assert.ok(!where.ok && where.errors['location'] === 'Must be personal_files or collective');
    const noName = validateWikiConfig({ location: 'collective' });
    assert.ok(!noName.ok && /Collective/.test(noName.errors['collective']!));
    const slash = validateWikiConfig({ location: 'collective', collective: 'a/b' });
    assert.ok(!slash.ok && /no "\/"/.test(slash.errors['collective']!));
    assert.deepEqual(locationOf({ location: 'collective', collective: 'Math Team', force: true }), { kind: 'collective', collective: 'Math Team' });
    assert.deepEqual(locationOf({ rootPath: '../../x' }), { kind: 'personal_files', rootPath: null });
  });

  it('expands any wiki tool to all four with one shared config', () => {
    const out = expandWikiAssignments([
      { name: 'files_list', config: {} },
      { name: 'wiki_read_page', config: { location: 'personal_files', rootPath: 'Talk AI/X' } },
      { name: 'wiki_search', config: { force: true } },
      { name: 'calendar_list', config: {} },
    ]);
    assert.deepEqual(
      out.map((a) => a.name),
      ['files_list', ...WIKI_TOOL_NAMES, 'calendar_list'],
    );
    for (const a of out.filter((x) => x.name.startsWith('wiki_'))) assert.equal(a.config['rootPath'], 'Talk AI/X');
    assert.equal(out.find((a) => a.name === 'wiki_search')!.config['force'], true);
    assert.deepEqual(expandWikiAssignments([{ name: 'files_list', config: {} }]), [{ name: 'files_list', config: {} }]);
  });
});
