import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MembershipService } from '../../lib/bots/memberships.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromVerifiedHeader } from '../../lib/nextcloud/identity.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { fakeTeams, type FakeTeams } from '../fakes/nextcloud/teams-groups.ts';

const SECRET = 'memberships-test-secret-0123456789abcdef';

describe('MembershipService', () => {
  let nc: FakeNextcloud;
  let teams: FakeTeams;
  let client: NextcloudClient;
  let teamId: string;
  let otherId: string;
  before(async () => {
    nc = await FakeNextcloud.start({
      appId: 'educai',
      appSecret: SECRET,
      users: [
        { id: 'admin', displayName: 'Admin', groups: ['admin'] },
        { id: 'alice', displayName: 'Alice', groups: ['educai-students'] },
        { id: 'bob', displayName: 'Bob', groups: ['educai-students', 'tutors'] },
        { id: 'carol', displayName: 'Carol', groups: [] },
      ],
    });
    teams = fakeTeams(nc);
    teams.makeSubAdmin('bob', 'tutors');
    // As in capture 93: alice creates a team, adds bob, then the whole group, and promotes bob.
    const team = teams.createTeam({ name: 'EducAI team 7b', owner: 'alice' });
    teamId = team.id;
    teams.addMember(teamId, { userId: 'bob', type: 'user' });
    teams.addMember(teamId, { userId: 'educai-students', type: 'group' });
    teams.setLevel(teamId, 'bob', 4);
    const other = teams.createTeam({ name: 'Nested', owner: 'carol' });
    otherId = other.id;
    teams.addMember(otherId, { userId: teamId, type: 'team' });
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '1.0.0', appSecret: SECRET });
  });
  after(async () => nc.close());

  it('reads groups, sub-admin groups and teams as the user, with levels and how they joined', async () => {
    const service = new MembershipService(client);
    nc.reset();
    const bob = await service.forUser(issueFromVerifiedHeader('bob'));
    assert.deepEqual(bob, {
      uid: 'bob',
      isAdmin: false,
      groups: ['educai-students', 'tutors'],
      subAdminGroups: ['tutors'],
      teams: [
        { id: teamId, displayName: 'EducAI team 7b', level: 4, direct: true },
        { id: otherId, displayName: 'Nested', level: 1, direct: false },
      ],
    });
    assert.ok(nc.calls.length >= 3);
    assert.deepEqual(new Set(nc.calls.map((c) => c.user)), new Set(['bob']), 'every call acts as bob');
    assert.deepEqual(nc.headerViolations, []);

    const admin = await service.forUser(issueFromVerifiedHeader('admin'));
    assert.equal(admin.isAdmin, true);
    assert.deepEqual(admin.teams, []);
  });

  it('caches briefly, on the injected clock', async () => {
    let now = 1_000_000;
    const service = new MembershipService(client, { ttlMs: 30_000, now: () => now });
    const alice = issueFromVerifiedHeader('alice');
    nc.reset();
    await service.forUser(alice);
    const first = nc.calls.length;
    now += 29_999;
    await service.forUser(alice);
    assert.equal(nc.calls.length, first, 'served from the cache');
    now += 2;
    await service.forUser(alice);
    assert.equal(nc.calls.length, first * 2, 'read again after the TTL');
    service.invalidate('alice');
    await service.forUser(alice);
    assert.equal(nc.calls.length, first * 3, 'read again after invalidation');
  });

  it('tells a team\u2019s members apart: direct users, groups and anything else (S9)', async () => {
    const service = new MembershipService(client);
    const members = await service.teamMembers(issueFromVerifiedHeader('alice'), teamId);
    assert.deepEqual(
      members?.map((m) => [m.kind, m.id, m.level]),
      [
        ['user', 'alice', 9],
        ['user', 'bob', 4],
        ['group', 'educai-students', 1],
      ],
    );
    const nested = await service.teamMembers(issueFromVerifiedHeader('carol'), otherId);
    assert.deepEqual(
      nested?.map((m) => m.kind),
      ['user', 'other'],
    );
    assert.equal(await service.teamMembers(issueFromVerifiedHeader('carol'), teamId), null, 'a team the user cannot see');
  });

  it('has no teams without the Circles app, and fails closed on other errors', async () => {
    const service = new MembershipService(client);
    nc.failNext({ path: /\/apps\/circles\/circles$/ }, { status: 404, body: '{"ocs":{"meta":{"status":"failure","statuscode":998,"message":""},"data":[]}}' });
    assert.deepEqual((await service.forUser(issueFromVerifiedHeader('carol'))).teams, []);
    nc.failNext({ path: /\/cloud\/users\/bob\/groups$/ }, { status: 500, body: '' });
    await assert.rejects(service.forUser(issueFromVerifiedHeader('bob')));
  });
});
