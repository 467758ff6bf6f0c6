// CalDAV as NC 29 answers it (captures 22, 80–84): principals, calendar homes (no `personal`
// unless created), calendar-query with time-range and UID filters, free-busy-query as
// text/calendar, scheduling outbox free/busy, If-Match/If-None-Match on PUT and DELETE, no
// ETag on a PUT with attendees, invitations and cancellations into the attendees' inboxes.
// Another user's calendar home is 404 (capture 75).
import { createHash, randomUUID } from 'node:crypto';
import type { FakeReply } from './ocs.ts';
import {
  DAV_HEADER_CALDAV,
  DAV_HEADER_FILES,
  davError,
  empty,
  escapeXml,
  header,
  hrefOf,
  key,
  multistatus,
  p,
  requestedProps,
  xmlReply,
  type DavResource,
  type PropName,
} from './dav-xml.ts';
import type { UserDirectory } from './users.ts';

export interface FakeCalendarObject {
  data: string;
  etag: string;
}

export interface FakeCalendar {
  uri: string;
  displayName: string;
  components: string[];
  objects: Map<string, FakeCalendarObject>;
  sync: number;
  /** `oc:invite` sharees as Nextcloud 33 lists them (`principal:principals/users/bob`); a published calendar lists its owner. */
  invite: Array<{ href: string; name: string; access: 'read' | 'read-write' }>;
  /** `cs:publish-url` once published. */
  publishUrl: string | null;
  /** The owner, when the calendar is someone else's shared into this home (`<uri>_shared_by_<owner>`). */
  ownerUid: string | null;
}

const REPORT_SET =
  '<d:supported-report><d:report><d:sync-collection/></d:report></d:supported-report><d:supported-report><d:report><d:expand-property/></d:report></d:supported-report>' +
  '<d:supported-report><d:report><cal:calendar-multiget/></d:report></d:supported-report><d:supported-report><d:report><cal:calendar-query/></d:report></d:supported-report>' +
  '<d:supported-report><d:report><cal:free-busy-query/></d:report></d:supported-report>';

function unfold(text: string): string[] {
  return text
    .replace(/\r\n|\r/g, '\n')
    .replace(/\n[ \t]/g, '')
    .split('\n')
    .filter((l) => l !== '');
}

/** VEVENT blocks as lists of unfolded lines. */
function vevents(data: string): string[][] {
  const out: string[][] = [];
  let cur: string[] | null = null;
  for (const l of unfold(data)) {
    if (l === 'BEGIN:VEVENT') cur = [];
    else if (l === 'END:VEVENT') {
      if (cur) out.push(cur);
      cur = null;
    } else if (cur) cur.push(l);
  }
  return out;
}

function propLine(lines: string[], name: string): { params: string; value: string } | null {
  for (const l of lines) {
    const m = new RegExp(`^${name}((?:;[^:]*)?):(.*)$`, 'i').exec(l);
    if (m) return { params: m[1] ?? '', value: m[2] ?? '' };
  }
  return null;
}

function zoneOffsetMs(tz: string, utc: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(utc));
  const g = (t: string): number => Number(parts.find((x) => x.type === t)?.value ?? 0);
  return Date.UTC(g('year'), g('month') - 1, g('day'), g('hour'), g('minute'), g('second')) - utc;
}

function timeOf(line: { params: string; value: string } | null): number | null {
  if (!line) return null;
  const m = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z)?)?$/.exec(line.value.trim());
  if (!m) return null;
  const local = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0));
  if (m[7] || m[4] === undefined) return local;
  const tz = /TZID=([^;:]+)/.exec(line.params)?.[1];
  if (!tz) return local;
  try {
    const guess = local - zoneOffsetMs(tz, local);
    return local - zoneOffsetMs(tz, guess);
  } catch {
    return local;
  }
}

function span(ev: string[]): { start: number; end: number } | null {
  const start = timeOf(propLine(ev, 'DTSTART'));
  if (start === null) return null;
  const end = timeOf(propLine(ev, 'DTEND')) ?? start + (propLine(ev, 'DTSTART')?.value.length === 8 ? 86_400_000 : 0);
  return { start, end: Math.max(end, start) };
}

function icsTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function parseIcsUtc(s: string | undefined): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s ?? '');
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) : null;
}

function unescapeXml(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

function etagOf(data: string, n: number): string {
  return `"${createHash('md5').update(data).update(String(n)).digest('hex')}"`;
}

export class FakeCalendars {
  readonly #users: UserDirectory;
  readonly #now: () => number;
  readonly #homes = new Map<string, Map<string, FakeCalendar>>();
  readonly inboxes = new Map<string, Map<string, FakeCalendarObject>>();
  readonly trash = new Map<string, Array<{ calendar: string; data: string }>>();
  #stamp = 0;

  constructor(users: UserDirectory, now: () => number) {
    this.#users = users;
    this.#now = now;
  }

  #home(uid: string): Map<string, FakeCalendar> {
    let h = this.#homes.get(uid);
    if (!h) {
      h = new Map();
      this.#homes.set(uid, h);
    }
    return h;
  }

  createCalendar(uid: string, uri: string, displayName: string, components: string[] = ['VEVENT']): FakeCalendar {
    const cal: FakeCalendar = { uri, displayName, components, objects: new Map(), sync: 1, invite: [], publishUrl: null, ownerUid: null };
    this.#home(uid).set(uri, cal);
    return cal;
  }

  /** The owner shares a calendar with another user (`oc:share` POST): it appears in the sharee's home as `<uri>_shared_by_<owner>`. */
  shareCalendar(owner: string, uri: string, sharee: string, access: 'read' | 'read-write' = 'read'): FakeCalendar {
    const cal = this.calendar(owner, uri) ?? this.createCalendar(owner, uri, uri);
    cal.invite.push({ href: `principal:principals/users/${sharee}`, name: this.#users.displayName(sharee), access });
    const mounted: FakeCalendar = {
      ...cal,
      uri: `${uri}_shared_by_${owner}`,
      displayName: `${cal.displayName} (${this.#users.displayName(owner)})`,
      invite: [],
      ownerUid: owner,
    };
    this.#home(sharee).set(mounted.uri, mounted);
    return mounted;
  }

  /** `cs:publish-calendar`: Nextcloud then lists the owner in `oc:invite` (test/fixtures/nextcloud33/calendar-sharing-facts.json). */
  publishCalendar(owner: string, uri: string): void {
    const cal = this.calendar(owner, uri) ?? this.createCalendar(owner, uri, uri);
    cal.publishUrl = `/remote.php/dav/public-calendars/${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    if (!cal.invite.some((i) => i.href === `principal:principals/users/${owner}`))
      cal.invite.push({ href: `principal:principals/users/${owner}`, name: this.#users.displayName(owner), access: 'read-write' });
  }

  calendar(uid: string, uri: string): FakeCalendar | undefined {
    return this.#home(uid).get(uri);
  }

  putObject(uid: string, uri: string, filename: string, data: string): FakeCalendarObject {
    const cal = this.calendar(uid, uri) ?? this.createCalendar(uid, uri, uri);
    const obj = { data, etag: etagOf(data, ++this.#stamp) };
    cal.objects.set(filename, obj);
    cal.sync += 1;
    return obj;
  }

  /** Events of a user's calendar by UID (for assertions). */
  findByUid(uid: string, uidValue: string): Array<{ calendar: string; filename: string; object: FakeCalendarObject }> {
    const out: Array<{ calendar: string; filename: string; object: FakeCalendarObject }> = [];
    for (const cal of this.#home(uid).values()) {
      for (const [filename, object] of cal.objects)
        if (vevents(object.data).some((ev) => propLine(ev, 'UID')?.value === uidValue)) out.push({ calendar: cal.uri, filename, object });
    }
    return out;
  }

  inbox(uid: string): Map<string, FakeCalendarObject> {
    let i = this.inboxes.get(uid);
    if (!i) {
      i = new Map();
      this.inboxes.set(uid, i);
    }
    return i;
  }

  #uidByEmail(email: string): string | null {
    const e = email.replace(/^mailto:/i, '').toLowerCase();
    return this.#users.ids().find((id) => (this.#users.get(id)?.email ?? '').toLowerCase() === e) ?? null;
  }

  #attendees(data: string): string[] {
    const out: string[] = [];
    for (const ev of vevents(data))
      for (const l of ev)
        if (/^ATTENDEE[;:]/i.test(l))
          out.push(
            (
              l
                .split(':')
                .slice(1)
                .join(':')
                .replace(/^mailto:/i, '') || ''
            ).toLowerCase(),
          );
    return out;
  }

  /** Internal scheduling: REQUEST/CANCEL land in local attendees' inboxes (capture 83). */
  #schedule(organizer: string, data: string, method: 'REQUEST' | 'CANCEL'): void {
    const self = (this.#users.get(organizer)?.email ?? '').toLowerCase();
    for (const address of this.#attendees(data)) {
      if (address === self) continue;
      const uid = this.#uidByEmail(address);
      if (!uid) continue;
      const body = data.replace('BEGIN:VCALENDAR', `BEGIN:VCALENDAR\nMETHOD:${method}`);
      this.inbox(uid).set(`sabredav-${randomUUID()}.ics`, { data: body, etag: etagOf(body, ++this.#stamp) });
    }
  }

  #busy(uid: string, from: number, to: number): Array<{ start: number; end: number }> {
    const out: Array<{ start: number; end: number }> = [];
    for (const cal of this.#home(uid).values()) {
      for (const obj of cal.objects.values()) {
        for (const ev of vevents(obj.data)) {
          if ((propLine(ev, 'TRANSP')?.value ?? '').toUpperCase() === 'TRANSPARENT') continue;
          const s = span(ev);
          if (s && s.start < to && s.end > from) out.push({ start: Math.max(s.start, from), end: Math.min(s.end, to) });
        }
      }
    }
    return out.sort((a, b) => a.start - b.start);
  }

  #vfreebusy(uid: string, from: number, to: number, extra: string[] = []): string {
    return [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:-//Sabre//Sabre VObject 4.5.4//EN',
      'CALSCALE:GREGORIAN',
      ...(extra.includes('METHOD:REPLY') ? ['METHOD:REPLY'] : []),
      'BEGIN:VFREEBUSY',
      `DTSTART:${icsTime(from)}`,
      `DTEND:${icsTime(to)}`,
      `DTSTAMP:${icsTime(this.#now())}`,
      ...this.#busy(uid, from, to).map((b) => `FREEBUSY:${icsTime(b.start)}/${icsTime(b.end)}`),
      ...extra.filter((e) => e !== 'METHOD:REPLY'),
      'END:VFREEBUSY',
      'END:VCALENDAR',
      '',
    ].join('\n');
  }

  #calendarResource(owner: string, cal: FakeCalendar): DavResource {
    const props = new Map<string, string>();
    const set = (pn: PropName, v: string): void => void props.set(key(pn), v);
    set(p('d', 'displayname'), escapeXml(cal.displayName));
    set(p('d', 'resourcetype'), '<d:collection/><cal:calendar/>');
    set(p('cs', 'getctag'), `http://sabre.io/ns/sync/${cal.sync}`);
    set(p('d', 'sync-token'), `http://sabre.io/ns/sync/${cal.sync}`);
    set(p('cal', 'supported-calendar-component-set'), cal.components.map((c) => `<cal:comp name="${c}"/>`).join(''));
    set(p('d', 'supported-report-set'), REPORT_SET);
    set(p('oc', 'owner-principal'), `principals/users/${escapeXml(cal.ownerUid ?? owner)}`);
    // As Nextcloud 33 answers (test/fixtures/nextcloud33/calendar-sharing-facts.json): an empty `oc:invite` when unshared.
    set(
      p('oc', 'invite'),
      cal.invite
        .map(
          (i) =>
            `<oc:user><d:href>${escapeXml(i.href)}</d:href><oc:common-name>${escapeXml(i.name)}</oc:common-name><oc:invite-accepted/><oc:access><oc:${i.access}/></oc:access></oc:user>`,
        )
        .join(''),
    );
    if (cal.publishUrl) set(p('cs', 'publish-url'), `<d:href>${escapeXml(cal.publishUrl)}</d:href>`);
    return { href: hrefOf(['calendars', owner, cal.uri], true), props };
  }

  #objectResource(owner: string, cal: FakeCalendar, filename: string, obj: FakeCalendarObject, withData: boolean): DavResource {
    const props = new Map<string, string>();
    props.set(key(p('d', 'getetag')), escapeXml(obj.etag));
    props.set(key(p('d', 'getcontenttype')), 'text/calendar; charset=utf-8; component=vevent');
    props.set(key(p('d', 'resourcetype')), '');
    if (withData) props.set(key(p('cal', 'calendar-data')), escapeXml(obj.data));
    return { href: hrefOf(['calendars', owner, cal.uri, filename], false), props };
  }

  handleRoot(method: string, user: string, body: string): FakeReply {
    if (method !== 'PROPFIND')
      return method === 'OPTIONS' ? empty(200, { dav: DAV_HEADER_FILES }) : davError(501, 'NotImplemented', `${method} is not implemented`);
    const props = new Map([[key(p('d', 'current-user-principal')), `<d:href>/remote.php/dav/principals/users/${encodeURIComponent(user)}/</d:href>`]]);
    return xmlReply(207, multistatus([{ href: '/remote.php/dav/', props }], requestedProps(body), []), { dav: DAV_HEADER_FILES });
  }

  handlePrincipal(method: string, owner: string, user: string, body: string): FakeReply {
    if (owner !== user || !this.#users.has(owner)) return davError(404, 'NotFound', `Principal with name ${owner} not found`);
    if (method !== 'PROPFIND') return davError(501, 'NotImplemented', `${method} is not implemented`);
    const principal = `/remote.php/dav/principals/users/${encodeURIComponent(owner)}/`;
    const email = this.#users.get(owner)?.email;
    const props = new Map<string, string>();
    const set = (pn: PropName, v: string): void => void props.set(key(pn), v);
    set(p('d', 'current-user-principal'), `<d:href>${principal}</d:href>`);
    set(p('d', 'principal-URL'), `<d:href>${principal}</d:href>`);
    set(p('cal', 'calendar-home-set'), `<d:href>/remote.php/dav/calendars/${encodeURIComponent(owner)}/</d:href>`);
    set(p('cal', 'schedule-inbox-URL'), `<d:href>/remote.php/dav/calendars/${encodeURIComponent(owner)}/inbox/</d:href>`);
    set(p('cal', 'schedule-outbox-URL'), `<d:href>/remote.php/dav/calendars/${encodeURIComponent(owner)}/outbox/</d:href>`);
    set(p('cal', 'calendar-user-address-set'), `${email ? `<d:href>mailto:${escapeXml(email)}</d:href>` : ''}<d:href>${principal}</d:href>`);
    set(p('cal', 'calendar-user-type'), 'INDIVIDUAL');
    set(p('d', 'displayname'), escapeXml(this.#users.displayName(owner)));
    set(p('d', 'resourcetype'), '<d:collection/><d:principal/>');
    return xmlReply(207, multistatus([{ href: principal, props }], requestedProps(body), []), { dav: DAV_HEADER_CALDAV });
  }

  handleCalendars(method: string, owner: string, rest: string[], user: string, headers: Record<string, string>, body: string): FakeReply {
    if (owner !== user) return davError(404, 'NotFound', `Node with name '${owner}' could not be found`);
    const home = this.#home(owner);
    const [calUri, filename] = rest;
    if (calUri === undefined) {
      if (method !== 'PROPFIND') return davError(501, 'NotImplemented', `${method} is not implemented`);
      const resources: DavResource[] = [{ href: hrefOf(['calendars', owner], true), props: new Map([[key(p('d', 'resourcetype')), '<d:collection/>']]) }];
      if ((header(headers, 'depth') ?? '1') !== '0') {
        for (const cal of home.values()) resources.push(this.#calendarResource(owner, cal));
        resources.push({
          href: hrefOf(['calendars', owner, 'inbox'], true),
          props: new Map([[key(p('d', 'resourcetype')), '<d:collection/><cal:schedule-inbox/>']]),
        });
        resources.push({
          href: hrefOf(['calendars', owner, 'outbox'], true),
          props: new Map([[key(p('d', 'resourcetype')), '<d:collection/><cal:schedule-outbox/>']]),
        });
      }
      return xmlReply(207, multistatus(resources, requestedProps(body), []), { dav: DAV_HEADER_CALDAV });
    }
    if (calUri === 'outbox') return method === 'POST' ? this.#outbox(owner, body) : davError(501, 'NotImplemented', `${method} is not implemented`);
    if (calUri === 'inbox') {
      const resources = [...this.inbox(owner)].map(([name, obj]) => ({
        href: hrefOf(['calendars', owner, 'inbox', name], false),
        props: new Map([
          [key(p('d', 'getetag')), escapeXml(obj.etag)],
          [key(p('cal', 'calendar-data')), escapeXml(obj.data)],
        ]),
      }));
      return xmlReply(207, multistatus(resources, requestedProps(body), []));
    }
    const cal = home.get(calUri);
    if (method === 'MKCALENDAR' && filename === undefined) {
      if (cal) return davError(405, 'MethodNotAllowed', 'The resource you tried to create already exists');
      const name = /<d:displayname>([^<]*)<\/d:displayname>/.exec(body)?.[1];
      this.createCalendar(owner, calUri, name ? unescapeXml(name) : calUri);
      return empty(201);
    }
    if (!cal) return davError(404, 'NotFound', `Node with name '${calUri}' could not be found`);
    if (filename === undefined) {
      if (method === 'PROPFIND') {
        const resources = [this.#calendarResource(owner, cal)];
        if ((header(headers, 'depth') ?? '0') !== '0')
          for (const [name, obj] of cal.objects) resources.push(this.#objectResource(owner, cal, name, obj, false));
        return xmlReply(207, multistatus(resources, requestedProps(body), []), { dav: DAV_HEADER_CALDAV });
      }
      if (method === 'REPORT') return this.#report(owner, cal, body);
      return davError(501, 'NotImplemented', `${method} is not implemented`);
    }
    const obj = cal.objects.get(filename);
    const ifMatch = header(headers, 'if-match');
    const preconditionFailed = (): FakeReply => {
      const reply = davError(
        412,
        'PreconditionFailed',
        'An If-Match header was specified, but none of the specified ETags matched.',
        '  <s:header>If-Match</s:header>\n',
      );
      if (obj) reply.headers['etag'] = obj.etag;
      return reply;
    };
    switch (method) {
      case 'GET':
        if (!obj) return davError(404, 'NotFound', `Calendar object not found`);
        return { status: 200, headers: { 'content-type': 'text/calendar; charset=utf-8; component=vevent', etag: obj.etag }, body: obj.data };
      case 'PROPFIND':
        if (!obj) return davError(404, 'NotFound', `Calendar object not found`);
        return xmlReply(207, multistatus([this.#objectResource(owner, cal, filename, obj, false)], requestedProps(body), []), { dav: DAV_HEADER_CALDAV });
      case 'PUT': {
        if (header(headers, 'if-none-match') === '*' && obj)
          return davError(
            412,
            'PreconditionFailed',
            'An If-None-Match header was specified, but the ETag matched (or * was specified).',
            '  <s:header>If-None-Match</s:header>\n',
          );
        if (ifMatch !== undefined && (!obj || obj.etag !== ifMatch)) return preconditionFailed();
        if (!/BEGIN:VCALENDAR/.test(body) || vevents(body).length === 0)
          return davError(415, 'UnsupportedMediaType', 'This resource only supports valid iCalendar 2.0 data');
        const scheduled = this.#attendees(body).length > 0;
        // The scheduling plugin rewrites the object, so no ETag comes back (capture 83).
        const stored = scheduled
          ? body.replace(/^(ATTENDEE(?!;[^:]*SCHEDULE-STATUS)[^:\r\n]*)(:mailto:)/gim, (_m, a: string, b: string) => `${a};SCHEDULE-STATUS=1.2${b}`)
          : body;
        const next = { data: stored, etag: etagOf(stored, ++this.#stamp) };
        cal.objects.set(filename, next);
        cal.sync += 1;
        if (scheduled) this.#schedule(owner, stored, 'REQUEST');
        return empty(obj ? 204 : 201, scheduled ? {} : { etag: next.etag, 'oc-etag': next.etag });
      }
      case 'DELETE': {
        if (!obj) return davError(404, 'NotFound', 'Calendar object not found');
        if (ifMatch !== undefined && obj.etag !== ifMatch) return preconditionFailed();
        cal.objects.delete(filename);
        cal.sync += 1;
        let trash = this.trash.get(owner);
        if (!trash) this.trash.set(owner, (trash = []));
        trash.push({ calendar: cal.uri, data: obj.data });
        if (this.#attendees(obj.data).length > 0) this.#schedule(owner, obj.data, 'CANCEL');
        return empty(204);
      }
      default:
        return davError(501, 'NotImplemented', `${method} is not implemented`);
    }
  }

  #report(owner: string, cal: FakeCalendar, body: string): FakeReply {
    if (/free-busy-query/.test(body)) {
      const m = /time-range[^>]*start="([^"]+)"[^>]*end="([^"]+)"/.exec(body);
      const from = parseIcsUtc(m?.[1]);
      const to = parseIcsUtc(m?.[2]);
      if (from === null || to === null) return davError(400, 'BadRequest', 'The free-busy-query report must have a time-range element');
      return { status: 200, headers: { 'content-type': 'text/calendar;charset=UTF-8' }, body: this.#vfreebusy(owner, from, to) };
    }
    if (!/calendar-query/.test(body)) return davError(501, 'NotImplemented', 'This report is not implemented');
    const range = /time-range[^>]*start="([^"]+)"(?:[^>]*end="([^"]+)")?/.exec(body.replace(/<[a-z0-9]*:?expand[^>]*>/gi, ''));
    const from = range ? parseIcsUtc(range[1]) : null;
    const to = range ? (parseIcsUtc(range[2]) ?? Number.MAX_SAFE_INTEGER) : null;
    const uidMatch = /prop-filter[^>]*name="UID"[^>]*>\s*<[a-z0-9]*:?text-match[^>]*>([^<]*)</i.exec(body);
    const wantedUid = uidMatch ? unescapeXml(uidMatch[1] ?? '') : null;
    const resources: DavResource[] = [];
    for (const [name, obj] of cal.objects) {
      const events = vevents(obj.data);
      const hit = events.some((ev) => {
        if (wantedUid !== null && !(propLine(ev, 'UID')?.value ?? '').includes(wantedUid)) return false;
        if (from !== null && to !== null) {
          const s = span(ev);
          if (!s) return false;
          const recurring = propLine(ev, 'RRULE') !== null;
          if (recurring ? s.start >= to : !(s.start < to && (s.end > from || (s.end === s.start && s.start >= from)))) return false;
        }
        return true;
      });
      if (hit) resources.push(this.#objectResource(owner, cal, name, obj, true));
    }
    return xmlReply(207, multistatus(resources, requestedProps(body), []));
  }

  #outbox(owner: string, body: string): FakeReply {
    const lines = unfold(body);
    const from = parseIcsUtc(lines.find((l) => l.startsWith('DTSTART:'))?.slice(8));
    const to = parseIcsUtc(lines.find((l) => l.startsWith('DTEND:'))?.slice(6));
    const organizer =
      lines
        .find((l) => l.startsWith('ORGANIZER'))
        ?.split(':')
        .slice(1)
        .join(':') ?? '';
    const selfEmail = (this.#users.get(owner)?.email ?? '').toLowerCase();
    if (from === null || to === null || organizer.replace(/^mailto:/i, '').toLowerCase() !== selfEmail) {
      return davError(403, 'Forbidden', 'The organizer in the request did not match your own calendar-user-address');
    }
    const uid = lines.find((l) => l.startsWith('UID:'))?.slice(4) ?? '';
    const responses = lines
      .filter((l) => l.startsWith('ATTENDEE'))
      .map((l) => l.split(':').slice(1).join(':'))
      .map((address) => {
        const who = this.#uidByEmail(address);
        if (!who)
          return `<cal:response><cal:recipient><d:href>${escapeXml(address)}</d:href></cal:recipient><cal:request-status>3.7;Could not find principal</cal:request-status></cal:response>`;
        const data = this.#vfreebusy(who, from, to, ['METHOD:REPLY', `ATTENDEE:${address}`, `UID:${uid}`, `ORGANIZER:${organizer}`]);
        return `<cal:response><cal:recipient><d:href>${escapeXml(address)}</d:href></cal:recipient><cal:request-status>2.0;Success</cal:request-status><cal:calendar-data>${escapeXml(data)}</cal:calendar-data></cal:response>`;
      });
    return xmlReply(
      200,
      `<?xml version="1.0" encoding="utf-8"?>\n<cal:schedule-response xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:cal="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">${responses.join('')}</cal:schedule-response>\n`,
      {},
    );
  }
}
