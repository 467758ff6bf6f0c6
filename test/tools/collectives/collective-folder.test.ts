// The Collective's folder of a team, as one member sees it: picked by name AND team id, read from
// the landing page's collectivePath (per member upstream: `Collectives/…`, `Kollektive/…`, `.Collectives/…`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCollective, type CollectiveInfo, type CollectivesApi, type PageInfo } from '../../../lib/nextcloud/collectives/api.ts';
import { collectiveFolderPath } from '../../../lib/tools/collectives/collective-folder.ts';
import { NextcloudError } from '../../../lib/nextcloud/errors.ts';

function page(collectiveId: number, id: number, parentId: number, collectivePath: string | null): PageInfo {
  return {
    id,
    collectiveId,
    title: 'Readme',
    parentId,
    fileName: 'Readme.md',
    filePath: '',
    collectivePath,
    size: 0,
    timestamp: 0,
    lastUserId: null,
    subpageOrder: [],
    trashTimestamp: null,
  };
}

function stubApi(collectives: CollectiveInfo[], pages: Record<number, PageInfo[]>): CollectivesApi & { listed: number[] } {
  const listed: number[] = [];
  const no = () => Promise.reject(new Error('not used'));
  return {
    generation: 3,
    listed,
    listCollectives: async () => collectives,
    listPages: async (id) => {
      listed.push(id);
      return pages[id] ?? [];
    },
    getPage: no,
    createPage: no,
    touchPage: no,
    movePage: no,
    trashPage: no,
    confirmActingUser: async () => {},
  };
}

describe('collective folder of a team', () => {
  it('parses circleId strictly: a string of at most 64 characters, or null', () => {
    assert.equal(parseCollective({ id: 1, name: 'A', circleId: 'esUUabc' }, 'op').circleId, 'esUUabc');
    assert.equal(parseCollective({ id: 1, name: 'A', circleId: null }, 'op').circleId, null);
    assert.equal(parseCollective({ id: 1, name: 'A' }, 'op').circleId, null);
    assert.throws(() => parseCollective({ id: 1, name: 'A', circleId: 7 }, 'op'), NextcloudError);
    assert.throws(() => parseCollective({ id: 1, name: 'A', circleId: 'x'.repeat(65) }, 'op'), NextcloudError);
  });

  it('picks the collective of the name whose team is allowed, and returns its landing page collectivePath', async () => {
    const api = stubApi(
      [
        { id: 1, name: 'Math Team', canEdit: true, circleId: 'other-team' },
        { id: 2, name: 'Math Team', canEdit: true, circleId: 'team-a' },
        { id: 3, name: 'Physics', canEdit: true, circleId: 'team-a' },
      ],
      { 1: [page(1, 10, 0, 'Collectives/Math Team')], 2: [page(2, 21, 20, 'Kollektive/Mathe'), page(2, 20, 0, 'Kollektive/Mathe')] },
    );
    assert.equal(await collectiveFolderPath(api, { name: 'Math Team', teamIds: ['team-a'] }), 'Kollektive/Mathe');
    assert.deepEqual(api.listed, [2]);
  });

  it('null: no collective of that name for the allowed teams, no team, no circleId, or no landing path', async () => {
    const api = stubApi(
      [
        { id: 1, name: 'Math Team', canEdit: true, circleId: 'other-team' },
        { id: 2, name: 'Legacy', canEdit: true, circleId: null },
        { id: 3, name: 'Empty', canEdit: true, circleId: 'team-a' },
      ],
      { 1: [page(1, 10, 0, 'Collectives/Math Team')], 2: [page(2, 20, 0, 'Collectives/Legacy')], 3: [page(3, 30, 0, null)] },
    );
    assert.equal(await collectiveFolderPath(api, { name: 'Math Team', teamIds: ['team-a'] }), null);
    assert.equal(await collectiveFolderPath(api, { name: 'Math Team', teamIds: [] }), null);
    assert.equal(await collectiveFolderPath(api, { name: 'Legacy', teamIds: ['team-a'] }), null);
    assert.equal(await collectiveFolderPath(api, { name: 'Empty', teamIds: ['team-a'] }), null);
    assert.equal(
      await collectiveFolderPath(stubApi([{ id: 4, name: 'X', canEdit: true, circleId: 'team-a' }], { 4: [page(4, 40, 0, '.Collectives/X')] }), {
        name: 'X',
        teamIds: ['team-a'],
      }),
      '.Collectives/X',
    );
  });
});
