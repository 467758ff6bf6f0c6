import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyEventChanges,
  buildEvent,
  foldLine,
  freeBusyPeriods,
  mainEvent,
  parseICalendar,
  summarizeEvent,
  unfold,
} from '../../../lib/tools/calendar/icalendar.ts';
import { isTimeZone, offsetMinutes, resolveEventTime, vtimezoneLines, wallToUtc } from '../../../lib/tools/calendar/time-zones.ts';
import { InvalidArgumentError } from '../../../lib/tools/files/user-paths.ts';
import { readNc29Exchange, readNc29Json } from '../../fakes/nextcloud/fixtures.ts';

describe('event times need an explicit offset or a time zone', () => {
  it('takes offsets, Z and local times with an IANA zone; refuses floating times', () => {
    assert.equal(resolveEventTime('2027-03-05T10:00:00+01:00', undefined, 's').utcMs, Date.UTC(2027, 2, 5, 9));
    assert.equal(resolveEventTime('2027-03-05T10:00:00Z', undefined, 's').utcMs, Date.UTC(2027, 2, 5, 10));
    const berlin = resolveEventTime('2027-07-05T10:00', 'Europe/Berlin', 's');
    assert.equal(berlin.utcMs, Date.UTC(2027, 6, 5, 8), 'summer time +02:00');
    assert.equal(berlin.tzid, 'Europe/Berlin');
    assert.throws(
      () => resolveEventTime('2027-03-05T10:00:00', undefined, 'start'),
      (e: unknown) => e instanceof InvalidArgumentError && /no UTC offset/.test(e.message),
    );
    assert.throws(() => resolveEventTime('2027-03-05T10:00:00+05:00', 'Europe/Berlin', 'start'), /does not match Europe\/Berlin/);
    assert.throws(() => resolveEventTime('2027-02-30T10:00:00Z', undefined, 'start'), /not a valid date/);
    assert.throws(() => resolveEventTime('tomorrow at 10', 'Europe/Berlin', 'start'), /not an ISO date-time/);
    assert.throws(() => resolveEventTime('2027-03-05T10:00', 'Mars/Olympus', 'start'), /not a known IANA time zone/);
    assert.equal(resolveEventTime('2027-03-05', undefined, 'start', { allowDate: true }).date, true);
    assert.equal(isTimeZone('Europe/Berlin'), true);
    assert.equal(isTimeZone('../etc/passwd'), false);
  });

  it('handles DST transitions in both directions', () => {
    assert.equal(offsetMinutes('Europe/Berlin', Date.UTC(2027, 0, 1)), 60);
    assert.equal(offsetMinutes('Europe/Berlin', Date.UTC(2027, 6, 1)), 120);
    assert.equal(wallToUtc({ year: 2027, month: 3, day: 28, hour: 1, minute: 30, second: 0 }, 'Europe/Berlin'), Date.UTC(2027, 2, 28, 0, 30));
    assert.equal(wallToUtc({ year: 2027, month: 3, day: 28, hour: 3, minute: 30, second: 0 }, 'Europe/Berlin'), Date.UTC(2027, 2, 28, 1, 30));
  });

  it('generates a VTIMEZONE with the real transitions (as capture 83 spells Europe/Berlin)', () => {
    const lines = vtimezoneLines('Europe/Berlin', Date.UTC(2027, 2, 5), Date.UTC(2027, 2, 5));
    assert.equal(lines[0], 'BEGIN:VTIMEZONE');
    assert.equal(lines[1], 'TZID:Europe/Berlin');
    const text = lines.join('\n');
    assert.match(text, /BEGIN:DAYLIGHT\nDTSTART:20270328T020000\nTZOFFSETFROM:\+0100\nTZOFFSETTO:\+0200\nEND:DAYLIGHT/);
    assert.match(text, /BEGIN:STANDARD\nDTSTART:20271031T030000\nTZOFFSETFROM:\+0200\nTZOFFSETTO:\+0100\nEND:STANDARD/);
    const fixed = vtimezoneLines('Asia/Tokyo', Date.UTC(2027, 2, 5), Date.UTC(2027, 2, 5)).join('\n');
    assert.match(fixed, /TZOFFSETFROM:\+0900\nTZOFFSETTO:\+0900/);
    assert.equal(fixed.includes('DAYLIGHT'), false);
  });
});

describe('iCalendar reading and writing', () => {
  it('reads the captured event with TZID and attendees (capture 83), folded lines included', () => {
    const body = readNc29Exchange('83-caldav-event-attendees-ifmatch-delete.json', 'getEventAsStored').response.body;
    const cal = parseICalendar(body);
    const ev = mainEvent(cal);
    assert.ok(ev);
    const e = summarizeEvent(ev);
    assert.equal(e.uid, 'educai-invite-1');
    assert.equal(e.title, 'Parent meeting');
    assert.equal(e.start?.value, '2027-03-05T09:00:00Z');
    assert.equal(e.start?.tzid, 'Europe/Berlin');
    assert.equal(e.end?.utcMs, Date.UTC(2027, 2, 5, 10));
    assert.equal(e.organizer, 'alice@example.com');
    assert.deepEqual(
      e.attendees.map((a) => a.address),
      ['alice@example.com', 'bob@example.com'],
    );
    assert.equal(e.attendees[1]?.status, 'NEEDS-ACTION');
  });

  it('builds an event that reads back the same, escaping text and folding long lines at 75 octets', () => {
    const start = resolveEventTime('2027-03-05T10:00', 'Europe/Berlin', 's');
    const end = resolveEventTime('2027-03-05T11:00', 'Europe/Berlin', 'e');
    const ics = buildEvent({
      uid: 'u-1',
      title: 'Meeting; parents, teachers\nand a very long title that goes on and on and on and on and on and on — ünïcødé',
      start,
      end,
      location: 'Room 4',
      organizer: { address: 'alice@example.com', name: 'Alice, Teacher' },
      attendees: ['bob@example.com'],
      nowMs: Date.UTC(2027, 0, 1),
    });
    for (const line of ics.split('\r\n')) assert.ok(Buffer.byteLength(line, 'utf8') <= 75, line);
    assert.match(ics, /ORGANIZER;CN="Alice, Teacher":mailto:alice@example.com/);
    const e = summarizeEvent(mainEvent(parseICalendar(ics)) ?? { name: '', lines: [], children: [] });
    assert.equal(e.title, 'Meeting; parents, teachers\nand a very long title that goes on and on and on and on and on and on — ünïcødé');
    assert.equal(e.start?.utcMs, start.utcMs);
    assert.deepEqual(
      e.attendees.map((a) => a.address),
      ['alice@example.com', 'bob@example.com'],
    );
    assert.equal(foldLine('short'), 'short');
  });

  it('applies changes to the master event and keeps everything else', () => {
    const body = readNc29Exchange('83-caldav-event-attendees-ifmatch-delete.json', 'getEventAsStored').response.body;
    const out = applyEventChanges(body, { title: 'Moved', start: resolveEventTime('2027-03-05T09:00', 'Europe/Berlin', 's') }, Date.UTC(2027, 0, 2));
    const e = summarizeEvent(mainEvent(parseICalendar(out)) ?? { name: '', lines: [], children: [] });
    assert.equal(e.title, 'Moved');
    assert.equal(e.start?.value, '2027-03-05T08:00:00Z');
    assert.match(out, /SEQUENCE:1/);
    assert.match(
      unfold(out).join('\n'),
      /ATTENDEE;CN=Bob;PARTSTAT=NEEDS-ACTION;ROLE=REQ-PARTICIPANT;RSVP=TRUE;SCHEDULE-STATUS=5\.0:mailto:bob@example.com/,
      'unknown parameters survive',
    );
    assert.equal(unfold(out).filter((l) => l === 'BEGIN:VTIMEZONE').length, 1, 'the existing VTIMEZONE is reused');
  });

  it('reads the VFREEBUSY answer of capture 82', () => {
    const body = readNc29Exchange('82-caldav-free-busy.json', 'reportFreeBusyQueryOnCalendar').response.body;
    assert.deepEqual(freeBusyPeriods(body), [
      { startMs: Date.UTC(2027, 2, 1, 9), endMs: Date.UTC(2027, 2, 1, 10), type: 'BUSY' },
      { startMs: Date.UTC(2027, 2, 2, 13), endMs: Date.UTC(2027, 2, 2, 14, 30), type: 'BUSY' },
    ]);
    assert.ok(readNc29Json('82-caldav-free-busy.json'));
  });

  it('refuses broken objects instead of guessing', () => {
    assert.throws(() => parseICalendar('BEGIN:VCALENDAR\nBEGIN:VEVENT\nEND:VCALENDAR\n'), /do not match/);
    assert.throws(() => parseICalendar('not a calendar'), /content line has no value|not a complete VCALENDAR/);
  });
});
