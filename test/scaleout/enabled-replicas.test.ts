import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { TEST_SECRET } from '../helpers/harness.ts';
import { Cluster, system } from './cluster.ts';

describe('scale-out: two web processes receive /enabled at the same time', () => {
  let nc: FakeNextcloud;
  let cluster: Cluster;

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    cluster = await Cluster.create(nc, { rooms: 1 });
    await cluster.start('web');
    await cluster.start('web');
  });
  after(async () => {
    await cluster?.close();
    await nc?.close();
  });

  it('ends with one Talk bot registered, its secret stored once', async () => {
    const answers = await Promise.all(
      [0, 1].map(async (i) => (await fetch(`${cluster.web(i).url}/enabled?enabled=1`, { method: 'PUT', headers: system() })).json()),
    );
    assert.deepEqual(answers, [{ error: '' }, { error: '' }]);
    const registrations = nc.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/api/v1/talk_bot'));
    assert.equal(registrations.length, 2, 'each replica registered');
    assert.deepEqual([...nc.talkBots.keys()], ['talk_bot']);
    assert.equal(nc.talk.bots.size, 1, 'one bot in Talk');
    const identities = await cluster.db.db.selectFrom('talk_identities').selectAll().execute();
    assert.equal(identities.length, 1);
    assert.equal(identities[0]!.route, 'talk_bot');
    const secrets = await cluster.db.db.selectFrom('secrets').select('name').where('name', 'like', 'talk.bot-secret.%').execute();
    assert.equal(secrets.length, 1);
  });
});
