// The ExApp against the requests a real AppAPI sent it, for both versions: the lifecycle calls
// (heartbeat, init, enabled) and every Talk delivery captured from Nextcloud 29
// (test/fixtures/nextcloud29/) and Nextcloud 33 (test/fixtures/nextcloud33/), replayed with their
// own headers (the redacted AppAPI header rebuilt with the test secret) and raw bodies, against a
// fake Nextcloud of the same version.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixtureNames, readFixture, receivedWebhooks, type NextcloudVersion, type ReceivedWebhook } from '../helpers/fixtures.ts';
import { APP_VERSION, startHarness, TEST_SECRET, waitFor, type Harness } from '../helpers/harness.ts';

type Json = Record<string, any>;

interface Captured {
  method: string;
  path: string;
  headers: Record<string, string>;
  rawBody: string;
}

/** The captured headers as they were sent, with the AppAPI secret, our app id and version put back (talk-21-reactions.json was recorded by an ExApp `capbot`). */
function replayHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (['host', 'content-length', 'accept-encoding'].includes(name)) continue;
    const redacted = /^base64\("([^:]*):<REDACTED_APP_SECRET>"\)$/.exec(value);
    if (name === 'authorization-app-api' && redacted) out[name] = Buffer.from(`${redacted[1]}:${TEST_SECRET}`).toString('base64');
    else if (name === 'ex-app-version') out[name] = APP_VERSION;
    else if (name === 'ex-app-id') out[name] = 'educai';
    else out[name] = value;
  }
  return out;
}

function lifecycle(version: NextcloudVersion): Captured[] {
  if (version === 29) {
    return [
      '11-exapp-received-heartbeat.json',
      '12-exapp-received-init.json',
      '13-exapp-received-enabled-1.json',
      '60-registration-exapp-received-enabled-0.json',
    ].map((n) => {
      const x = readFixture(n, 29) as Json;
      return { method: x['method'], path: x['path'] ?? x['url'], headers: x['headers'], rawBody: x['rawBody'] ?? '' };
    });
  }
  const x = readFixture('appapi-33-registration-lifecycle.json', 33) as Json;
  return ['02-register-exapp-received', '05-disable-exapp-received', '06-enable-exapp-received'].flatMap((k) => x[k] as Captured[]);
}

const DELIVERIES: Record<NextcloudVersion, string[]> = {
  29: [
    '40-webhook-1-received.json',
    '40-webhook-2-received.json',
    ...fixtureNames(29, /^6[1-9]-talk-webhook.*\.json$/).filter((n) => n !== '67-talk-webhook-system-events.json'),
  ],
  33: fixtureNames(33, /^talk-21-(webhook-.*|reactions|chat-and-bot-api)\.json$/),
};

for (const version of [29, 33] as const) {
  describe(`the ExApp against the requests AppAPI sent on Nextcloud ${version}`, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness({ dialect: 'sqlite', version });
    });
    after(async () => h.close());

    it('answers the lifecycle calls in the captured order and reports init 100', async () => {
      const calls = lifecycle(version);
      assert.ok(calls.some((c) => c.path === '/init') && calls.some((c) => c.path.startsWith('/enabled')));
      for (const c of calls) {
        const r = await h.fetch(c.path, { method: c.method, headers: replayHeaders(c.headers), ...(c.rawBody ? { body: c.rawBody } : {}) });
        assert.equal(r.status, 200, `${c.method} ${c.path}: ${r.text}`);
        if (c.path === '/heartbeat') assert.deepEqual(r.json, { status: 'ok' });
        else if (c.path === '/init') assert.deepEqual(r.json, {});
        else assert.deepEqual(r.json, { error: '' }, c.path);
      }
      await waitFor(() => h.nc.statusReports.some((r) => r.progress === 100), 'init progress 100');
      assert.deepEqual(h.nc.headerViolations, []);
    });

    it('takes every captured Talk delivery: 200 and accepted, ignored or a duplicate, never refused', async () => {
      let n = 0;
      for (const name of DELIVERIES[version]) {
        const deliveries: ReceivedWebhook[] = receivedWebhooks(name, version);
        for (const [i, w] of deliveries.entries()) {
          const route = String((JSON.parse(w.rawBody) as Json)['route'] ?? 'talk_bot');
          const r = await h.fetch(`/${route}`, {
            method: 'POST',
            headers: { ...replayHeaders(w.headers), 'content-type': 'application/json' },
            body: w.rawBody,
          });
          assert.equal(r.status, 200, `${name}#${i}: ${r.text}`);
          assert.match(String(r.json?.status), /^(accepted|ignored|duplicate)$/, `${name}#${i}`);
          n++;
        }
      }
      assert.ok(n > 10, `${n} deliveries replayed`);
    });
  });
}
