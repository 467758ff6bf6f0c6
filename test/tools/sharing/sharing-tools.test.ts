import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import { SharesApi } from '../../../lib/nextcloud/sharing.ts';
import { readNc29Exchange, readNc33Exchange } from '../../fakes/nextcloud/fixtures.ts';
import { json, seedFiles, startToolWorld, text, type ToolWorld } from '../first-party-fixture.ts';

let w: ToolWorld;
let mark = 0;

const stored = () => w.confirmations.stored();

const confirm = () => w.provider.executeConfirmed(stored(), issueFromConfirmedTalkAuthor('alice'));

function sharesCalls(method: string) {
  return w.callsSince(mark).filter((c) => c.method === method && c.path.includes('/files_sharing/api/v1/shares'));
}

describe('sharing tools against the fake Nextcloud', () => {
  before(async () => {
    w = await startToolWorld();
    seedFiles(w.nc);
    w.nc.dav.files.putFile('alice', 'educai-acceptance.txt', 'written by the ExApp through AppAPI auth\n');
  });
  after(async () => {
    await w.close();
  });
  beforeEach(() => {
    mark = w.nc.calls.length;
    w.nc.headerViolations.length = 0;
  });

  it('creates a read-only user share without confirmation, exactly like capture 23', async () => {
    const res = await w.run('sharing_create_user_share', { path: 'educai-acceptance.txt', user: 'bob' });
    assert.equal(res.isError, false, text(res));
    const shared = json(res)['shared'] as Record<string, unknown>;
    assert.equal(shared['type'], 'user');
    assert.equal(shared['sharedWith'], 'bob');
    assert.deepEqual(shared['permissions'], ['read']);
    assert.match(String(shared['id']), /^\d+$/);
    const post = sharesCalls('POST');
    assert.equal(post.length, 1);
    assert.deepEqual(JSON.parse(post[0]?.body ?? '{}'), { path: '/educai-acceptance.txt', shareType: 0, shareWith: 'bob', permissions: 1 });
    for (const c of w.callsSince(mark)) assert.equal(c.user, 'alice');
    assert.deepEqual(w.nc.headerViolations, []);
  });

  it('lists shares of a path and in total', async () => {
    const res = json(await w.run('sharing_list', { path: 'educai-acceptance.txt' }));
    assert.equal(res['count'], 1);
    const all = json(await w.run('sharing_list', {}));
    assert.ok(Number(all['count']) >= 1);
  });

  it('giving edit rights asks for confirmation and then shares exactly that', async () => {
    const res = await w.run('sharing_create_user_share', { path: 'educai-share', user: 'bob', permissions: ['read', 'update', 'create', 'delete'] });
    assert.match(text(res), /NOT DONE YET/);
    assert.equal(sharesCalls('POST').length, 0);
    assert.match(stored().description, /share the folder \/educai-share with the user Bob \(bob\): can read, update, create, delete/);
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    const share = [...w.nc.dav.sharing.shares.values()].find((s) => s.shareWith === 'bob' && s.permissions === 15);
    assert.ok(share, 'permissions 15 like capture 78');
  });

  it('refuses unknown users and self-shares before any POST; an OCS error envelope (capture 79) is reported', async () => {
    const nobody = await w.run('sharing_create_user_share', { path: 'educai-share', user: 'nobody-here' });
    assert.equal(nobody.isError, true);
    assert.match(text(nobody), /no user "nobody-here"/);
    const self = await w.run('sharing_create_user_share', { path: 'educai-share', user: 'alice' });
    assert.match(text(self), /cannot share with yourself/);
    const display = await w.run('sharing_create_user_share', { path: 'educai-share', user: 'Bob <bob@example.com>' });
    assert.match(text(display), /not a display name/);
    assert.equal(sharesCalls('POST').length, 0);

    const fixture = readNc29Exchange('79-ocs-sharing-errors-v1-vs-v2.json', 'v2ShareWithNonexistentUser').response;
    w.nc.failNext({ method: 'POST', path: /files_sharing\/api\/v1\/shares$/ }, { status: 404, body: fixture.body });
    const res = await w.run('sharing_create_user_share', { path: 'educai-acceptance.txt', user: 'bob' });
    assert.equal(res.isError, true);
    assert.match(text(res), /Please specify a valid account to share with/);
  });

  it('group shares and public links always need confirmation; the link is read-only with password and expiry', async () => {
    const group = await w.run('sharing_create_group_share', { path: 'educai-share/lesson.txt', group: 'educai-students' });
    assert.match(text(group), /NOT DONE YET/);
    assert.match(stored().description, /group educai-students/);
    const g = await confirm();
    assert.equal(g.isError, false, text(g));
    assert.ok([...w.nc.dav.sharing.shares.values()].some((s) => s.shareType === 1 && s.shareWith === 'educai-students' && s.permissions === 1));

    mark = w.nc.calls.length;
    const link = await w.run('sharing_create_public_link', { path: 'educai-share', password: 'correct horse', expireDate: '2030-06-30', label: 'EducAI link' });
    assert.match(text(link), /NOT DONE YET/);
    assert.equal(sharesCalls('POST').length, 0);
    const description = stored().description;
    assert.match(description, /protected by a password, expiring 2030-06-30/);
    assert.equal(description.includes('correct horse'), false, 'the password is never repeated');
    assert.equal(JSON.stringify(stored().args).includes('correct horse'), false, 'the password is not among the stored arguments');
    const l = await confirm();
    assert.equal(l.isError, false, text(l));
    const created = json(l)['created'] as Record<string, unknown>;
    assert.equal(created['passwordProtected'], true);
    assert.match(String(created['url']), /\/index\.php\/s\//);
    assert.equal(JSON.stringify(created).includes('argon2'), false, 'the password hash never reaches the model');
    const body = JSON.parse(sharesCalls('POST')[0]?.body ?? '{}') as Record<string, unknown>;
    assert.deepEqual(body, {
      path: '/educai-share',
      shareType: 3,
      permissions: 1,
      password: 'correct horse',
      expireDate: '2030-06-30',
      label: 'EducAI link',
      publicUpload: 'false',
    });
  });

  it('raising a share to edit needs confirmation; lowering does not; a changed share is not touched', async () => {
    const res = json(await w.run('sharing_create_user_share', { path: 'Talk', user: 'bob' }));
    const id = String((res['shared'] as Record<string, unknown>)['id']);
    const raise = await w.run('sharing_update_permissions', { shareId: id, permissions: ['read', 'update'] });
    assert.match(text(raise), /NOT DONE YET/);
    const action = stored();
    // Someone changes the share before the confirmation.
    const share = w.nc.dav.sharing.shares.get(Number(id));
    assert.ok(share);
    share.permissions = 17;
    const late = await w.provider.executeConfirmed(action, issueFromConfirmedTalkAuthor('alice'));
    assert.match(text(late), /changed since this was prepared/);
    assert.equal(share.permissions, 17);
    share.permissions = 1;
    const again = await w.run('sharing_update_permissions', { shareId: id, permissions: ['read', 'update'] });
    assert.match(text(again), /NOT DONE YET/);
    assert.equal((await confirm()).isError, false);
    assert.equal(share.permissions, 3);
    const before = w.confirmations.requests.length;
    const lower = await w.run('sharing_update_permissions', { shareId: id, permissions: ['read'] });
    assert.equal(lower.isError, false, text(lower));
    assert.equal(w.confirmations.requests.length, before);
    assert.equal(share.permissions, 1);
  });

  it('removing a share needs confirmation and is bound to its state', async () => {
    const res = json(await w.run('sharing_create_user_share', { path: 'pixel.png', user: 'bob' }));
    const id = String((res['shared'] as Record<string, unknown>)['id']);
    const del = await w.run('sharing_delete', { shareId: id });
    assert.match(text(del), /NOT DONE YET/);
    assert.match(stored().description, /remove the user share of \/pixel\.png with Bob \(bob\)/);
    assert.ok(w.nc.dav.sharing.shares.has(Number(id)));
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    assert.equal(w.nc.dav.sharing.shares.has(Number(id)), false);
    const again = await confirm();
    assert.equal(again.isError, true);
    assert.match(text(again), /Wrong share ID, share does not exist/);
  });

  it('share ids are digits only and unknown ids give the OCS 404 of capture 79', async () => {
    for (const bad of ['12/../13', '1?x=2', '%2e%2e', 'abc', '']) {
      const res = await w.run('sharing_delete', { shareId: bad });
      assert.equal(res.isError, true, bad);
      assert.match(text(res), /digits of a share id/);
    }
    const unknown = await w.run('sharing_delete', { shareId: '999999' });
    assert.match(text(unknown), /Wrong share ID, share does not exist/);
  });

  it('only share types user, group and public link can ever be created (S6)', async () => {
    const api = new SharesApi(w.client.as(issueFromConfirmedTalkAuthor('alice')));
    for (const type of [4, 6, 7, 10, 12]) {
      await assert.rejects(() => api.create({ path: '/Talk', shareType: type as 0, permissions: 1 }), /only user, group and public link/);
    }
  });
});

describe('sharing tools against a fake Nextcloud 33: a share that exists already', () => {
  before(async () => {
    w = await startToolWorld({ version: 33 });
    seedFiles(w.nc);
  });
  after(async () => {
    await w.close();
  });

  it('asking for edit rights on a folder already shared read-only reports the share as Nextcloud kept it (ocs-sharing-33.json)', async () => {
    const captured = readNc33Exchange('ocs-sharing-33.json', 'create-user-share-again-with-edit');
    const asked = (JSON.parse(String(captured.request.body)) as { permissions: number }).permissions;
    const kept = (JSON.parse(captured.response.body) as { ocs: { data: { permissions: number } } }).ocs.data.permissions;
    assert.notEqual(kept, asked, 'the capture: the existing share came back with its own permissions');

    const first = await w.run('sharing_create_user_share', { path: 'educai-share', user: 'bob' });
    assert.equal(first.isError, false, text(first));
    const firstShared = json(first)['shared'] as Record<string, unknown>;
    assert.equal(json(first)['note'], undefined, 'a new share is what was asked');

    await w.run('sharing_create_user_share', { path: 'educai-share', user: 'bob', permissions: ['read', 'update'] });
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    const result = json(done);
    const shared = result['shared'] as Record<string, unknown>;
    assert.equal(shared['id'], firstShared['id'], 'the same share came back');
    assert.deepEqual(shared['permissions'], ['read'], 'its permissions as they are, not as asked');
    assert.deepEqual(result['permissionsAsked'], ['read', 'update']);
    assert.match(
      String(result['note']),
      new RegExp(`share ${String(shared['id'])}, which is read-only, not what was asked[\\s\\S]*sharing_update_permissions`),
    );
    assert.equal([...w.nc.dav.sharing.shares.values()].filter((s) => s.shareWith === 'bob').length, 1, 'no second share');
  });
});
