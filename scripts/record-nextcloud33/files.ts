// WebDAV (files, trash, versions, search), CalDAV and OCS sharing, as the ExApp acting for alice,
// with the request bodies the product sends (lib/nextcloud/files-dav.ts, lib/tools/calendar/).
import type { Exchange } from './capture.ts';
import type { Context, Steps } from './context.ts';

const FILE_PROPS =
  '<d:getetag/><d:getlastmodified/><d:getcontenttype/><d:getcontentlength/><d:resourcetype/><d:displayname/>' +
  '<oc:fileid/><oc:permissions/><oc:size/><oc:owner-id/><oc:share-types/><nc:mount-type/>';
const TRASH_PROPS =
  '<nc:trashbin-filename/><nc:trashbin-original-location/><nc:trashbin-deletion-time/><oc:fileid/><oc:size/>' +
  '<d:getcontentlength/><d:getlastmodified/><d:getetag/><d:resourcetype/>';
const VERSION_PROPS = '<d:getcontentlength/><d:getcontenttype/><d:getlastmodified/><d:getetag/><d:resourcetype/><nc:version-label/><nc:version-author/>';
const NS = 'xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"';
const propfind = (props: string) => `<?xml version="1.0"?><d:propfind ${NS}><d:prop>${props}</d:prop></d:propfind>`;
const XML = { 'Content-Type': 'application/xml; charset=utf-8' };

export async function recordFiles(ctx: Context): Promise<void> {
  const dav = '/remote.php/dav';
  const home = `${dav}/files/alice`;
  const s: Steps = {};
  const x = async (
    name: string,
    method: string,
    path: string,
    body?: string,
    headers: Record<string, string> = {},
  ): Promise<{ exchange: Exchange; text: string; status: number }> => {
    const r = await ctx.appApiRaw('alice', method, path, { ...(body !== undefined ? { body } : {}), headers });
    s[name] = r.exchange;
    return r;
  };
  await ctx.appApiRaw('alice', 'DELETE', `${home}/Capture`);
  await x('mkcol', 'MKCOL', `${home}/Capture`);
  await x('mkcol-exists', 'MKCOL', `${home}/Capture`);
  await x('mkcol-missing-parent', 'MKCOL', `${home}/Nope/Deeper`);
  await x('put-new', 'PUT', `${home}/Capture/report.md`, '# Report\n\nFirst version.\n', { 'Content-Type': 'text/markdown' });
  await x('put-overwrite', 'PUT', `${home}/Capture/report.md`, '# Report\n\nSecond version.\n', { 'Content-Type': 'text/markdown' });
  await x('put-if-none-match-star', 'PUT', `${home}/Capture/report.md`, 'x', { 'If-None-Match': '*' });
  await x('put-if-match-wrong', 'PUT', `${home}/Capture/report.md`, 'x', { 'If-Match': '"wrong-etag"' });
  await x('put-umlaut-name', 'PUT', `${home}/Capture/${encodeURIComponent('Übung 1.txt')}`, 'Ü\n', { 'Content-Type': 'text/plain' });
  await x('get', 'GET', `${home}/Capture/report.md`);
  await x('get-missing', 'GET', `${home}/Capture/missing.md`);
  await x('propfind-depth-0', 'PROPFIND', `${home}/Capture/report.md`, propfind(FILE_PROPS), { Depth: '0', ...XML });
  const listing = await x('propfind-depth-1', 'PROPFIND', `${home}/Capture`, propfind(FILE_PROPS), { Depth: '1', ...XML });
  await x('propfind-missing', 'PROPFIND', `${home}/Capture/missing`, propfind(FILE_PROPS), { Depth: '0', ...XML });
  await x('copy', 'COPY', `${home}/Capture/report.md`, undefined, { Destination: `${ctx.nc.url}${home}/Capture/copy.md` });
  await x('move-no-overwrite-exists', 'MOVE', `${home}/Capture/copy.md`, undefined, { Destination: `${ctx.nc.url}${home}/Capture/report.md`, Overwrite: 'F' });
  await x('move', 'MOVE', `${home}/Capture/copy.md`, undefined, { Destination: `${ctx.nc.url}${home}/Capture/moved.md` });
  const fileId = /Capture\/report\.md<\/d:href>[\s\S]*?<oc:fileid>(\d+)<\/oc:fileid>/.exec(listing.text)?.[1] ?? '0';
  await x(
    'search-by-fileid',
    'SEARCH',
    dav,
    `<?xml version="1.0" encoding="UTF-8"?><d:searchrequest ${NS}><d:basicsearch><d:select><d:prop>${FILE_PROPS}</d:prop></d:select>` +
      `<d:from><d:scope><d:href>/files/alice</d:href><d:depth>infinity</d:depth></d:scope></d:from>` +
      `<d:where><d:eq><d:prop><oc:fileid/></d:prop><d:literal>${fileId}</d:literal></d:eq></d:where></d:basicsearch></d:searchrequest>`,
    { 'Content-Type': 'text/xml' },
  );
  await x('versions', 'PROPFIND', `${dav}/versions/alice/versions/${fileId}`, propfind(VERSION_PROPS), { Depth: '1', ...XML });
  await x('delete', 'DELETE', `${home}/Capture/moved.md`);
  await x('delete-missing', 'DELETE', `${home}/Capture/moved.md`);
  const trash = await x('trashbin', 'PROPFIND', `${dav}/trashbin/alice/trash`, propfind(TRASH_PROPS), { Depth: '1', ...XML });
  const item = /<d:href>[^<]*\/trash\/(moved\.md\.d\d+)<\/d:href>/.exec(trash.text)?.[1];
  if (item)
    await x('trashbin-restore', 'MOVE', `${dav}/trashbin/alice/trash/${item}`, undefined, {
      Destination: `${ctx.nc.url}${dav}/trashbin/alice/restore/moved.md`,
    });
  await x('other-users-files', 'PROPFIND', `${dav}/files/bob/`, propfind(FILE_PROPS), { Depth: '1', ...XML });
  const nobody = await ctx.appApiRaw('', 'PROPFIND', `${home}/`, { body: propfind(FILE_PROPS), headers: { Depth: '0', ...XML } });
  s['as-nobody'] = nobody.exchange;
  ctx.write(
    'webdav-33.json',
    {
      what: 'WebDAV as the ExApp for alice: MKCOL, PUT (conditional), GET, PROPFIND with the product props, COPY, MOVE, SEARCH by file id, versions, DELETE, trash and restore, bob’s files, no user',
    },
    s,
  );

  await recordCalendar(ctx);
  await recordSharing(ctx);
}

async function recordCalendar(ctx: Context): Promise<void> {
  const cal = '/remote.php/dav/calendars/alice';
  // Names of this run: a deleted event keeps its UID in the calendar trash, and so does a calendar.
  const run = Date.now().toString(36);
  const calendar = `capture-${run}`;
  const uid = `capture-event-${run}`;
  const s: Steps = {};
  const x = async (name: string, method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
    const r = await ctx.appApiRaw('alice', method, path, { ...(body !== undefined ? { body } : {}), headers });
    s[name] = r.exchange;
    return r;
  };
  await x(
    'principal',
    'PROPFIND',
    '/remote.php/dav/principals/users/alice/',
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><c:calendar-home-set/><c:schedule-outbox-URL/><c:calendar-user-address-set/><d:displayname/></d:prop></d:propfind>',
    { Depth: '0', ...XML },
  );
  await x(
    'calendar-home',
    'PROPFIND',
    `${cal}/`,
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:x="http://apple.com/ns/ical/"><d:prop><d:resourcetype/><d:displayname/><cs:getctag/><c:supported-calendar-component-set/><x:calendar-color/><d:current-user-privilege-set/></d:prop></d:propfind>',
    { Depth: '1', ...XML },
  );
  await x(
    'mkcalendar',
    'MKCALENDAR',
    `${cal}/${calendar}/`,
    '<?xml version="1.0"?><c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop><d:displayname>Capture</d:displayname><c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set></d:prop></d:set></c:mkcalendar>',
    XML,
  );
  const ics = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//educai//capture//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20261201T090000Z',
    'DTSTART:20261210T100000Z',
    'DTEND:20261210T110000Z',
    'SUMMARY:Capture meeting',
    'ATTENDEE;CN=Bob;PARTSTAT=NEEDS-ACTION:mailto:bob@example.com',
    'ORGANIZER;CN=Alice:mailto:alice@example.com',
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
  await x('put-event', 'PUT', `${cal}/${calendar}/${uid}.ics`, ics, { 'Content-Type': 'text/calendar; charset=utf-8', 'If-None-Match': '*' });
  await x('put-event-again-if-none-match', 'PUT', `${cal}/${calendar}/${uid}.ics`, ics, {
    'Content-Type': 'text/calendar; charset=utf-8',
    'If-None-Match': '*',
  });
  await x(
    'calendar-query',
    'REPORT',
    `${cal}/${calendar}/`,
    '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/><c:calendar-data/></d:prop><c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT"><c:time-range start="20261201T000000Z" end="20261231T000000Z"/></c:comp-filter></c:comp-filter></c:filter></c:calendar-query>',
    { Depth: '1', ...XML },
  );
  await x('get-event', 'GET', `${cal}/${calendar}/${uid}.ics`);
  await x('etag', 'PROPFIND', `${cal}/${calendar}/${uid}.ics`, '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>', {
    Depth: '0',
    ...XML,
  });
  await x('delete-if-match-wrong', 'DELETE', `${cal}/${calendar}/${uid}.ics`, undefined, { 'If-Match': '"wrong"' });
  await x('delete', 'DELETE', `${cal}/${calendar}/${uid}.ics`);
  await x('put-same-uid-after-delete', 'PUT', `${cal}/${calendar}/${uid}.ics`, ics, { 'Content-Type': 'text/calendar; charset=utf-8', 'If-None-Match': '*' });
  await x('put-same-uid-other-name', 'PUT', `${cal}/${calendar}/${uid}-again.ics`, ics, {
    'Content-Type': 'text/calendar; charset=utf-8',
    'If-None-Match': '*',
  });
  await x(
    'bob-inbox-as-bob',
    'PROPFIND',
    '/remote.php/dav/calendars/bob/inbox/',
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>',
    { Depth: '1', ...XML },
  );
  ctx.write(
    'caldav-33.json',
    {
      what: 'CalDAV as the ExApp for alice: principal, calendar home, MKCALENDAR, PUT with an attendee, calendar-query with a time range, GET, ETag, conditional DELETE, the same UID again after the delete (the calendar trash keeps it)',
    },
    s,
  );
}

async function recordSharing(ctx: Context): Promise<void> {
  const API = '/ocs/v2.php/apps/files_sharing/api/v1';
  const s: Steps = {};
  const x = async (name: string, method: string, path: string, body?: unknown) => {
    const r = await ctx.appApi('alice', method, path, body);
    s[name] = r.exchange;
    return r.json?.ocs?.data;
  };
  await ctx.appApiRaw('alice', 'PUT', '/remote.php/dav/files/alice/shared-capture.txt', { body: 'to share\n' });
  // A group share left by an earlier run would come back as it is: remove them first.
  const old = (await ctx.appApi('alice', 'GET', `${API}/shares?path=${encodeURIComponent('/shared-capture.txt')}`)).json?.ocs?.data as Array<{
    id: string;
  }> | null;
  for (const o of old ?? []) await ctx.appApi('alice', 'DELETE', `${API}/shares/${o.id}`);
  const user = await x('create-user-share', 'POST', `${API}/shares`, { path: '/shared-capture.txt', shareType: 0, shareWith: 'bob', permissions: 1 });
  await x('create-user-share-again', 'POST', `${API}/shares`, { path: '/shared-capture.txt', shareType: 0, shareWith: 'bob', permissions: 1 });
  await x('create-user-share-again-with-edit', 'POST', `${API}/shares`, { path: '/shared-capture.txt', shareType: 0, shareWith: 'bob', permissions: 3 });
  await x('create-group-share', 'POST', `${API}/shares`, { path: '/shared-capture.txt', shareType: 1, shareWith: 'educai-students', permissions: 1 });
  await x('create-group-share-again-with-edit', 'POST', `${API}/shares`, {
    path: '/shared-capture.txt',
    shareType: 1,
    shareWith: 'educai-students',
    permissions: 3,
  });
  const link = await x('create-link-with-password', 'POST', `${API}/shares`, {
    path: '/shared-capture.txt',
    shareType: 3,
    password: 'Capture-Link-Password-42',
    expireDate: '2030-06-30',
  });
  ctx.redactor.secret('Capture-Link-Password-42', '<REDACTED_PASSWORD>');
  await x('create-missing-path', 'POST', `${API}/shares`, { path: '/no-such-file.txt', shareType: 0, shareWith: 'bob' });
  await x('create-unknown-user', 'POST', `${API}/shares`, { path: '/shared-capture.txt', shareType: 0, shareWith: 'nobody-here' });
  await x('list-by-path', 'GET', `${API}/shares?path=${encodeURIComponent('/shared-capture.txt')}&reshares=true`);
  if (user?.id !== undefined) {
    await x('get-one', 'GET', `${API}/shares/${user.id}`);
    await x('update-permissions', 'PUT', `${API}/shares/${user.id}`, { permissions: 3 });
    await x('update-note', 'PUT', `${API}/shares/${user.id}`, { note: 'Please review' });
  }
  await x('shared-with-me-as-alice', 'GET', `${API}/shares?shared_with_me=true`);
  await x('sharees', 'GET', `${API}/sharees?search=bob&itemType=file&perPage=10`);
  if (user?.id !== undefined) await x('delete-user-share', 'DELETE', `${API}/shares/${user.id}`);
  if (link?.id !== undefined) await x('delete-link', 'DELETE', `${API}/shares/${link.id}`);
  await x('delete-unknown', 'DELETE', `${API}/shares/999999`);
  const bob = await ctx.appApi('bob', 'GET', `${API}/shares?shared_with_me=true`);
  s['shared-with-me-as-bob'] = bob.exchange;
  ctx.write(
    'ocs-sharing-33.json',
    {
      what: 'OCS sharing as the ExApp for alice: user, group and password link shares, the same user or group share again (also with other permissions: the existing share comes back unchanged), errors, list, get, update, sharees, delete; shared_with_me as bob',
    },
    s,
  );
}
