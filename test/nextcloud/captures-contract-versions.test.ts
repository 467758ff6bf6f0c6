// The product's readers of Nextcloud answers against the same exchange captured from both real
// servers: Nextcloud 29 (test/fixtures/nextcloud29/) and Nextcloud 33 (test/fixtures/nextcloud33/).
// Talk chat, WebDAV and CalDAV multistatus, OCS sharing, Deck, Deck's capability, AppAPI state.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseChatApiMessage } from '../../lib/talk/message-parser.ts';
import { componentNames, isCollection, parseMultistatus, propText } from '../../lib/nextcloud/multistatus.ts';
import { toShare } from '../../lib/nextcloud/sharing.ts';
import { toBoard, toCard } from '../../lib/nextcloud/deck.ts';
import { deckVersion, reorderHonoursOrder } from '../../lib/nextcloud/deck-capability.ts';
import { parseCollective, parsePage } from '../../lib/nextcloud/collectives/model.ts';
import { readFixture, type NextcloudVersion } from '../helpers/fixtures.ts';

type Json = Record<string, any>;
type Where = [file: string, step?: string];

/** The response body of a captured exchange (a whole-file exchange, a step, or a bare OCS body). */
function body(version: NextcloudVersion, [file, step]: Where): string {
  const data = readFixture(file, version) as Json;
  const x = step === undefined ? data : data[step];
  assert.ok(x, `${file} ${step ?? ''}`);
  if (x['response'] === undefined) return JSON.stringify(x);
  return String(x['response']['body']);
}

function ocsData(version: NextcloudVersion, where: Where): any {
  return (JSON.parse(body(version, where)) as Json)['ocs']['data'];
}

const CAPTURES: Record<NextcloudVersion, Record<string, Where>> = {
  29: {
    chat: ['43-talk-read-chat-as-alice.json'],
    propfind: ['70-webdav-propfind-nextcloud-props.json', 'propfindDepth1'],
    trash: ['73-webdav-delete-trashbin-restore.json', 'propfindTrash'],
    versions: ['74-webdav-versions.json', 'propfindVersions'],
    calendars: ['22-caldav-propfind-calendars-alice.json'],
    calendarQuery: ['81-caldav-calendar-query-time-range.json', 'reportCalendarQueryTimeRange'],
    userShare: ['78-ocs-sharing.json', 'createUserShareReadOnly'],
    linkShare: ['78-ocs-sharing.json', 'createPublicLinkWithPasswordAndExpiry'],
    board: ['90-deck.json', 'getBoard'],
    card: ['90-deck.json', 'createCard'],
    stacks: ['90-deck.json', 'listStacks'],
    capabilities: ['20-ocs-capabilities-as-alice.json'],
  },
  33: {
    chat: ['talk-21-chat-and-bot-api.json', 'chat-as-alice'],
    propfind: ['webdav-33.json', 'propfind-depth-1'],
    trash: ['webdav-33.json', 'trashbin'],
    versions: ['webdav-33.json', 'versions'],
    calendars: ['caldav-33.json', 'calendar-home'],
    calendarQuery: ['caldav-33.json', 'calendar-query'],
    userShare: ['ocs-sharing-33.json', 'create-user-share'],
    linkShare: ['ocs-sharing-33.json', 'create-link-with-password'],
    board: ['deck-1.17-cards.json', 'board'],
    card: ['deck-1.17-cards.json', 'create-card-1'],
    stacks: ['deck-1.17-cards.json', 'stacks-after-move'],
    capabilities: ['appapi-33-ocs.json', 'capabilities-as-alice'],
  },
};

for (const version of [29, 33] as const) {
  const at = CAPTURES[version];
  describe(`the product's readers against the Nextcloud ${version} captures`, () => {
    it('Talk chat: every message reads, bots are bots, replies name their parent', () => {
      const messages = ocsData(version, at['chat']!) as Json[];
      assert.ok(messages.length > 3);
      for (const m of messages) {
        const parsed = parseChatApiMessage(m);
        assert.ok(parsed, `message ${m['id']} (${m['systemMessage'] || m['messageType']})`);
        assert.equal(parsed.actor.kind === 'bot', m['actorType'] === 'bots');
        assert.equal(parsed.replyToId, m['parent'] ? String(m['parent']['id']) : null);
        assert.equal(parsed.referenceId, m['referenceId'] ? m['referenceId'] : null);
      }
      assert.ok(
        messages.some((m) => m['actorType'] === 'bots'),
        'the bot’s own reply is in the chat',
      );
    });

    it('WebDAV: PROPFIND, trash and versions multistatus read with their props', () => {
      const entries = parseMultistatus(body(version, at['propfind']!));
      assert.ok(entries.length >= 2);
      assert.ok(isCollection(entries[0]!), 'the folder itself comes first');
      for (const e of entries) {
        assert.match(propText(e, 'fileid'), /^\d+$/, e.href);
        assert.notEqual(propText(e, 'getetag'), '', e.href);
        assert.match(propText(e, 'permissions'), /^[RGDNVWCKSM]*$/, e.href);
      }
      const trash = parseMultistatus(body(version, at['trash']!)).slice(1);
      assert.ok(trash.length > 0, 'the trash lists what was deleted');
      for (const e of trash) assert.notEqual(propText(e, 'trashbin-filename'), '', e.href);
      const versions = parseMultistatus(body(version, at['versions']!));
      assert.ok(versions.length >= 2, 'the versions of a twice-written file');
    });

    it('CalDAV: the calendar home lists VEVENT calendars; a time-range query returns calendar data', () => {
      const calendars = parseMultistatus(body(version, at['calendars']!)).filter((e) => componentNames(e).includes('VEVENT'));
      assert.ok(calendars.length > 0);
      const events = parseMultistatus(body(version, at['calendarQuery']!));
      assert.ok(events.length > 0);
      for (const e of events) assert.match(propText(e, 'calendar-data'), /BEGIN:VEVENT/);
    });

    it('OCS sharing: user and password link shares read with string ids and int types', () => {
      const user = toShare(ocsData(version, at['userShare']!));
      assert.match(user.id, /^\d+$/);
      assert.equal(user.shareType, 0);
      assert.equal(user.shareWith, 'bob');
      const link = toShare(ocsData(version, at['linkShare']!));
      assert.equal(link.shareType, 3);
      assert.ok(link.url?.includes('/s/'), 'the link share has its URL');
      assert.equal(link.expiration?.slice(0, 10), '2030-06-30');
    });

    it('Deck: board, card and stacks read; the capability names a version the reorder rule knows', () => {
      const board = toBoard(JSON.parse(body(version, at['board']!)));
      assert.ok(board.id > 0 && board.title !== '');
      assert.equal(board.owner.uid, 'alice');
      const card = toCard(JSON.parse(body(version, at['card']!)));
      assert.ok(card.id > 0 && card.stackId > 0);
      const stacks = (JSON.parse(body(version, at['stacks']!)) as Json[]).map((s) => ({ ...s, cards: (s['cards'] ?? []).map(toCard) }));
      assert.ok(stacks.some((s) => s.cards.length > 0));
      const caps = ocsData(version, at['capabilities']!)['capabilities'];
      const v = deckVersion(caps);
      assert.ok(v);
      // Deck 1.13 (NC 29) ignores `order` on reorder, 1.17 (NC 33) honours it (deck-1.17-cards.json: stacks-after-reorder).
      assert.equal(reorderHonoursOrder(v), version === 33);
    });
  });
}

describe('Collectives 4.5 (Nextcloud 33): the OCS answers read', () => {
  it('a collective, and pages with the member’s .Collectives mount', () => {
    const created = ocsData(33, ['collectives-4.5.json', 'create'])['collective'];
    const collective = parseCollective(created, 'create');
    assert.equal(collective.id, created['id']);
    const pages = (ocsData(33, ['collectives-4.5.json', 'pages-after-create'])['pages'] as unknown[]).map((p) => parsePage(p, collective.id, 'pages'));
    assert.ok(pages.length >= 3, 'landing page, page and subpage');
    for (const p of pages) assert.ok((p.collectivePath ?? '').startsWith('.Collectives/'), String(p.collectivePath));
  });
});

describe('Talk 21 deletions (Nextcloud 33): the webhook and Talk’s copy', () => {
  it('the webhook carries the system message’s id; Talk’s copy of it names the deleted message as its parent (S21)', () => {
    const capture = readFixture('talk-21-webhook-delete.json', 33) as Json;
    const deletedId = Number(/\/chat\/[^/]+\/(\d+)$/.exec(String(capture['alice-deletes']['request']['url']))?.[1]);
    const [delivery] = capture['webhooksReceivedByExApp'] as Json[];
    const webhookId = (JSON.parse(String(delivery?.['rawBody'])) as Json)['object']['id'];
    const copy = parseChatApiMessage((JSON.parse(capture['alice-deletes']['response']['body']) as Json)['ocs']['data']);
    assert.ok(copy);
    assert.equal(copy.messageId, webhookId, 'the webhook names the system message');
    assert.notEqual(webhookId, String(deletedId));
    assert.equal(copy.systemName, 'message_deleted');
    assert.equal(copy.replyToId, String(deletedId), 'the parent is the deleted message');
  });
});
