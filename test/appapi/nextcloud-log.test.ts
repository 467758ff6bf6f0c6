import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { NextcloudLogForwarder } from '../../lib/appapi/nextcloud-log.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { registerSecret } from '../../lib/log/redact.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { TEST_SECRET, waitFor } from '../helpers/harness.ts';

describe('warnings and errors forwarded to nextcloud.log', () => {
  let nc: FakeNextcloud;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
  });
  after(async () => nc.close());

  it('sends redacted warnings and errors, rate-limited per minute', async () => {
    registerSecret(TEST_SECRET);
    let clock = 1_000_000;
    const client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '0.1.0', appSecret: TEST_SECRET });
    const forwarder = new NextcloudLogForwarder(() => client, { perMinute: 3, now: () => clock });
    const logger = createLogger({ destination: new Writable({ write: (_c, _e, cb) => cb() }), onWarnOrError: (l, m) => forwarder.forward(l, m) });
    logger.info('not forwarded');
    logger.warn(`token leaked? ${TEST_SECRET}`);
    logger.error('second');
    logger.error('third');
    logger.error('fourth is over the limit');
    await waitFor(() => nc.logs.length === 3, 'three forwarded lines');
    assert.deepEqual(
      nc.logs.map((l) => l.level),
      [2, 3, 3],
    );
    assert.ok(nc.logs.every((l) => !l.message.includes(TEST_SECRET)));
    clock += 61_000;
    logger.warn('next minute');
    await waitFor(() => nc.logs.length === 5, 'the drop notice and the next line');
    assert.match(nc.logs[3]!.message, /1 further log lines were not forwarded/);
    assert.equal(nc.logs[4]!.message, 'next minute');
    assert.deepEqual(nc.headerViolations, []);
  });
});
