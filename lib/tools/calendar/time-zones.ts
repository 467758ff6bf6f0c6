// Event times must say where they are: an explicit UTC offset or an IANA time zone (TZID).
// Time zone rules come from the runtime's Intl data; VTIMEZONEs are generated from it.
import { InvalidArgumentError } from '../files/user-paths.ts';

export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

export interface ResolvedTime {
  utcMs: number;
  /** Set when the time is written as local time in that zone. */
  tzid: string | null;
  /** Local wall time in `tzid`, or UTC when tzid is null. */
  wall: WallTime;
  /** An all-day date (VALUE=DATE). */
  date: boolean;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    if (formatters.size > 200) formatters.clear();
    formatters.set(tz, f);
  }
  return f;
}

export function isTimeZone(tz: unknown): tz is string {
  if (typeof tz !== 'string' || tz === '' || tz.length > 64 || !/^[A-Za-z0-9_+\-/]+$/.test(tz)) return false;
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

/** The zone's canonical spelling as Intl knows it (e.g. `europe/berlin` → `Europe/Berlin`). */
export function canonicalTimeZone(tz: string): string {
  return formatter(tz).resolvedOptions().timeZone;
}

export function wallOf(tz: string, utcMs: number): WallTime {
  const parts = formatter(tz).formatToParts(new Date(utcMs));
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value ?? '0');
  return { year: get('year'), month: get('month'), day: get('day'), hour: get('hour'), minute: get('minute'), second: get('second') };
}

function wallMs(w: WallTime): number {
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
}

export function utcWall(utcMs: number): WallTime {
  const d = new Date(utcMs);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
  };
}

/** Offset of `tz` from UTC at an instant, in minutes (+60 for CET). */
export function offsetMinutes(tz: string, utcMs: number): number {
  const whole = Math.floor(utcMs / 1000) * 1000;
  return Math.round((wallMs(wallOf(tz, whole)) - whole) / 60_000);
}

/** UTC instant of a local wall time; in a DST gap the later offset wins, in an overlap the earlier. */
export function wallToUtc(wall: WallTime, tz: string): number {
  const asUtc = wallMs(wall);
  let guess = asUtc - offsetMinutes(tz, asUtc) * 60_000;
  guess = asUtc - offsetMinutes(tz, guess) * 60_000;
  return guess;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d{1,9})?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

function validWall(w: WallTime): boolean {
  if (w.year < 1900 || w.year > 2200 || w.month < 1 || w.month > 12 || w.hour > 23 || w.minute > 59 || w.second > 59) return false;
  const days = new Date(Date.UTC(w.year, w.month, 0)).getUTCDate();
  return w.day >= 1 && w.day <= days;
}

function offsetOf(text: string): number {
  if (text.toUpperCase() === 'Z') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const digits = text.slice(1).replace(':', '');
  const h = Number(digits.slice(0, 2));
  const m = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  if (h > 18 || m > 59) throw new InvalidArgumentError(`the UTC offset ${text} is not valid`);
  return sign * (h * 60 + m);
}

/**
 * `2027-03-05T10:00:00+01:00`, `…Z`, or a local `2027-03-05T10:00` with `timezone`.
 * A time with neither is refused: "10:00" means nothing without a place.
 * With `allowDate`, `2027-03-05` is an all-day date.
 */
export function resolveEventTime(input: unknown, timezone: unknown, field: string, options: { allowDate?: boolean } = {}): ResolvedTime {
  if (typeof input !== 'string') throw new InvalidArgumentError(`${field} must be a date-time string such as 2027-03-05T10:00:00+01:00`);
  const m = DATE_TIME.exec(input.trim());
  if (!m) throw new InvalidArgumentError(`${field} "${input.slice(0, 40)}" is not an ISO date-time such as 2027-03-05T10:00:00+01:00`);
  const wall: WallTime = {
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4] ?? 0),
    minute: Number(m[5] ?? 0),
    second: Number(m[6] ?? 0),
  };
  if (!validWall(wall)) throw new InvalidArgumentError(`${field} "${input.slice(0, 40)}" is not a valid date`);
  const hasTime = m[4] !== undefined;
  const offsetText = m[7];
  const tz = timezone === undefined || timezone === null || timezone === '' ? null : timezone;
  if (tz !== null && !isTimeZone(tz))
    throw new InvalidArgumentError(`timezone "${String(tz).slice(0, 64)}" is not a known IANA time zone such as Europe/Berlin`);
  if (!hasTime) {
    if (offsetText !== undefined) throw new InvalidArgumentError(`${field}: a date alone takes no offset`);
    if (options.allowDate) return { utcMs: wallMs(wall), tzid: null, wall, date: true };
    if (tz === null) throw new InvalidArgumentError(`${field} needs a time with an explicit UTC offset (e.g. 2027-03-05T00:00:00+01:00) or a timezone`);
    const zone = canonicalTimeZone(tz);
    return { utcMs: wallToUtc(wall, zone), tzid: zone, wall, date: false };
  }
  if (offsetText !== undefined) {
    const utcMs = wallMs(wall) - offsetOf(offsetText) * 60_000;
    if (tz !== null) {
      const zone = canonicalTimeZone(tz);
      if (offsetMinutes(zone, utcMs) !== offsetOf(offsetText)) {
        throw new InvalidArgumentError(`${field}: the offset ${offsetText} does not match ${zone} on that date; give one or the other`);
      }
      return { utcMs, tzid: zone, wall, date: false };
    }
    return { utcMs, tzid: null, wall: utcWall(utcMs), date: false };
  }
  if (tz === null) {
    throw new InvalidArgumentError(`${field} "${input.slice(0, 40)}" has no UTC offset: add one (e.g. +01:00 or Z) or give a timezone such as Europe/Berlin`);
  }
  const zone = canonicalTimeZone(tz);
  return { utcMs: wallToUtc(wall, zone), tzid: zone, wall, date: false };
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

export function icsDate(w: WallTime): string {
  return `${pad(w.year, 4)}${pad(w.month)}${pad(w.day)}`;
}

export function icsLocal(w: WallTime): string {
  return `${icsDate(w)}T${pad(w.hour)}${pad(w.minute)}${pad(w.second)}`;
}

export function icsUtc(utcMs: number): string {
  return `${icsLocal(utcWall(utcMs))}Z`;
}

function icsOffset(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`;
}

const DAY = 86_400_000;

/** Instants in [from, to] where the zone's offset changes, with the offsets around them. */
function transitions(tz: string, from: number, to: number): Array<{ at: number; before: number; after: number }> {
  const out: Array<{ at: number; before: number; after: number }> = [];
  let prev = offsetMinutes(tz, from);
  for (let t = from + DAY; t <= to + DAY; t += DAY) {
    const cur = offsetMinutes(tz, t);
    if (cur === prev) continue;
    let lo = t - DAY;
    let hi = t;
    while (hi - lo > 60_000) {
      const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
      if (offsetMinutes(tz, mid) === prev) lo = mid;
      else hi = mid;
    }
    out.push({ at: hi, before: prev, after: cur });
    prev = cur;
  }
  return out;
}

/**
 * A VTIMEZONE for `tz` valid from a year before `fromMs` to a year after `toMs`:
 * one observance per actual transition, computed from Intl (no RRULE needed).
 */
export function vtimezoneLines(tz: string, fromMs: number, toMs: number): string[] {
  // Minute-aligned, so the binary search lands on the exact transition minute.
  const start = Math.floor((fromMs - 366 * DAY) / 60_000) * 60_000;
  const end = toMs + 366 * DAY;
  const changes = transitions(tz, start, end);
  const lines = ['BEGIN:VTIMEZONE', `TZID:${tz}`];
  const initial = offsetMinutes(tz, start);
  const firstAfter = changes[0]?.after;
  const initialKind = firstAfter !== undefined && firstAfter < initial ? 'DAYLIGHT' : 'STANDARD';
  lines.push(
    `BEGIN:${initialKind}`,
    `DTSTART:${icsLocal(utcWall(start + initial * 60_000))}`,
    `TZOFFSETFROM:${icsOffset(initial)}`,
    `TZOFFSETTO:${icsOffset(initial)}`,
    `END:${initialKind}`,
  );
  for (const c of changes) {
    const kind = c.after > c.before ? 'DAYLIGHT' : 'STANDARD';
    lines.push(
      `BEGIN:${kind}`,
      `DTSTART:${icsLocal(utcWall(c.at + c.before * 60_000))}`,
      `TZOFFSETFROM:${icsOffset(c.before)}`,
      `TZOFFSETTO:${icsOffset(c.after)}`,
      `END:${kind}`,
    );
  }
  lines.push('END:VTIMEZONE');
  return lines;
}

/** `2027-03-05T09:00:00Z` for model-facing output. */
export function isoUtc(utcMs: number): string {
  return new Date(utcMs).toISOString().replace('.000Z', 'Z');
}
