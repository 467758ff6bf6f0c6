import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rankDocuments, tokenize } from '../../lib/wiki/wiki-search.ts';
import { EXISTING_FILES_HEADING, logEntry, titleOf, withExistingFiles } from '../../lib/wiki/wiki-text.ts';
import { paginate } from '../../lib/tools/page-text.ts';

describe('wiki page pagination', () => {
  it('counts characters, not bytes, over multibyte text, and the last chunk has has_more=false', () => {
    // 3-byte CJK, 2-byte umlauts and 4-byte emoji (surrogate pairs in JavaScript strings).
    const text = 'ä'.repeat(2000) + '漢'.repeat(2000) + '😀'.repeat(2000);
    assert.equal(Buffer.byteLength(text), 2000 * 2 + 2000 * 3 + 2000 * 4);
    const first = paginate(text, undefined, undefined);
    assert.deepEqual(
      { offset: first.offset, limit: first.limit, returned: first.returned_length, total: first.total_length, more: first.has_more, next: first.next_offset },
      { offset: 0, limit: 3000, returned: 3000, total: 6000, more: true, next: 3000 },
    );
    assert.equal(first.content, 'ä'.repeat(2000) + '漢'.repeat(1000));
    const second = paginate(text, first.next_offset, 3500);
    assert.equal(second.returned_length, 3000);
    assert.equal(second.has_more, false);
    assert.equal(second.next_offset, null);
    assert.equal(second.content, '漢'.repeat(1000) + '😀'.repeat(2000));
    // No chunk splits an emoji: every character of the third page is whole.
    const emoji = paginate(text, 5999, 10);
    assert.equal(emoji.content, '😀');
    assert.equal(first.content + second.content, text);
  });

  it('caps the limit at 3500, clamps offsets and accepts numeric strings', () => {
    const text = 'x'.repeat(10_000);
    assert.equal(paginate(text, 0, 99_999).limit, 3500);
    assert.equal(paginate(text, 0, 0).limit, 1);
    assert.equal(paginate(text, -5, 10).offset, 0);
    const end = paginate(text, 20_000, 10);
    assert.deepEqual([end.offset, end.returned_length, end.has_more, end.next_offset], [10_000, 0, false, null]);
    assert.equal(paginate(text, '9990', '5').next_offset, 9995);
  });
});

describe('wiki index and log text', () => {
  it('takes the title from the first heading, else the file name', () => {
    assert.equal(titleOf('intro\n# Fractions  \n## Part', 'f.md'), 'Fractions');
    assert.equal(titleOf('no heading', 'notes/Week 1.md'.split('/').pop()!), 'Week 1');
  });

  it('replaces only the managed section and keeps what people wrote around it', () => {
    const index = `# Tutor wiki\n\nMy intro.\n\n${EXISTING_FILES_HEADING}\n\n- old line\n\n## My own notes\n\nkeep me\n`;
    const next = withExistingFiles(index, [
      { path: 'topics/b page.md', title: 'B [draft]', size: 12 },
      { path: 'a.md', title: 'A', size: 3 },
    ]);
    assert.match(next, /^# Tutor wiki\n\nMy intro\.\n\n## Existing Files\n/);
    assert.doesNotMatch(next, /old line/);
    assert.match(next, /## My own notes\n\nkeep me/);
    const lines = next.split('\n').filter((l) => l.startsWith('- ['));
    assert.deepEqual(lines, ['- [A](a.md) — `a.md` (3 bytes)', '- [B \\[draft\\]](topics/b%20page.md) — `topics/b page.md` (12 bytes)']);
    // Idempotent: the same files give the same text (no write, no etag churn).
    assert.equal(
      withExistingFiles(next, [
        { path: 'a.md', title: 'A', size: 3 },
        { path: 'topics/b page.md', title: 'B [draft]', size: 12 },
      ]),
      next,
    );
    // Missing section: appended.
    assert.match(withExistingFiles('# Mine\n', []), /^# Mine\n\n## Existing Files\n[\s\S]*_No pages yet\._/);
  });

  it('writes dated log entries with the title capped at 160 characters', () => {
    const entry = logEntry(Date.UTC(2026, 10, 30, 8, 55), `Saved\nfractions ${'x'.repeat(300)}`, 'Added the page.');
    const heading = entry.split('\n')[1]!;
    assert.ok(heading.startsWith('## [2026-11-30 08:55] Saved fractions '));
    assert.equal(Array.from(heading.slice('## [2026-11-30 08:55] '.length)).length, 160);
    assert.match(entry, /\n\nAdded the page\.\n$/);
  });
});

describe('wiki search ranking', () => {
  it('ranks by BM25 with path hits boosted, not by raw substring counts', () => {
    const docs = [
      // Many repetitions of a common word in a long page.
      { path: 'misc/long.md', text: `${'the fraction '.repeat(40)} ${'filler words here '.repeat(200)}`, size: 1 },
      { path: 'topics/fractions.md', text: 'Adding fractions needs a common denominator.', size: 2 },
      { path: 'topics/decimals.md', text: 'Decimals and percentages.', size: 3 },
    ];
    const hits = rankDocuments('fractions denominator', docs, 5);
    assert.equal(hits[0]!.path, 'topics/fractions.md');
    assert.ok(!hits.some((h) => h.path === 'topics/decimals.md'));
    assert.ok(hits[0]!.snippet.includes('common denominator'));
    // A query term only in the path still finds the page.
    assert.equal(
      rankDocuments(
        'decimals',
        [
          { path: 'topics/decimals.md', text: 'percentages only', size: 1 },
          { path: 'x.md', text: 'nothing', size: 1 },
        ],
        5,
      )[0]!.path,
      'topics/decimals.md',
    );
    assert.deepEqual(rankDocuments('   ', docs, 5), []);
  });

  it('tokenizes any script', () => {
    assert.deepEqual(tokenize('Brüche & 分数, ÜBUNG-2'), ['brüche', '分数', 'übung', '2']);
  });
});
