// The typed clients of lib/nextcloud (users, circles, capabilities, dav-files) against the fake Nextcloud:
// each sends the one request its endpoint needs, as the session's identity, and returns what OCS/DAV answered.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getCapabilities } from '../../lib/nextcloud/capabilities.ts';
import { listCircleMembers, listCircles } from '../../lib/nextcloud/circles.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { getUserFile, propfindUserPath, userFilesHrefPrefix, userFilesSearchScope } from '../../lib/nextcloud/dav-files.ts';
import { NextcloudNotFoundError } from '../../lib/nextcloud/errors.ts';
import { issueFromVerifiedHeader } from '../../lib/nextcloud/identity.ts';
import { getCurrentUser, getUser, getUserGroups, listAppApiUsers } from '../../lib/nextcloud/users.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { fakeTeams } from '../fakes/nextcloud/teams-groups.ts';

const SECRET = 'account-clients-secret-0123456789abcdef';

describe('lib/nextcloud typed clients', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  const alice = issueFromVerifiedHeader('alice');
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: SECRET });
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '0.1.0', appSecret: SECRET });
  });
  after(async () => nc.close());

  it('users: cloud/user, cloud/users/{uid}, its groups and the AppAPI list, each as the given identity', async () => {
    nc.reset();
    const me = await getCurrentUser(client.as(alice), { timeoutMs: 5_000 });
    assert.equal(me?.id, 'alice');
    const groups = await getUserGroups(client.as(alice), 'alice');
    assert.ok(Array.isArray(groups?.groups) && groups.groups.includes('educai-students'));
    const view = await getUser(client.as(issueFromVerifiedHeader('admin')), 'bob');
    assert.equal(view.id, 'bob');
    assert.equal(typeof view.enabled, 'boolean', 'an admin sees the enabled flag');
    await assert.rejects(getUser(client.as(issueFromVerifiedHeader('admin')), 'nobody-here'), NextcloudNotFoundError);
    const uids = await listAppApiUsers(client.system());
    assert.ok(Array.isArray(uids) && uids.includes('alice'));
    const calls = nc.calls.map((c) => `${c.method} ${c.path} ${c.user}`);
    assert.ok(calls.includes('GET /ocs/v2.php/cloud/user alice'));
    assert.ok(calls.includes('GET /ocs/v2.php/cloud/users/alice/groups alice'));
    assert.ok(calls.includes('GET /ocs/v2.php/cloud/users/bob admin'));
    assert.ok(calls.some((c) => c.startsWith('GET /ocs/v1.php/apps/app_api/api/v1/users')));
    assert.deepEqual(nc.headerViolations, []);
  });

  it("circles: the user's teams and a team's members", async () => {
    const team = fakeTeams(nc).createTeam({ name: 'Clients team', owner: 'alice' });
    const circles = await listCircles(client.as(alice));
    assert.ok(circles.some((c) => c.id === team.id));
    const members = await listCircleMembers(client.as(alice), team.id);
    assert.ok(members.some((m) => m.userId === 'alice'));
  });

  it('capabilities: cloud/capabilities with its capabilities object', async () => {
    const data = await getCapabilities(client.system(), { timeoutMs: 10_000 });
    assert.equal(typeof data?.capabilities, 'object');
  });

  it("dav-files: the hrefs and scope name the user's files; PROPFIND and GET reach a stored file", async () => {
    assert.equal(userFilesHrefPrefix('a b'), '/remote.php/dav/files/a%20b');
    assert.equal(userFilesSearchScope('a b'), '/files/a%20b');
    nc.dav.files.putFile('alice', 'clients-note.txt', 'hello', 'text/plain');
    const body = '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>';
    const res = await propfindUserPath(client.as(alice), 'alice', 'clients-note.txt', 0, body);
    assert.equal(res.status, 207);
    assert.ok(res.text().includes(`${userFilesHrefPrefix('alice')}/clients-note.txt`));
    const file = await getUserFile(client.as(alice), 'alice', 'clients-note.txt');
    assert.equal(new TextDecoder().decode(file.body), 'hello');
    const call = nc.calls.find((c) => c.method === 'PROPFIND' && c.path.endsWith('/clients-note.txt'))!;
    assert.equal(call.headers['depth'], '0');
  });
});
