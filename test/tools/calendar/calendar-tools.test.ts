import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import { readNc29Exchange } from '../../fakes/nextcloud/fixtures.ts';
import { json, startToolWorld, text, type ToolWorld } from '../first-party-fixture.ts';

let w: ToolWorld;
let mark = 0;
const CAL = 'educai-1796010206204';

const stored = () => w.confirmations.stored();

const confirm = () => w.provider.executeConfirmed(stored(), issueFromConfirmedTalkAuthor('alice'));

function event(uid: string, start: string, end: string, summary: string, extra: string[] = []): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//educai//capture-more//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20260101T100000Z',
    `DTSTART:${start}`,
    `DTEND:${end}`,
    `SUMMARY:${summary}`,
    ...extra,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\n');
}

function assertAsAlice(): void {
  const calls = w.callsSince(mark);
  assert.ok(calls.length > 0);
  for (const c of calls) {
    assert.equal(c.user, 'alice', `${c.method} ${c.path}`);
    assert.ok(
      c.path.startsWith('/remote.php/dav') || c.path.startsWith('/ocs/') || c.path === '/index.php/apps/collectives/_api',
      `no request outside our templates: ${c.path}`,
    );
  }
  assert.deepEqual(w.nc.headerViolations, []);
}

describe('calendar tools through tsdav against the fake Nextcloud', () => {
  before(async () => {
    w = await startToolWorld();
    w.nc.dav.calendars.createCalendar('alice', CAL, 'EducAI');
    w.nc.dav.calendars.createCalendar('alice', 'app-generated--deck--board-1', 'Deck: Personal', ['VTODO']);
    w.nc.dav.calendars.putObject('alice', CAL, 'educai-tr-1.ics', event('educai-tr-1', '20270301T090000Z', '20270301T100000Z', 'Lesson 1 (in range)'));
    w.nc.dav.calendars.putObject('alice', CAL, 'educai-tr-2.ics', event('educai-tr-2', '20270302T130000Z', '20270302T143000Z', 'Lesson 2 (in range)'));
    w.nc.dav.calendars.putObject('alice', CAL, 'educai-tr-3.ics', event('educai-tr-3', '20270401T090000Z', '20270401T100000Z', 'Lesson 3 (out of range)'));
    w.nc.dav.calendars.createCalendar('bob', 'personal', 'Personal');
    w.nc.dav.calendars.putObject('bob', 'personal', 'bob-1.ics', event('bob-private', '20270301T093000Z', '20270301T110000Z', 'Bob private dentist'));
  });
  after(async () => {
    await w.close();
  });
  beforeEach(() => {
    mark = w.nc.calls.length;
    w.nc.headerViolations.length = 0;
  });

  it('calendar_list discovers calendars and never assumes personal (capture 22)', async () => {
    const res = await w.run('calendar_list', {});
    assert.equal(res.isError, false, text(res));
    const cals = json(res)['calendars'] as Array<Record<string, unknown>>;
    assert.deepEqual(cals.map((c) => c['id']).sort(), ['app-generated--deck--board-1', CAL]);
    assert.equal(cals.find((c) => c['id'] === CAL)?.['name'], 'EducAI');
    assertAsAlice();
    assert.equal(
      w.callsSince(mark).some((c) => c.path.includes('well-known')),
      false,
      'no discovery probe outside /remote.php/dav',
    );
  });

  it('calendar_search finds events by time range and text (capture 81: 2 of 3)', async () => {
    const res = await w.run('calendar_search', { start: '2027-03-01T00:00:00Z', end: '2027-03-08T00:00:00Z' });
    assert.equal(res.isError, false, text(res));
    const events = json(res)['events'] as Array<Record<string, unknown>>;
    assert.deepEqual(
      events.map((e) => e['uid']),
      ['educai-tr-1', 'educai-tr-2'],
    );
    assert.equal(events[0]?.['start'], '2027-03-01T09:00:00Z');
    const filtered = json(
      await w.run('calendar_search', { start: '2027-03-01T00:00:00', end: '2027-03-08T00:00:00', timezone: 'Europe/Berlin', text: 'lesson 2' }),
    );
    assert.deepEqual(
      (filtered['events'] as Array<Record<string, unknown>>).map((e) => e['uid']),
      ['educai-tr-2'],
    );
    const floating = await w.run('calendar_search', { start: '2027-03-01T00:00:00', end: '2027-03-08T00:00:00' });
    assert.equal(floating.isError, true);
    assert.match(text(floating), /no UTC offset/);
    assertAsAlice();
  });

  it('calendar_create_event needs an offset or a TZID and writes a VTIMEZONE for a TZID', async () => {
    const floating = await w.run('calendar_create_event', { calendar: CAL, title: 'x', start: '2027-03-05T10:00:00', end: '2027-03-05T11:00:00' });
    assert.equal(floating.isError, true);
    assert.match(text(floating), /no UTC offset/);

    const res = await w.run('calendar_create_event', {
      calendar: CAL,
      title: 'Parent meeting',
      start: '2027-03-05T10:00:00',
      end: '2027-03-05T11:00:00',
      timezone: 'Europe/Berlin',
      location: 'Room 4',
    });
    assert.equal(res.isError, false, text(res));
    const created = json(res)['created'] as Record<string, unknown>;
    assert.match(String(created['etag']), /^"/);
    const stored = w.nc.dav.calendars.findByUid('alice', String(created['uid']));
    assert.equal(stored.length, 1);
    const data = stored[0]?.object.data ?? '';
    assert.match(data, /DTSTART;TZID=Europe\/Berlin:20270305T100000/);
    assert.match(data, /BEGIN:VTIMEZONE\r\nTZID:Europe\/Berlin/);
    assert.match(data, /TZOFFSETTO:\+0100/);
    assert.match(data, /LOCATION:Room 4/);
    const put = w.callsSince(mark).find((c) => c.method === 'PUT');
    assert.equal(put?.headers['if-none-match'], '*');

    const offset = json(
      await w.run('calendar_create_event', { calendar: CAL, title: 'Offset', start: '2027-03-06T10:00:00+01:00', end: '2027-03-06T11:00:00+01:00' }),
    );
    const data2 = w.nc.dav.calendars.findByUid('alice', String((offset['created'] as Record<string, unknown>)['uid']))[0]?.object.data ?? '';
    assert.match(data2, /DTSTART:20270306T090000Z/);
    const allDay = await w.run('calendar_create_event', { calendar: CAL, title: 'Holiday', start: '2027-03-10', allDay: true });
    assert.equal(allDay.isError, false, text(allDay));
    assertAsAlice();
  });

  it('refuses an unknown calendar or one without events, naming the real ids', async () => {
    const res = await w.run('calendar_create_event', { calendar: 'personal', title: 'x', start: '2027-03-05T10:00:00Z', end: '2027-03-05T11:00:00Z' });
    assert.equal(res.isError, true);
    assert.match(text(res), new RegExp(`no calendar "personal"\\. Calendars: ${CAL}`));
  });

  it('an event with attendees needs confirmation; then the invitation reaches bob (capture 83, no ETag on PUT)', async () => {
    const res = await w.run('calendar_create_event', {
      calendar: CAL,
      title: 'Parent meeting',
      start: '2027-03-05T10:00:00',
      end: '2027-03-05T11:00:00',
      timezone: 'Europe/Berlin',
      attendees: ['bob@example.com'],
    });
    assert.match(text(res), /NOT DONE YET/);
    assert.match(stored().description, /send invitations to bob@example.com/);
    assert.equal(
      w.callsSince(mark).some((c) => c.method === 'PUT'),
      false,
    );
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    const created = json(done)['created'] as Record<string, unknown>;
    assert.match(String(created['etag']), /^"/, 'the ETag is fetched again when the PUT returns none');
    const inbox = [...w.nc.dav.calendars.inbox('bob').values()];
    assert.equal(inbox.length, 1);
    assert.match(inbox[0]?.data ?? '', /METHOD:REQUEST/);
    const data = w.nc.dav.calendars.findByUid('alice', String(created['uid']))[0]?.object.data ?? '';
    assert.match(data, /ORGANIZER;CN=Alice:mailto:alice@example.com/);
    assertAsAlice();
  });

  it('calendar_availability gives own busy times from the free-busy report and attendees through the outbox (capture 82)', async () => {
    const res = await w.run('calendar_availability', {
      start: '2027-03-01T00:00:00Z',
      end: '2027-03-03T00:00:00Z',
      attendees: ['bob@example.com', 'unknown@example.org'],
    });
    assert.equal(res.isError, false, text(res));
    const body = json(res);
    const you = body['you'] as Record<string, unknown>;
    assert.equal(you['source'], 'free-busy report');
    assert.deepEqual(you['busy'], [
      { start: '2027-03-01T09:00:00Z', end: '2027-03-01T10:00:00Z' },
      { start: '2027-03-02T13:00:00Z', end: '2027-03-02T14:30:00Z' },
    ]);
    const attendees = body['attendees'] as Array<Record<string, unknown>>;
    assert.deepEqual(attendees[0], { address: 'bob@example.com', busy: [{ start: '2027-03-01T09:30:00Z', end: '2027-03-01T11:00:00Z' }] });
    assert.equal(attendees[1]?.['available'], false);
    assert.match(String(attendees[1]?.['reason']), /3\.7/);
    assertAsAlice();
    assert.equal(JSON.stringify(body).includes('dentist'), false, "free/busy never reveals bob's event details");
  });

  it('calendar_update_event is ETag-checked: a stale etag or a 412 changes nothing', async () => {
    w.nc.dav.calendars.putObject('alice', CAL, 'upd.ics', event('upd-1', '20270310T090000Z', '20270310T100000Z', 'Old title'));
    const stale = await w.run('calendar_update_event', { uid: 'upd-1', etag: '"wrong-etag"', title: 'New' });
    assert.equal(stale.isError, true);
    assert.match(text(stale), /changed since you read it/);

    const fixture = readNc29Exchange('83-caldav-event-attendees-ifmatch-delete.json', 'updateWithWrongIfMatch').response;
    w.nc.failNext({ method: 'PUT', path: /upd\.ics$/ }, { status: 412, body: fixture.body });
    const raced = await w.run('calendar_update_event', { uid: 'upd-1', title: 'New' });
    assert.equal(raced.isError, true);
    assert.match(text(raced), /changed on the server/);
    assert.match(w.nc.dav.calendars.calendar('alice', CAL)?.objects.get('upd.ics')?.data ?? '', /SUMMARY:Old title/);

    mark = w.nc.calls.length;
    const ok = await w.run('calendar_update_event', { uid: 'upd-1', title: 'New title', start: '2027-03-10T11:00:00+01:00', end: '2027-03-10T12:00:00+01:00' });
    assert.equal(ok.isError, false, text(ok));
    const obj = w.nc.dav.calendars.calendar('alice', CAL)?.objects.get('upd.ics');
    assert.match(obj?.data ?? '', /SUMMARY:New title/);
    assert.match(obj?.data ?? '', /DTSTART:20270310T100000Z/);
    assert.match(obj?.data ?? '', /SEQUENCE:1/);
    const put = w.callsSince(mark).find((c) => c.method === 'PUT');
    assert.match(put?.headers['if-match'] ?? '', /^"/);
    assertAsAlice();
  });

  it('updating an event with attendees needs confirmation', async () => {
    w.nc.dav.calendars.putObject(
      'alice',
      CAL,
      'att.ics',
      event('att-1', '20270311T090000Z', '20270311T100000Z', 'With bob', ['ORGANIZER:mailto:alice@example.com', 'ATTENDEE:mailto:bob@example.com']),
    );
    const res = await w.run('calendar_update_event', { uid: 'att-1', title: 'Moved' });
    assert.match(text(res), /NOT DONE YET/);
    assert.match(stored().description, /sends an update to .*bob@example.com/);
  });

  it('calendar_delete_event needs confirmation and deletes only the bound revision', async () => {
    w.nc.dav.calendars.putObject('alice', CAL, 'del.ics', event('del-1', '20270312T090000Z', '20270312T100000Z', 'Delete me'));
    const res = await w.run('calendar_delete_event', { uid: 'del-1' });
    assert.match(text(res), /NOT DONE YET/);
    assert.ok(w.nc.dav.calendars.calendar('alice', CAL)?.objects.has('del.ics'));
    const action = stored();
    w.nc.dav.calendars.putObject('alice', CAL, 'del.ics', event('del-1', '20270312T090000Z', '20270312T100000Z', 'Delete me (edited)'));
    const late = await w.provider.executeConfirmed(action, issueFromConfirmedTalkAuthor('alice'));
    assert.match(text(late), /changed since this was prepared/);
    assert.ok(w.nc.dav.calendars.calendar('alice', CAL)?.objects.has('del.ics'));

    await w.run('calendar_delete_event', { uid: 'del-1', calendar: CAL });
    mark = w.nc.calls.length;
    const done = await confirm();
    assert.equal(done.isError, false, text(done));
    assert.equal(w.nc.dav.calendars.calendar('alice', CAL)?.objects.has('del.ics'), false);
    const del = w.callsSince(mark).find((c) => c.method === 'DELETE');
    assert.match(del?.headers['if-match'] ?? '', /^"/);
    const missing = await w.run('calendar_delete_event', { uid: 'del-1' });
    assert.match(text(missing), /No event with uid "del-1"/);
    assertAsAlice();
  });

  it("bob's calendars stay invisible to alice: an argument naming his uid finds nothing", async () => {
    const res = await w.run('calendar_search', { start: '2027-03-01T00:00:00Z', end: '2027-03-08T00:00:00Z' });
    assert.equal(text(res).includes('bob-private'), false);
    const del = await w.run('calendar_delete_event', { uid: 'bob-private' });
    assert.match(text(del), /No event with uid "bob-private"/);
    const other = await w.run('calendar_search', { start: '2027-03-01T00:00:00Z', end: '2027-03-08T00:00:00Z', calendar: 'personal' });
    assert.match(text(other), /no calendar "personal"/);
    assertAsAlice();
  });
});
