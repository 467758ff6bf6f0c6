// A small RFC 5545 reader and writer: enough to list, create and edit single events while
// keeping every line we do not understand exactly as it was.
import { icsDate, icsLocal, icsUtc, isTimeZone, isoUtc, vtimezoneLines, wallToUtc, type ResolvedTime, type WallTime } from './time-zones.ts';

export interface ContentLine {
  name: string;
  params: Record<string, string>;
  value: string;
}

export interface Component {
  name: string;
  lines: ContentLine[];
  children: Component[];
}

export class ICalendarError extends Error {
  override name = 'ICalendarError';
}

const MAX_ICS_CHARS = 2 * 1024 * 1024;
const MAX_DEPTH = 8;

export function unfold(text: string): string[] {
  return text
    .replace(/\r\n|\r/g, '\n')
    .replace(/\n[ \t]/g, '')
    .split('\n')
    .filter((l) => l !== '');
}

function parseLine(line: string): ContentLine {
  let i = 0;
  let inQuote = false;
  let nameEnd = -1;
  let valueStart = -1;
  for (; i < line.length; i++) {
    const c = line[i];
    if (c === '"') inQuote = !inQuote;
    else if (!inQuote && c === ';' && nameEnd < 0) nameEnd = i;
    else if (!inQuote && c === ':') {
      valueStart = i + 1;
      if (nameEnd < 0) nameEnd = i;
      break;
    }
  }
  if (valueStart < 0) throw new ICalendarError('a content line has no value');
  const name = line.slice(0, nameEnd).toUpperCase();
  const params: Record<string, string> = {};
  const rawParams = line.slice(nameEnd, valueStart - 1);
  const re = /;([A-Za-z0-9-]+)=("[^"]*"|[^;:]*)/g;
  for (const m of rawParams.matchAll(re)) {
    const key = (m[1] ?? '').toUpperCase();
    const v = m[2] ?? '';
    params[key] = v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
  }
  return { name, params, value: line.slice(valueStart) };
}

/** Parses a VCALENDAR object (the first one in the text). */
export function parseICalendar(text: string): Component {
  if (text.length > MAX_ICS_CHARS) throw new ICalendarError('the calendar object is too large');
  const stack: Component[] = [];
  let root: Component | null = null;
  for (const raw of unfold(text)) {
    const line = parseLine(raw);
    if (line.name === 'BEGIN') {
      const c: Component = { name: line.value.trim().toUpperCase(), lines: [], children: [] };
      const parent = stack[stack.length - 1];
      if (parent) parent.children.push(c);
      else if (root === null) root = c;
      else break;
      stack.push(c);
      if (stack.length > MAX_DEPTH) throw new ICalendarError('the calendar object is nested too deeply');
    } else if (line.name === 'END') {
      const top = stack.pop();
      if (!top || top.name !== line.value.trim().toUpperCase()) throw new ICalendarError('BEGIN and END do not match');
      if (stack.length === 0) break;
    } else {
      const top = stack[stack.length - 1];
      if (top) top.lines.push(line);
    }
  }
  if (!root || root.name !== 'VCALENDAR' || stack.length > 0) throw new ICalendarError('not a complete VCALENDAR');
  return root;
}

function paramValue(v: string): string {
  return /[;:,"]/.test(v) ? `"${v.replace(/"/g, "'")}"` : v;
}

function lineText(l: ContentLine): string {
  const params = Object.entries(l.params)
    .map(([k, v]) => `;${k}=${paramValue(v)}`)
    .join('');
  return `${l.name}${params}:${l.value}`;
}

/** Folds at 75 octets without splitting a UTF-8 sequence. */
export function foldLine(line: string): string {
  const bytes = Buffer.from(line, 'utf8');
  if (bytes.length <= 75) return line;
  const parts: string[] = [];
  let current = '';
  let size = 0;
  let limit = 75;
  for (const ch of line) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (size + n > limit) {
      parts.push(current);
      current = '';
      size = 0;
      limit = 74;
    }
    current += ch;
    size += n;
  }
  parts.push(current);
  return parts.join('\r\n ');
}

export function serializeComponent(c: Component): string {
  const out: string[] = [];
  const walk = (x: Component): void => {
    out.push(`BEGIN:${x.name}`);
    for (const l of x.lines) out.push(foldLine(lineText(l)));
    for (const child of x.children) walk(child);
    out.push(`END:${x.name}`);
  };
  walk(c);
  return out.join('\r\n') + '\r\n';
}

export function escapeText(s: string): string {
  return s
    .replace(/\\/g, '\\\\')
    .replace(/;/g, '\\;')
    .replace(/,/g, '\\,')
    .replace(/\r\n|\r|\n/g, '\\n');
}

export function unescapeText(s: string): string {
  return s.replace(/\\([\\;,nN])/g, (_m, c: string) => (c === 'n' || c === 'N' ? '\n' : c));
}

export function prop(c: Component, name: string): ContentLine | undefined {
  return c.lines.find((l) => l.name === name);
}

/** The master VEVENT (the one without RECURRENCE-ID), else the first. */
export function mainEvent(cal: Component): Component | null {
  const events = cal.children.filter((c) => c.name === 'VEVENT');
  return events.find((e) => !prop(e, 'RECURRENCE-ID')) ?? events[0] ?? null;
}

export interface EventTime {
  /** UTC ISO time, or `YYYY-MM-DD` for all-day dates. */
  value: string;
  utcMs: number;
  tzid: string | null;
  date: boolean;
}

export interface Attendee {
  address: string;
  name: string;
  status: string;
}

export interface EventSummary {
  uid: string;
  title: string;
  description: string;
  location: string;
  start: EventTime | null;
  end: EventTime | null;
  allDay: boolean;
  organizer: string | null;
  attendees: Attendee[];
  recurring: boolean;
  status: string;
  transparent: boolean;
}

const ICS_DATE = /^(\d{4})(\d{2})(\d{2})$/;
const ICS_DATE_TIME = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z)?$/;

export function parseTime(line: ContentLine | undefined): EventTime | null {
  if (!line) return null;
  const v = line.value.trim();
  const d = ICS_DATE.exec(v);
  if (d || line.params['VALUE'] === 'DATE') {
    if (!d) return null;
    const utcMs = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]));
    return { value: `${d[1]}-${d[2]}-${d[3]}`, utcMs, tzid: null, date: true };
  }
  const m = ICS_DATE_TIME.exec(v);
  if (!m) return null;
  const wall: WallTime = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]), hour: Number(m[4]), minute: Number(m[5]), second: Number(m[6]) };
  const tzid = line.params['TZID'] ?? null;
  let utcMs: number;
  if (m[7]) utcMs = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  else if (tzid && isTimeZone(tzid)) utcMs = wallToUtc(wall, tzid);
  // Floating time or a non-IANA TZID: read it as UTC (an approximation we never write back).
  else utcMs = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  return { value: isoUtc(utcMs), utcMs, tzid: m[7] ? null : tzid, date: false };
}

function durationMs(text: string): number | null {
  const m = /^([+-])?P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/.exec(text.trim());
  if (!m) return null;
  const sign = m[1] === '-' ? -1 : 1;
  const n = (i: number): number => Number(m[i] ?? 0);
  return sign * ((n(2) * 7 + n(3)) * 86_400_000 + n(4) * 3_600_000 + n(5) * 60_000 + n(6) * 1000);
}

function mailto(v: string): string {
  return v.replace(/^mailto:/i, '').trim();
}

export function summarizeEvent(event: Component): EventSummary {
  const start = parseTime(prop(event, 'DTSTART'));
  let end = parseTime(prop(event, 'DTEND'));
  if (!end && start) {
    const dur = prop(event, 'DURATION');
    const ms = dur ? durationMs(dur.value) : start.date ? 86_400_000 : 0;
    if (ms !== null) {
      const utcMs = start.utcMs + ms;
      end = start.date
        ? { value: new Date(utcMs).toISOString().slice(0, 10), utcMs, tzid: null, date: true }
        : { value: isoUtc(utcMs), utcMs, tzid: start.tzid, date: false };
    }
  }
  const text = (name: string): string => unescapeText(prop(event, name)?.value ?? '');
  return {
    uid: prop(event, 'UID')?.value.trim() ?? '',
    title: text('SUMMARY'),
    description: text('DESCRIPTION'),
    location: text('LOCATION'),
    start,
    end,
    allDay: start?.date ?? false,
    organizer: prop(event, 'ORGANIZER') ? mailto(prop(event, 'ORGANIZER')?.value ?? '') : null,
    attendees: event.lines
      .filter((l) => l.name === 'ATTENDEE')
      .map((l) => ({ address: mailto(l.value), name: l.params['CN'] ?? '', status: l.params['PARTSTAT'] ?? '' })),
    recurring: event.lines.some((l) => l.name === 'RRULE' || l.name === 'RDATE'),
    status: (prop(event, 'STATUS')?.value ?? '').toUpperCase(),
    transparent: (prop(event, 'TRANSP')?.value ?? '').toUpperCase() === 'TRANSPARENT',
  };
}

function timeLine(name: string, t: ResolvedTime): ContentLine {
  if (t.date) return { name, params: { VALUE: 'DATE' }, value: icsDate(t.wall) };
  if (t.tzid) return { name, params: { TZID: t.tzid }, value: icsLocal(t.wall) };
  return { name, params: {}, value: icsUtc(t.utcMs) };
}

function timezoneComponent(tz: string, from: number, to: number): Component {
  const cal = parseICalendar(['BEGIN:VCALENDAR', ...vtimezoneLines(tz, from, to), 'END:VCALENDAR'].join('\r\n'));
  const vtz = cal.children[0];
  if (!vtz) throw new ICalendarError('could not build a VTIMEZONE');
  return vtz;
}

function ensureTimezones(cal: Component, times: ResolvedTime[]): void {
  const have = new Set(cal.children.filter((c) => c.name === 'VTIMEZONE').map((c) => prop(c, 'TZID')?.value ?? ''));
  const zones = [...new Set(times.map((t) => t.tzid).filter((z): z is string => z !== null))];
  const span = times.map((t) => t.utcMs);
  for (const tz of zones) {
    if (have.has(tz)) continue;
    cal.children.unshift(timezoneComponent(tz, Math.min(...span), Math.max(...span)));
  }
}

export interface NewEvent {
  uid: string;
  title: string;
  start: ResolvedTime;
  end: ResolvedTime;
  location?: string;
  description?: string;
  /** mailto address of the organizer (the invoking user); required with attendees. */
  organizer?: { address: string; name: string };
  attendees?: string[];
  nowMs: number;
}

export function buildEvent(e: NewEvent): string {
  const event: Component = { name: 'VEVENT', lines: [], children: [] };
  const add = (name: string, value: string, params: Record<string, string> = {}): void => void event.lines.push({ name, params, value });
  add('UID', e.uid);
  add('DTSTAMP', icsUtc(e.nowMs));
  add('CREATED', icsUtc(e.nowMs));
  event.lines.push(timeLine('DTSTART', e.start), timeLine('DTEND', e.end));
  add('SUMMARY', escapeText(e.title));
  if (e.location) add('LOCATION', escapeText(e.location));
  if (e.description) add('DESCRIPTION', escapeText(e.description));
  if (e.attendees && e.attendees.length > 0 && e.organizer) {
    add('ORGANIZER', `mailto:${e.organizer.address}`, e.organizer.name ? { CN: e.organizer.name } : {});
    add('ATTENDEE', `mailto:${e.organizer.address}`, { ...(e.organizer.name ? { CN: e.organizer.name } : {}), PARTSTAT: 'ACCEPTED', ROLE: 'CHAIR' });
    for (const a of e.attendees) add('ATTENDEE', `mailto:${a}`, { PARTSTAT: 'NEEDS-ACTION', ROLE: 'REQ-PARTICIPANT', RSVP: 'TRUE' });
  }
  add('SEQUENCE', '0');
  const cal: Component = {
    name: 'VCALENDAR',
    lines: [
      { name: 'VERSION', params: {}, value: '2.0' },
      { name: 'PRODID', params: {}, value: '-//educai//Talk AI//EN' },
      { name: 'CALSCALE', params: {}, value: 'GREGORIAN' },
    ],
    children: [event],
  };
  ensureTimezones(cal, [e.start, e.end]);
  return serializeComponent(cal);
}

export interface EventChanges {
  title?: string;
  location?: string;
  description?: string;
  start?: ResolvedTime;
  end?: ResolvedTime;
}

function setLine(c: Component, line: ContentLine): void {
  const i = c.lines.findIndex((l) => l.name === line.name);
  if (i >= 0) c.lines[i] = line;
  else c.lines.push(line);
}

/** Applies changes to the master event, bumps SEQUENCE and DTSTAMP, keeps everything else. */
export function applyEventChanges(text: string, changes: EventChanges, nowMs: number): string {
  const cal = parseICalendar(text);
  const event = mainEvent(cal);
  if (!event) throw new ICalendarError('the object holds no event');
  if (changes.title !== undefined) setLine(event, { name: 'SUMMARY', params: {}, value: escapeText(changes.title) });
  if (changes.location !== undefined) setLine(event, { name: 'LOCATION', params: {}, value: escapeText(changes.location) });
  if (changes.description !== undefined) setLine(event, { name: 'DESCRIPTION', params: {}, value: escapeText(changes.description) });
  if (changes.start) setLine(event, timeLine('DTSTART', changes.start));
  if (changes.end) {
    event.lines = event.lines.filter((l) => l.name !== 'DURATION');
    setLine(event, timeLine('DTEND', changes.end));
  }
  const seq = Number(prop(event, 'SEQUENCE')?.value ?? '0');
  setLine(event, { name: 'SEQUENCE', params: {}, value: String(Number.isInteger(seq) && seq >= 0 ? seq + 1 : 1) });
  setLine(event, { name: 'DTSTAMP', params: {}, value: icsUtc(nowMs) });
  setLine(event, { name: 'LAST-MODIFIED', params: {}, value: icsUtc(nowMs) });
  ensureTimezones(
    cal,
    [changes.start, changes.end].filter((t): t is ResolvedTime => t !== undefined),
  );
  return serializeComponent(cal);
}

/** Busy periods of a VFREEBUSY answer (FBTYPE FREE is skipped). */
export function freeBusyPeriods(text: string): Array<{ startMs: number; endMs: number; type: string }> {
  const cal = parseICalendar(text);
  const out: Array<{ startMs: number; endMs: number; type: string }> = [];
  for (const fb of cal.children.filter((c) => c.name === 'VFREEBUSY')) {
    for (const l of fb.lines.filter((x) => x.name === 'FREEBUSY')) {
      const type = (l.params['FBTYPE'] ?? 'BUSY').toUpperCase();
      if (type === 'FREE') continue;
      for (const period of l.value.split(',')) {
        const [a, b] = period.split('/');
        const start = parseTime({ name: 'X', params: {}, value: (a ?? '').trim() });
        if (!start || b === undefined) continue;
        const endTime = parseTime({ name: 'X', params: {}, value: b.trim() });
        const dur = endTime ? null : durationMs(b);
        const endMs = endTime ? endTime.utcMs : dur !== null ? start.utcMs + dur : null;
        if (endMs !== null && endMs > start.utcMs) out.push({ startMs: start.utcMs, endMs, type });
      }
    }
  }
  return out;
}
