// The fake AppAPI's `ex-app/state` answers as AppAPI 33 did (test/fixtures/nextcloud33/appapi-ex-app-state.json).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { TEST_SECRET } from '../helpers/harness.ts';

const capture = JSON.parse(readFileSync(new URL('../fixtures/nextcloud33/appapi-ex-app-state.json', import.meta.url), 'utf8')) as Record<
  'enabled' | 'disabled',
  { response: { status: number; body: string } }
>;

describe('AppAPI ex-app/state, fake against the Nextcloud 33 capture', () => {
  let nc: FakeNextcloud;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
  });
  after(async () => nc.close());

  const state = async () => {
    const r = await fetch(`${nc.url}/ocs/v1.php/apps/app_api/ex-app/state?format=json`, {
      headers: {
        'EX-APP-ID': 'educai',
        'EX-APP-VERSION': '0.1.0',
        'AUTHORIZATION-APP-API': Buffer.from(`:${TEST_SECRET}`).toString('base64'),
        'OCS-APIRequest': 'true',
      },
    });
    return { status: r.status, body: (await r.json()) as { ocs: { data: unknown } } };
  };

  it('answers the integer 0 before init finished and 1 after, as AppAPI does', async () => {
    const disabled = JSON.parse(capture.disabled.response.body) as { ocs: { data: unknown } };
    const enabled = JSON.parse(capture.enabled.response.body) as { ocs: { data: unknown } };
    const before = await state();
    assert.equal(before.status, capture.disabled.response.status);
    assert.deepEqual(before.body.ocs.data, disabled.ocs.data);
    nc.appApi.initState.progress = 100;
    const after = await state();
    assert.equal(after.status, capture.enabled.response.status);
    assert.deepEqual(after.body.ocs.data, enabled.ocs.data);
  });
});
