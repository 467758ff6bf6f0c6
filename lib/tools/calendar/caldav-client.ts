// CalDAV as the invoking user through tsdav (authMethod 'Custom'; the AppAPI headers are added by
// our transport, which tsdav reaches through createDavFetch). Calendars and event hrefs come
// only from what the server answered in this turn, never from model output (S1).
import type { createDAVClient, DAVCalendar } from 'tsdav';
import type { NextcloudSession } from '../../nextcloud/client.ts';
import { errorForStatus } from '../../nextcloud/errors.ts';
import { parseDavXml, parseMultistatus, propHrefs, propText, textOf } from '../../nextcloud/multistatus.ts';
import { createDavFetch, type DavFetch } from './dav-fetch.ts';
import { icsUtc } from './time-zones.ts';

type TsdavClient = Awaited<ReturnType<typeof createDAVClient>>;

export interface CalendarInfo {
  /** The calendar's own URI segment, e.g. `personal`; the handle the model uses. */
  id: string;
  name: string;
  url: string;
  components: string[];
}

export interface PrincipalInfo {
  outboxUrl: string | null;
  /** The user's own calendar addresses without `mailto:`. */
  emails: string[];
  displayName: string;
}

export interface CalendarObject {
  calendar: CalendarInfo;
  url: string;
  etag: string;
  data: string;
}

export class CalDavUnavailableError extends Error {
  override name = 'CalDavUnavailableError';
}

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o['_cdata'] === 'string') return o['_cdata'];
    if (typeof o['_text'] === 'string') return o['_text'];
  }
  return '';
}

function lastSegment(url: string): string {
  const parts = new URL(url).pathname.split('/').filter((s) => s !== '');
  const last = parts[parts.length - 1] ?? '';
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

/** Every `<d:href>` under an `oc:invite` (one per sharee: users, groups, circles). */
function inviteHrefs(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(inviteHrefs);
  if (!v || typeof v !== 'object') return [];
  return Object.entries(v as Record<string, unknown>).flatMap(([k, child]) =>
    k === 'href' ? (Array.isArray(child) ? child : [child]).map((h) => textOf(h).trim()).filter((h) => h !== '') : inviteHrefs(child),
  );
}

export class CalDavClient {
  readonly #client: TsdavClient;
  readonly #fetch: DavFetch;
  readonly #root: string;
  readonly #principalUrl: string;
  readonly #homeUrl: string;
  #calendars: CalendarInfo[] | null = null;

  private constructor(client: TsdavClient, fetch: DavFetch, root: string, principalUrl: string, homeUrl: string) {
    this.#client = client;
    this.#fetch = fetch;
    this.#root = root;
    this.#principalUrl = principalUrl;
    this.#homeUrl = homeUrl;
  }

  /** Discovers the principal and calendar home (never assumes `personal`). */
  static async connect(session: NextcloudSession): Promise<CalDavClient> {
    const fetch = createDavFetch(session);
    const root = session.davUrl('/');
    // tsdav (and its XML stack) loads with the first calendar call, not at start-up.
    const { createDAVClient } = await import('tsdav');
    const client = await createDAVClient({
      serverUrl: root,
      credentials: {},
      authMethod: 'Custom',
      // Our transport adds the AppAPI headers to every request; nothing secret passes through tsdav.
      authFunction: async () => ({}),
      fetch: fetch as typeof globalThis.fetch,
    });
    let account;
    try {
      account = await client.createAccount({ account: { serverUrl: root, rootUrl: root, accountType: 'caldav' } });
    } catch (err) {
      throw new CalDavUnavailableError(
        `CalDAV is not available for this account (${err instanceof Error ? err.message.split('\n')[0]?.slice(0, 120) : 'unknown'})`,
      );
    }
    if (!account.principalUrl || !account.homeUrl) throw new CalDavUnavailableError('CalDAV is not available for this account');
    return new CalDavClient(client, fetch, root, account.principalUrl, account.homeUrl);
  }

  get fetch(): DavFetch {
    return this.#fetch;
  }

  async calendars(): Promise<CalendarInfo[]> {
    if (this.#calendars) return this.#calendars;
    const raw: DAVCalendar[] = await this.#client.fetchCalendars({
      account: { accountType: 'caldav', serverUrl: this.#root, rootUrl: this.#root, principalUrl: this.#principalUrl, homeUrl: this.#homeUrl },
    });
    this.#calendars = raw.map((c) => {
      const id = lastSegment(c.url);
      const name = typeof c.displayName === 'string' && c.displayName !== '' ? c.displayName : id;
      return { id, name, url: c.url, components: c.components ?? [] };
    });
    return this.#calendars;
  }

  /**
   * Whether anyone but the user sees this calendar (S6): it is shared by the user (`oc:invite` lists
   * someone else), published (`cs:publish-url`; Nextcloud then lists the owner in `oc:invite`), or
   * owned by someone else (`oc:owner-principal`) [test/fixtures/nextcloud33/calendar-sharing-facts.json].
   * Throws when the server does not say, so the caller treats the calendar as shared.
   */
  async sharedWithOthers(calendar: CalendarInfo): Promise<boolean> {
    const body =
      '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:cs="http://calendarserver.org/ns/"><d:prop>' +
      '<oc:invite/><oc:owner-principal/><cs:publish-url/></d:prop></d:propfind>';
    const res = await this.#fetch(calendar.url, { method: 'PROPFIND', headers: { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' }, body });
    if (res.status !== 207) throw errorForStatus('calendar sharing', res.status, 'the calendar could not be read');
    const entry = parseMultistatus(await res.text())[0];
    if (!entry || !('invite' in entry.props)) throw new CalDavUnavailableError('the server did not say who shares this calendar');
    const self = new URL(this.#principalUrl).pathname.replace(/\/+$/, '');
    const isSelf = (href: string) => self.endsWith(`/${href.replace(/^principal:/, '').replace(/^\/+|\/+$/g, '')}`);
    if (propHrefs(entry, 'publish-url').length > 0) return true;
    const owner = propText(entry, 'owner-principal');
    if (owner !== '' && !isSelf(owner)) return true;
    return inviteHrefs(entry.props['invite']).some((h) => !isSelf(h));
  }

  async principal(): Promise<PrincipalInfo> {
    const body =
      '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop>' +
      '<c:schedule-outbox-URL/><c:calendar-user-address-set/><d:displayname/></d:prop></d:propfind>';
    const res = await this.#fetch(this.#principalUrl, { method: 'PROPFIND', headers: { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' }, body });
    if (res.status !== 207) return { outboxUrl: null, emails: [], displayName: '' };
    const entry = parseMultistatus(await res.text())[0];
    if (!entry) return { outboxUrl: null, emails: [], displayName: '' };
    const outbox = propHrefs(entry, 'schedule-outbox-URL')[0];
    return {
      outboxUrl: outbox ? new URL(outbox, this.#principalUrl).href : null,
      emails: propHrefs(entry, 'calendar-user-address-set')
        .filter((h) => /^mailto:/i.test(h))
        .map((h) => h.replace(/^mailto:/i, '')),
      displayName: propText(entry, 'displayname'),
    };
  }

  async #query(calendar: CalendarInfo, filter: Record<string, unknown>, expand?: { startMs: number; endMs: number }): Promise<CalendarObject[]> {
    const calendarData = expand ? { 'c:expand': { _attributes: { start: icsUtc(expand.startMs), end: icsUtc(expand.endMs) } } } : {};
    const responses = await this.#client.calendarQuery({
      url: calendar.url,
      props: { 'd:getetag': {}, 'c:calendar-data': calendarData },
      filters: filter,
      depth: '1',
    });
    const out: CalendarObject[] = [];
    for (const r of responses) {
      if (!r.href || !r.ok) continue;
      const data = text(r.props?.['calendarData']);
      if (data === '') continue;
      out.push({ calendar, url: new URL(r.href, calendar.url).href, etag: text(r.props?.['getetag']), data });
    }
    return out;
  }

  /** Events overlapping [start, end), recurring ones expanded where the server can. */
  async eventsBetween(calendar: CalendarInfo, startMs: number, endMs: number, expand = false): Promise<CalendarObject[]> {
    return this.#query(
      calendar,
      {
        'comp-filter': {
          _attributes: { name: 'VCALENDAR' },
          'comp-filter': { _attributes: { name: 'VEVENT' }, 'time-range': { _attributes: { start: icsUtc(startMs), end: icsUtc(endMs) } } },
        },
      },
      expand ? { startMs, endMs } : undefined,
    );
  }

  /** The objects whose event has this UID (looked up by the server, this turn). */
  async findByUid(calendar: CalendarInfo, uid: string): Promise<CalendarObject[]> {
    return this.#query(calendar, {
      'comp-filter': {
        _attributes: { name: 'VCALENDAR' },
        'comp-filter': {
          _attributes: { name: 'VEVENT' },
          'prop-filter': { _attributes: { name: 'UID' }, 'text-match': { _attributes: { collation: 'i;octet' }, _text: uid } },
        },
      },
    });
  }

  /** PUT of a new object (If-None-Match: *); any 2xx is success. */
  async create(calendar: CalendarInfo, filename: string, ics: string): Promise<{ status: number; url: string; etag: string | null }> {
    const res = await this.#client.createCalendarObject({ calendar: { url: calendar.url }, filename, iCalString: ics });
    const url = new URL(filename, calendar.url.endsWith('/') ? calendar.url : `${calendar.url}/`).href;
    if (res.status < 200 || res.status >= 300) throw errorForStatus('PUT calendar object', res.status, await failureText(res));
    return { status: res.status, url, etag: res.headers.get('etag') };
  }

  /** PUT with If-Match; radicale answers 201, Nextcloud 204 (and no ETag with attendees). */
  async update(object: CalendarObject, ics: string, etag: string): Promise<{ status: number; etag: string | null }> {
    const res = await this.#client.updateCalendarObject({ calendarObject: { url: object.url, data: ics, etag } });
    if (res.status < 200 || res.status >= 300) throw errorForStatus('PUT calendar object', res.status, await failureText(res));
    return { status: res.status, etag: res.headers.get('etag') };
  }

  async remove(object: CalendarObject, etag: string): Promise<{ status: number }> {
    const res = await this.#client.deleteCalendarObject({ calendarObject: { url: object.url, etag } });
    if (res.status < 200 || res.status >= 300) throw errorForStatus('DELETE calendar object', res.status, await failureText(res));
    return { status: res.status };
  }

  /** Current ETag of an object, for servers that return none on PUT. */
  async etagOf(url: string): Promise<string | null> {
    const res = await this.#fetch(url, {
      method: 'PROPFIND',
      headers: { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' },
      body: '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>',
    });
    if (res.status !== 207) return null;
    const entry = parseMultistatus(await res.text())[0];
    return entry ? propText(entry, 'getetag') || null : null;
  }

  /**
   * free-busy-query REPORT sent raw: Nextcloud answers text/calendar (a VFREEBUSY), which
   * tsdav's XML path cannot read; radicale answers a multistatus, which means "not supported".
   */
  async freeBusyReport(calendar: CalendarInfo, startMs: number, endMs: number): Promise<string | null> {
    const body =
      '<?xml version="1.0" encoding="utf-8"?><c:free-busy-query xmlns:c="urn:ietf:params:xml:ns:caldav">' +
      `<c:time-range start="${icsUtc(startMs)}" end="${icsUtc(endMs)}"/></c:free-busy-query>`;
    const res = await this.#fetch(calendar.url, { method: 'REPORT', headers: { Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' }, body });
    const type = res.headers.get('content-type') ?? '';
    const answer = await res.text();
    if (res.status === 200 && type.toLowerCase().includes('text/calendar') && answer.includes('BEGIN:VFREEBUSY')) return answer;
    return null;
  }

  /** Scheduling outbox free/busy (RFC 6638): one VFREEBUSY per recipient, or null when unsupported. */
  async outboxFreeBusy(
    outboxUrl: string,
    organizer: string,
    recipients: string[],
    startMs: number,
    endMs: number,
    uid: string,
    nowMs: number,
  ): Promise<Array<{ recipient: string; status: string; data: string }> | null> {
    const lines = [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:-//educai//Talk AI//EN',
      'METHOD:REQUEST',
      'BEGIN:VFREEBUSY',
      `UID:${uid}`,
      `DTSTAMP:${icsUtc(nowMs)}`,
      `DTSTART:${icsUtc(startMs)}`,
      `DTEND:${icsUtc(endMs)}`,
      `ORGANIZER:mailto:${organizer}`,
      ...recipients.map((r) => `ATTENDEE:mailto:${r}`),
      'END:VFREEBUSY',
      'END:VCALENDAR',
    ];
    const res = await this.#fetch(outboxUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'text/calendar; charset=utf-8; method=REQUEST' },
      body: lines.join('\r\n') + '\r\n',
    });
    if (res.status !== 200) return null;
    let doc: Record<string, unknown>;
    try {
      doc = parseDavXml(await res.text());
    } catch {
      return null;
    }
    const sr = doc['schedule-response'] as Record<string, unknown> | undefined;
    const responses = sr ? (Array.isArray(sr['response']) ? sr['response'] : [sr['response']]) : [];
    return responses
      .filter((r): r is Record<string, unknown> => r !== null && typeof r === 'object')
      .map((r) => {
        const recipient = r['recipient'] as Record<string, unknown> | undefined;
        const href = recipient ? textOf(Array.isArray(recipient['href']) ? recipient['href'][0] : recipient['href']) : '';
        return { recipient: href.replace(/^mailto:/i, '').trim(), status: textOf(r['request-status']).trim(), data: textOf(r['calendar-data']) };
      });
  }
}

async function failureText(res: Response): Promise<string> {
  try {
    const body = await res.text();
    const m = /<s:message>([^<]{0,200})<\/s:message>/.exec(body);
    return m?.[1] ?? `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}
