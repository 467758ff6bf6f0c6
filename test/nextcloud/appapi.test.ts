import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  embeddedPageUrl,
  getAppConfigValues,
  getUserPreferenceValues,
  readExAppState,
  setAppConfigValue,
  setUserPreferenceValue,
} from '../../lib/nextcloud/appapi.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromVerifiedHeader } from '../../lib/nextcloud/identity.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { TEST_SECRET } from '../helpers/harness.ts';

describe('the AppAPI client (lib/nextcloud/appapi.ts)', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '0.1.0', appSecret: TEST_SECRET });
  });
  after(async () => nc.close());

  it('builds the embedded page address from any form of the Nextcloud URL', () => {
    const want = embeddedPageUrl('https://cloud.example/sub', 'educai', 'educai-main');
    for (const base of ['https://cloud.example/sub/', 'https://cloud.example/sub/index.php', 'https://cloud.example/sub/index.php/']) {
      assert.equal(embeddedPageUrl(base, 'educai', 'educai-main'), want);
    }
    assert.ok(want.startsWith('https://cloud.example/sub/') && want.endsWith('/educai/educai-main'));
  });

  it('app config is written and read as nobody; a key Nextcloud does not hold is absent', async () => {
    nc.calls.length = 0;
    await setAppConfigValue(client, 'ncapp_test_key', 'value-1');
    const values = await getAppConfigValues(client, ['ncapp_test_key', 'ncapp_unset_key']);
    assert.equal(values.get('ncapp_test_key'), 'value-1');
    assert.equal(values.has('ncapp_unset_key'), false);
    assert.ok(nc.calls.length >= 2 && nc.calls.every((c) => c.user === ''));
    assert.deepEqual(nc.headerViolations, []);
  });

  it('a preference belongs to the user whose session wrote it', async () => {
    await setUserPreferenceValue(client.as(issueFromVerifiedHeader('alice')), 'ncapp_pref', 'mine');
    const alice = await getUserPreferenceValues(client.as(issueFromVerifiedHeader('alice')), ['ncapp_pref']);
    const bob = await getUserPreferenceValues(client.as(issueFromVerifiedHeader('bob')), ['ncapp_pref']);
    assert.equal(alice.get('ncapp_pref'), 'mine');
    assert.equal(bob.has('ncapp_pref'), false);
  });

  it('reads the ex-app state as AppAPI answers it', async () => {
    const state = await readExAppState(client, 30_000);
    assert.ok(state === 0 || state === 1);
  });
});
