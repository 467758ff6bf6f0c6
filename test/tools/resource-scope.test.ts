import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertBoardInScope,
  assertCalendarInScope,
  assertCollectiveInScope,
  assertPathInScope,
  ResourceScope,
  ScopeError,
} from '../../lib/tools/resource-scope.ts';

const seg = (p: string) => p.split('/').filter((x) => x !== '');

describe('ResourceScope', () => {
  it('is unrestricted by default and for kinds left out', () => {
    const s = new ResourceScope({ calendars: ['personal'] });
    assert.equal(ResourceScope.unrestricted.restricted, false);
    assert.equal(s.restricted, true);
    assert.equal(s.allowsPath(seg('anything/at/all')), true);
    assert.equal(s.allowsBoard(7), true);
    assert.equal(s.allowsCalendar('work'), false);
  });

  it('compares folder prefixes segment by segment', () => {
    const s = new ResourceScope({ folders: ['/Projects/Alpha/'] });
    assert.equal(s.allowsPath(seg('Projects/Alpha')), true);
    assert.equal(s.allowsPath(seg('Projects/Alpha/notes.md')), true);
    assert.equal(s.allowsPath(seg('Projects/Alphabet/notes.md')), false, 'a prefix of a name is not a prefix of the path');
    assert.equal(s.allowsPath(seg('Projects')), false);
    assert.equal(s.allowsBrowsing(seg('Projects')), true, 'an ancestor on the way may be listed');
    assert.equal(s.allowsBrowsing([]), true);
    assert.equal(s.allowsBrowsing(seg('Other')), false);
  });

  it('refuses folder entries that are not plain paths', () => {
    for (const bad of ['a/../b', '..', 'a/%2e%2e/b', 'a\\b', 'a?b', 'a#b', 'a/\u0000', 'a//b']) {
      assert.throws(() => new ResourceScope({ folders: [bad] }), TypeError, bad);
    }
    assert.throws(() => new ResourceScope({ calendars: ['../x'] }), TypeError);
    assert.throws(() => new ResourceScope({ boards: [0] }), TypeError);
    assert.throws(() => new ResourceScope({ collectives: [1.5] }), TypeError);
    assert.throws(() => new ResourceScope({ folders: Array.from({ length: 51 }, (_, i) => `f${i}`) }), /at most 50/);
  });

  it('covers: an owner scope inside an admin grant', () => {
    const grant = new ResourceScope({ folders: ['Shared/AI'], calendars: ['ai'], boards: [1, 2] });
    assert.equal(grant.covers(new ResourceScope({ folders: ['Shared/AI/Reports'], calendars: ['ai'], boards: [2] })), true);
    assert.equal(grant.covers(new ResourceScope({ folders: ['Shared'] })), false, 'wider folder');
    assert.equal(grant.covers(ResourceScope.unrestricted), false, 'unrestricted is not inside a restricted grant');
    assert.equal(grant.covers(new ResourceScope({ folders: ['Shared/AI'], calendars: ['ai'], boards: [3] })), false);
    assert.equal(ResourceScope.unrestricted.covers(grant), true);
  });

  it('intersect: the narrower of both', () => {
    const grant = new ResourceScope({ folders: ['Shared/AI'], boards: [1, 2] });
    const owner = new ResourceScope({ folders: ['Shared/AI/Reports', 'Private'], boards: [2, 3], calendars: ['x'] });
    assert.deepEqual(grant.intersect(owner).toJSON(), { folders: ['Shared/AI/Reports'], calendars: ['x'], boards: [2] });
    assert.deepEqual(grant.intersect(ResourceScope.unrestricted).toJSON(), { folders: ['Shared/AI'], boards: [1, 2] });
    assert.deepEqual(
      new ResourceScope({ folders: ['A'] }).intersect(new ResourceScope({ folders: ['B'] })).toJSON(),
      { folders: [] },
      'disjoint folders admit nothing',
    );
  });

  it('asserts throw a ScopeError with a message the model can read', () => {
    const s = new ResourceScope({ folders: ['Shared/AI'], calendars: ['ai'], boards: [4], collectives: [9] });
    assert.throws(
      () => assertPathInScope(s, seg('Documents/x.txt'), '/Documents/x.txt'),
      (e: unknown) => e instanceof ScopeError && /\/Documents\/x\.txt is outside the folders this bot may use \(\/Shared\/AI\)/.test(e.message),
    );
    assert.doesNotThrow(() => assertPathInScope(s, seg('Shared/AI/x.txt'), '/Shared/AI/x.txt'));
    assert.throws(() => assertCalendarInScope(s, 'personal'), /calendar "personal" is not one this bot may use/);
    assert.throws(() => assertBoardInScope(s, 5), /Deck board 5/);
    assert.throws(() => assertCollectiveInScope(s, 1), /collective 1/);
  });
});
