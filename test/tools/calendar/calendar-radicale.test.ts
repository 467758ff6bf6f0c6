// Calendar tools through tsdav against a REAL CalDAV server (radicale 3.1), reached through an
// AppAPI-speaking proxy: the same Custom-auth path as production, and a real identity check.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { NextcloudClient } from '../../../lib/nextcloud/client.ts';
import { NextcloudConflictError } from '../../../lib/nextcloud/errors.ts';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import { CalDavClient } from '../../../lib/tools/calendar/caldav-client.ts';
import { createDavFetch } from '../../../lib/tools/calendar/dav-fetch.ts';
import { buildEvent } from '../../../lib/tools/calendar/icalendar.ts';
import { resolveEventTime } from '../../../lib/tools/calendar/time-zones.ts';
import { CapabilityProbe } from '../../../lib/tools/first-party-capabilities.ts';
import { FirstPartyToolProvider } from '../../../lib/tools/first-party-provider.ts';
import { createInvocationContext } from '../../../lib/tools/tool-provider.ts';
import { APP_ID, APP_SECRET, json, NOW, RecordingConfirmations, text } from '../first-party-fixture.ts';
import { startAppApiProxy, startRadicale, type AppApiProxy, type Radicale } from './radicale-server.ts';

let radicale: Radicale;
let proxy: AppApiProxy;
let client: NextcloudClient;
let provider: FirstPartyToolProvider;
let confirmations: RecordingConfirmations;
let mark = 0;

const ctx = (uid = 'alice') =>
  createInvocationContext({ user: issueFromConfirmedTalkAuthor(uid), actorKind: 'user', botId: 'bot-1', roomToken: 'room-r', messageId: '7' });
const run = (name: string, args: Record<string, unknown>, uid = 'alice') => provider.executeTool(name, args, {}, ctx(uid));

async function basic(method: string, path: string, uid: string, body?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${radicale.url}${path}`, {
    method,
    headers: {
      Authorization: `Basic ${Buffer.from(`${uid}:${radicale.passwords[uid] ?? ''}`).toString('base64')}`,
      'Content-Type': 'application/xml; charset=utf-8',
      ...headers,
    },
    ...(body !== undefined ? { body } : {}),
  });
}

async function mkcalendar(uid: string, uri: string, name: string): Promise<void> {
  await (await basic('PROPFIND', `/${uid}/`, uid, undefined, { Depth: '0' })).arrayBuffer();
  const res = await basic(
    'MKCALENDAR',
    `/${uid}/${uri}/`,
    uid,
    `<?xml version="1.0" encoding="utf-8"?><c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop><d:displayname>${name}</d:displayname><c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set></d:prop></d:set></c:mkcalendar>`,
  );
  await res.arrayBuffer();
  assert.equal(res.status, 201, `MKCALENDAR ${uid}/${uri}`);
}

const stored = () => confirmations.stored();

function assertAllAs(uid: string): void {
  const calls = proxy.calls.slice(mark);
  assert.ok(calls.length > 0);
  for (const c of calls) assert.equal(c.user, uid, `${c.method} ${c.path}`);
}

describe('calendar tools through tsdav against a real radicale', () => {
  before(async () => {
    radicale = await startRadicale({ alice: 'alice-password', bob: 'bob-password' });
    proxy = await startAppApiProxy({ target: radicale.url, appId: APP_ID, appSecret: APP_SECRET, passwords: radicale.passwords });
    client = new NextcloudClient({ baseUrl: proxy.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
    confirmations = new RecordingConfirmations();
    provider = new FirstPartyToolProvider({ nextcloud: client, confirmations, capabilities: new CapabilityProbe(client), now: () => NOW });
    await mkcalendar('alice', 'lessons', 'Lessons');
    await mkcalendar('bob', 'bobcal', 'Bob private');
  });
  after(async () => {
    await proxy?.close();
    await radicale?.stop();
  });
  beforeEach(() => {
    mark = proxy.calls.length;
  });

  it('advertises the calendar tools after discovering CalDAV as the user', async () => {
    const tools = (await provider.getTools(ctx())).map((t) => t.name);
    for (const name of ['calendar_list', 'calendar_search', 'calendar_availability', 'calendar_create_event', 'calendar_update_event', 'calendar_delete_event'])
      assert.ok(tools.includes(name), name);
    assertAllAs('alice');
  });

  it('calendar_list discovers only what exists (no personal calendar is assumed)', async () => {
    const res = await run('calendar_list', {});
    assert.equal(res.isError, false, text(res));
    assert.deepEqual(
      (json(res)['calendars'] as Array<Record<string, unknown>>).map((c) => [c['id'], c['name']]),
      [['lessons', 'Lessons']],
    );
    assertAllAs('alice');
  });

  it('creates an event with a TZID (201 + ETag), finds it by time range, not outside it', async () => {
    const res = await run('calendar_create_event', {
      calendar: 'lessons',
      title: 'Fractions',
      start: '2027-03-05T10:00:00',
      end: '2027-03-05T11:00:00',
      timezone: 'Europe/Berlin',
    });
    assert.equal(res.isError, false, text(res));
    const created = json(res)['created'] as Record<string, unknown>;
    assert.match(String(created['etag']), /^"/);
    const inRange = json(await run('calendar_search', { start: '2027-03-05T00:00:00+01:00', end: '2027-03-06T00:00:00+01:00' }));
    const events = inRange['events'] as Array<Record<string, unknown>>;
    assert.equal(events.length, 1);
    assert.equal(events[0]?.['uid'], created['uid']);
    assert.equal(events[0]?.['start'], '2027-03-05T09:00:00Z');
    assert.equal(events[0]?.['timezone'], 'Europe/Berlin');
    const outside = json(await run('calendar_search', { start: '2027-03-06T00:00:00Z', end: '2027-03-07T00:00:00Z' }));
    assert.equal(outside['count'], 0);
    assertAllAs('alice');
  });

  it('updates with If-Match (radicale answers 201; any 2xx is success) and a stale ETag gives 412', async () => {
    const created = json(await run('calendar_create_event', { calendar: 'lessons', title: 'Old', start: '2027-03-08T10:00:00Z', end: '2027-03-08T11:00:00Z' }))[
      'created'
    ] as Record<string, unknown>;
    const uid = String(created['uid']);
    const stale = await run('calendar_update_event', { uid, etag: '"not-the-etag"', title: 'x' });
    assert.match(text(stale), /changed since you read it/);
    const ok = await run('calendar_update_event', { uid, etag: String(created['etag']), title: 'New' });
    assert.equal(ok.isError, false, text(ok));
    const updated = json(ok)['updated'] as Record<string, unknown>;
    assert.equal(updated['title'], 'New');
    assert.notEqual(updated['etag'], created['etag']);

    // Straight through the client: a stale If-Match on PUT and DELETE is a real 412 from radicale.
    const cal = await CalDavClient.connect(client.as(issueFromConfirmedTalkAuthor('alice')));
    const lessons = (await cal.calendars()).find((c) => c.id === 'lessons');
    assert.ok(lessons);
    const [obj] = await cal.findByUid(lessons, uid);
    assert.ok(obj);
    await assert.rejects(
      () => cal.update(obj, obj.data, String(created['etag'])),
      (err: unknown) => err instanceof NextcloudConflictError && err.status === 412,
    );
    await assert.rejects(
      () => cal.remove(obj, String(created['etag'])),
      (err: unknown) => err instanceof NextcloudConflictError && err.status === 412,
    );
    assertAllAs('alice');
  });

  it('deletes only after confirmation, ETag-checked', async () => {
    const created = json(
      await run('calendar_create_event', { calendar: 'lessons', title: 'Delete me', start: '2027-03-09T10:00:00Z', end: '2027-03-09T11:00:00Z' }),
    )['created'] as Record<string, unknown>;
    const res = await run('calendar_delete_event', { uid: created['uid'] });
    assert.match(text(res), /NOT DONE YET/);
    assert.equal(json(await run('calendar_search', { start: '2027-03-09T00:00:00Z', end: '2027-03-10T00:00:00Z' }))['count'], 1);
    const done = await provider.executeConfirmed(stored(), issueFromConfirmedTalkAuthor('alice'));
    assert.equal(done.isError, false, text(done));
    assert.equal(json(await run('calendar_search', { start: '2027-03-09T00:00:00Z', end: '2027-03-10T00:00:00Z' }))['count'], 0);
  });

  it('availability falls back to a time-range query (radicale has no VFREEBUSY answer and no outbox)', async () => {
    const res = await run('calendar_availability', { start: '2027-03-05T00:00:00Z', end: '2027-03-06T00:00:00Z', attendees: ['bob@example.com'] });
    assert.equal(res.isError, false, text(res));
    const body = json(res);
    assert.deepEqual(body['you'], { busy: [{ start: '2027-03-05T09:00:00Z', end: '2027-03-05T10:00:00Z' }], source: 'events' });
    assert.equal((body['attendees'] as Array<Record<string, unknown>>)[0]?.['available'], false);
    assertAllAs('alice');
  });

  it("isolation: alice never sees bob's calendar, and radicale refuses her a direct PROPFIND of it", async () => {
    await (
      await basic(
        'PUT',
        '/bob/bobcal/secret.ics',
        'bob',
        buildEvent({
          uid: 'bob-secret',
          title: 'Bob secret',
          start: resolveEventTime('2027-03-05T10:00:00Z', undefined, 's'),
          end: resolveEventTime('2027-03-05T11:00:00Z', undefined, 'e'),
          nowMs: NOW,
        }),
        { 'Content-Type': 'text/calendar; charset=utf-8' },
      )
    ).arrayBuffer();
    const search = await run('calendar_search', { start: '2027-03-05T00:00:00Z', end: '2027-03-06T00:00:00Z' });
    assert.equal(text(search).includes('bob-secret'), false);
    const del = await run('calendar_delete_event', { uid: 'bob-secret' });
    assert.match(text(del), /No event with uid "bob-secret"/);
    const fetchAsAlice = createDavFetch(client.as(issueFromConfirmedTalkAuthor('alice')));
    const res = await fetchAsAlice(`${proxy.url}/remote.php/dav/bob/bobcal/`, { method: 'PROPFIND', headers: { Depth: '1' } });
    assert.equal(res.status, 403);
    assertAllAs('alice');

    mark = proxy.calls.length;
    const bobList = json(await run('calendar_list', {}, 'bob'));
    assert.deepEqual(
      (bobList['calendars'] as Array<Record<string, unknown>>).map((c) => c['id']),
      ['bobcal'],
    );
    assertAllAs('bob');
  });
});
