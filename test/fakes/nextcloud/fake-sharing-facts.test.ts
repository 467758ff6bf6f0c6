// The fake answers the S6 visibility facts as Nextcloud 33 does (issue 23): the same PROPFIND bodies as
// the captures, compared fact by fact after the product's own multistatus parser.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parseMultistatus, propList, propText, type DavEntry } from '../../../lib/nextcloud/multistatus.ts';
import { FakeNextcloud } from './server.ts';

type Step = { request: { method: string; url: string; headers: Record<string, string>; body?: string }; response: { status: number; body: string } };
const capture = (name: string): Record<string, Step> =>
  JSON.parse(readFileSync(new URL(`../../fixtures/nextcloud33/${name}`, import.meta.url), 'utf8')) as Record<string, Step>;
const CAL = capture('calendar-sharing-facts.json');
const FILES = capture('files-sharing-facts.json');

/** Every href under oc:invite, with the capture's unique suffixes taken out. */
function invitees(e: DavEntry): string[] {
  return [...JSON.stringify(e.props['invite'] ?? '').matchAll(/principal:principals\/[a-z]+\/[a-z]+/g)].map((m) => m[0]);
}
function calendarFacts(e: DavEntry) {
  return { invite: 'invite' in e.props, invitees: invitees(e), published: 'publish-url' in e.props, owner: propText(e, 'owner-principal') || null };
}
function folderFacts(e: DavEntry) {
  return { shareTypes: propList(e, 'share-types', 'share-type').filter((t) => t !== ''), mountType: propText(e, 'mount-type'), owner: propText(e, 'owner-id') };
}

describe('fake Nextcloud: S6 sharing facts as Nextcloud 33 answers them', () => {
  let nc: FakeNextcloud;
  const as = (uid: string, extra: Record<string, string> = {}) => ({
    'EX-APP-ID': 'educai',
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': nc.authHeaderFor(uid),
    ...extra,
  });
  const propfind = async (uid: string, path: string, step: Step): Promise<DavEntry> => {
    const r = await fetch(`${nc.url}${path}`, {
      method: 'PROPFIND',
      headers: as(uid, { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' }),
      body: step.request.body ?? '',
    });
    assert.equal(r.status, step.response.status, path);
    return parseMultistatus(await r.text())[0]!;
  };
  const real = (step: Step): DavEntry => parseMultistatus(step.response.body)[0]!;

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: 'fake-sharing-facts-secret-0123456789' });
    nc.dav.calendars.createCalendar('alice', 'private', 'Private');
    nc.dav.calendars.createCalendar('alice', 'team', 'Team');
    nc.dav.calendars.shareCalendar('alice', 'team', 'bob');
    nc.dav.calendars.createCalendar('alice', 'public', 'Public');
    nc.dav.calendars.publishCalendar('alice', 'public');
    nc.dav.files.mkdir('alice', 'Private');
    nc.dav.files.receiveShare('bob', 'Team', 'alice');
  });
  after(async () => nc?.close());

  it('calendars: oc:invite empty when unshared, listing bob once shared, the owner once published; bob sees alice as owner', async () => {
    const pairs: Array<[string, string, string]> = [
      ['unsharedCalendar', 'alice', '/remote.php/dav/calendars/alice/private/'],
      ['sharedCalendar', 'alice', '/remote.php/dav/calendars/alice/team/'],
      ['publishedCalendar', 'alice', '/remote.php/dav/calendars/alice/public/'],
      ['bobSeesAlicesCalendar', 'bob', '/remote.php/dav/calendars/bob/team_shared_by_alice/'],
    ];
    for (const [step, uid, path] of pairs) {
      const fake = calendarFacts(await propfind(uid, path, CAL[step]!));
      const want = calendarFacts(real(CAL[step]!));
      // A calendar made by MKCALENDAR does not report its owner in Nextcloud 33; the fake names the user, which says the same.
      assert.deepEqual({ ...fake, owner: want.owner === null ? null : fake.owner }, want, step);
    }
  });

  it('folders: no share types when unshared, share type 0 once shared, mount type shared for the recipient', async () => {
    const unshared = folderFacts(await propfind('alice', '/remote.php/dav/files/alice/Private', FILES['unsharedFolder']!));
    assert.deepEqual(unshared, folderFacts(real(FILES['unsharedFolder']!)));
    const received = folderFacts(await propfind('bob', '/remote.php/dav/files/bob/Team', FILES['bobSeesReceivedFolder']!));
    const want = folderFacts(real(FILES['bobSeesReceivedFolder']!));
    assert.equal(received.mountType, want.mountType);
    assert.equal(received.owner, want.owner);
  });
});
