import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ConfirmationService, type ReplyOutcome } from '../../lib/confirmations/confirmation-service.ts';
import { createOwnReferenceId, isOwnReferenceId } from '../../lib/confirmations/reference-ids.ts';
import { withTalkLanguage } from '../../lib/l10n/talk-language.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { normalizeActor, type Attachment, type ParsedMessage } from '../../lib/talk/message-parser.ts';
import { CapabilityProbe } from '../../lib/tools/first-party-capabilities.ts';
import { FirstPartyToolProvider } from '../../lib/tools/first-party-provider.ts';
import { createInvocationContext, type InvocationContext } from '../../lib/tools/tool-provider.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { APP_ID, APP_SECRET, USERS } from '../tools/first-party-fixture.ts';

const SALT = 'reference-salt-for-tests';
const T0 = Date.UTC(2027, 0, 10, 9, 0, 0);

for (const dialect of DIALECTS) {
  describe(`confirmations on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let client: NextcloudClient;
    let clock = T0;
    let posts: Array<{ botId: string; roomToken: string; text: string }>;
    let alwaysMode: string | null;
    let oneToOne: boolean;
    let service: ConfirmationService;
    let provider: FirstPartyToolProvider;
    let messageId = 1000;

    const bots = {
      get: async (id: string) =>
        id === 'bot-1' ? { mention: 'tutor', displayName: 'Tutor' } : id === 'bot-2' ? { mention: 'helper', displayName: 'Helper' } : null,
      activeMentions: async () =>
        new Map([
          ['tutor', 'bot-1'],
          ['helper', 'bot-2'],
        ]),
    };

    function build(
      authorize?: ConstructorParameters<typeof ConfirmationService>[0]['authorize'],
      sealer: Vault | null = new Vault(tdb.db, randomBytes(32)),
    ): { service: ConfirmationService; provider: FirstPartyToolProvider } {
      const s = new ConfirmationService({
        db: tdb.db,
        sealer,
        nextcloud: client,
        appId: APP_ID,
        now: () => clock,
        bots,
        alwaysModeBot: async () => alwaysMode,
        isOneToOne: async () => oneToOne,
        postToRoom: async (target, text) => void posts.push({ ...target, text }),
        isOwnReferenceId: (id) => isOwnReferenceId(SALT, id),
        ...(authorize ? { authorize } : {}),
      });
      const p = new FirstPartyToolProvider({
        nextcloud: client,
        confirmations: s,
        capabilities: new CapabilityProbe(client, { now: () => clock }),
        now: () => clock,
      });
      s.registerExecutor(p);
      return { service: s, provider: p };
    }

    function ctx(uid = 'alice', room = 'room-a', botId = 'bot-1'): InvocationContext {
      return createInvocationContext({ user: issueFromConfirmedTalkAuthor(uid), actorKind: 'user', botId, roomToken: room, messageId: String(++messageId) });
    }

    function message(
      raw: string,
      opts: {
        uid?: string;
        room?: string;
        kind?: ParsedMessage['kind'];
        edited?: boolean;
        referenceId?: string | null;
        attachments?: Attachment[];
        actor?: string;
      } = {},
    ): ParsedMessage {
      const actor = opts.actor ?? `users/${opts.uid ?? 'alice'}`;
      return {
        messageId: String(++messageId),
        roomToken: opts.room ?? 'room-a',
        actor: normalizeActor(actor, opts.uid ?? 'alice'),
        rawText: raw,
        text: raw,
        parameters: {},
        attachments: opts.attachments ?? [],
        replyToId: null,
        threadId: null,
        referenceId: opts.referenceId ?? null,
        edited: opts.edited ?? false,
        kind: opts.kind ?? 'chat',
        systemName: null,
      };
    }

    function reply(raw: string, opts: Parameters<typeof message>[1] & { type?: string } = {}): Promise<ReplyOutcome> {
      const m = message(raw, opts);
      const author = m.actor.kind === 'user' ? issueFromConfirmedTalkAuthor(m.actor.id) : null;
      return service.handleReply(m, { author, deliveredType: opts.type ?? 'Create' });
    }

    async function requestDelete(path: string, c = ctx()): Promise<string> {
      nc.dav.files.putFile(c.user?.uid ?? 'alice', path, `content of ${path}`);
      const res = await provider.executeTool('files_delete', { path }, {}, c);
      assert.match(res.content.map((x) => String((x as { text?: string }).text)).join(''), /NOT DONE YET/);
      const post = posts.at(-1);
      assert.ok(post, 'the server posted the request');
      const code = /code (\d{4,6})/.exec(post.text)?.[1];
      assert.ok(code, post.text);
      return code;
    }

    function deletes(): number {
      return nc.calls.filter((c) => c.method === 'DELETE' && c.path.startsWith('/remote.php/dav/files/')).length;
    }

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET, users: USERS });
      client = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
    });
    after(async () => {
      await nc.close();
      await tdb.drop();
    });
    beforeEach(() => {
      clock = T0;
      posts = [];
      alwaysMode = null;
      oneToOne = false;
      ({ service, provider } = build());
    });

    it('stores the action, posts a request naming it with the code, and notifies the user outside one-to-one rooms', async () => {
      const before = nc.notifications.length;
      const code = await requestDelete('docs/report.txt');
      const text = posts.at(-1)?.text ?? '';
      assert.match(text, /delete the file \/docs\/report\.txt \(file id \d+\) to the trash bin/);
      assert.match(text, /Only alice can confirm it, in this conversation, within 10 minutes/);
      assert.match(text, new RegExp(`@tutor yes ${code}`));
      assert.match(code, /^\d{4}$/);
      assert.equal(nc.notifications.length, before + 1);
      const note = nc.notifications.at(-1);
      assert.equal(note?.user, 'alice');
      assert.match(JSON.stringify(note?.params), /delete the file \/docs\/report\.txt/);
      assert.match(JSON.stringify(note?.params), new RegExp(`yes ${code}`));
      assert.equal(nc.dav.files.read('alice', 'docs/report.txt'), 'content of docs/report.txt');
      assert.equal(service.mightConcern('room-a', 'users/alice'), true);
      assert.equal(service.mightConcern('room-z', 'users/alice'), true, 'a reply in another room gets an answer too');
      assert.equal(service.mightConcern('room-z', 'users/carol'), false);
      assert.equal(service.mightConcern('room-a', 'users/bob', `@tutor yes ${code}`), true);
      assert.equal(service.mightConcern('room-a', 'users/bob', '@tutor ja'), true);
      assert.equal(service.mightConcern('room-a', 'users/bob', 'what is the homework for tomorrow?'), false);

      oneToOne = true;
      const n = nc.notifications.length;
      await requestDelete('docs/other.txt', ctx('alice', 'room-121'));
      assert.equal(nc.notifications.length, n, 'no notification in a one-to-one room');
    });

    it("bob's yes with the code does nothing; alice's yes without the code does nothing; alice's yes with it runs exactly once", async () => {
      const code = await requestDelete('a/one.txt');
      const d0 = deletes();
      const bob = await reply(`@tutor yes ${code}`, { uid: 'bob' });
      assert.equal(bob.handled, true);
      assert.equal(bob.handled && bob.status, 'not-yours');
      assert.match(bob.handled ? bob.reply : '', /belongs to alice/);
      const bare = await reply('@tutor yes');
      assert.equal(bare.handled && bare.status, 'missing-code');
      assert.equal(deletes(), d0);
      assert.equal(nc.dav.files.read('alice', 'a/one.txt'), 'content of a/one.txt');

      const yes = await reply(`@tutor yes ${code}`);
      assert.equal(yes.handled && yes.status, 'executed', JSON.stringify(yes));
      assert.equal(yes.handled && yes.botId, 'bot-1');
      assert.match(yes.handled ? yes.reply : '', /Done: delete the file \/a\/one\.txt/);
      assert.equal(nc.dav.files.read('alice', 'a/one.txt'), null);
      assert.equal(deletes(), d0 + 1);
      for (const c of nc.calls.filter((x) => x.path.startsWith('/remote.php/dav'))) assert.equal(c.user, 'alice');

      const again = await reply(`@tutor ja ${code}`);
      assert.equal(again.handled && again.status, 'already-used');
      assert.equal(deletes(), d0 + 1, 'never twice');
    });

    it('a link password waits sealed, never in plain text, reaches Nextcloud once confirmed, and leaves storage with the consumption', async () => {
      const password = 'Correct-Horse-7781';
      nc.dav.files.putFile('alice', 'public/plan.txt', 'the plan');
      const res = await provider.executeTool('sharing_create_public_link', { path: 'public/plan.txt', password }, {}, ctx());
      assert.match(res.content.map((x) => String((x as { text?: string }).text)).join(''), /NOT DONE YET/);
      const code = /code (\d{4,6})/.exec(posts.at(-1)?.text ?? '')?.[1];
      assert.ok(code);
      const rows = await tdb.db.selectFrom('pending_confirmations').selectAll().where('tool_name', '=', 'sharing_create_public_link').execute();
      assert.equal(rows.length, 1);
      const row = rows[0];
      assert.ok(row?.sealed_secrets, 'the password is sealed');
      assert.ok(!JSON.stringify(row).includes(password), 'no column holds the password in plain text');
      assert.match(posts.at(-1)?.text ?? '', /protected by a password/);
      assert.ok(!posts.some((p) => p.text.includes(password)), 'the request message does not show it');

      const yes = await reply(`@tutor yes ${code}`);
      assert.equal(yes.handled && yes.status, 'executed', JSON.stringify(yes));
      assert.ok(!JSON.stringify(yes).includes(password), 'the outcome handed to the pipeline carries no secret');
      const create = nc.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/files_sharing/api/v1/shares')).at(-1);
      assert.ok(create?.body.includes(password), 'Nextcloud received the password');
      assert.equal(create?.user, 'alice');
      const after = await tdb.db
        .selectFrom('pending_confirmations')
        .select(['sealed_secrets', 'status'])
        .where('id', '=', row?.id ?? '')
        .executeTakeFirstOrThrow();
      assert.equal(after.status, 'done');
      assert.equal(after.sealed_secrets, null, 'the sealed password is gone once used');
    });

    it('a cancelled or superseded action drops its sealed secret; without a vault a secret is refused, not stored', async () => {
      nc.dav.files.putFile('alice', 'public/a.txt', 'a');
      await provider.executeTool('sharing_create_public_link', { path: 'public/a.txt', password: 'first-secret-1' }, {}, ctx());
      await requestDelete('public/b.txt');
      const superseded = await tdb.db
        .selectFrom('pending_confirmations')
        .select(['sealed_secrets', 'status'])
        .where('tool_name', '=', 'sharing_create_public_link')
        .where('status', '=', 'superseded')
        .execute();
      assert.equal(superseded.length, 1);
      assert.equal(superseded[0]?.sealed_secrets, null);
      await provider.executeTool('sharing_create_public_link', { path: 'public/a.txt', password: 'second-secret-2' }, {}, ctx());
      assert.equal((await reply('@tutor no')).handled, true);
      const cancelled = await tdb.db
        .selectFrom('pending_confirmations')
        .select('sealed_secrets')
        .where('status', '=', 'cancelled')
        .where('tool_name', '=', 'sharing_create_public_link')
        .executeTakeFirstOrThrow();
      assert.equal(cancelled.sealed_secrets, null);

      ({ service, provider } = build(undefined, null));
      const before = await tdb.db.selectFrom('pending_confirmations').select('id').execute();
      const refused = await provider.executeTool('sharing_create_public_link', { path: 'public/a.txt', password: 'third-secret-3' }, {}, ctx());
      assert.equal(refused.isError, true);
      const afterRows = await tdb.db.selectFrom('pending_confirmations').selectAll().execute();
      assert.equal(afterRows.length, before.length, 'nothing was stored');
      assert.ok(!JSON.stringify(afterRows).includes('third-secret-3'));
    });

    it('expires after 10 minutes (fake clock)', async () => {
      const code = await requestDelete('a/late.txt');
      clock += 10 * 60_000;
      const late = await reply(`@tutor yes ${code}`);
      assert.equal(late.handled && late.status, 'expired');
      assert.match(late.handled ? late.reply : '', /expired; nothing was done/);
      assert.equal(nc.dav.files.read('alice', 'a/late.txt'), 'content of a/late.txt');
      const later = await reply(`@tutor yes ${code}`);
      assert.equal(later.handled && later.status, 'expired');
    });

    it('runs just before the expiry', async () => {
      const code = await requestDelete('a/early.txt');
      clock += 10 * 60_000 - 1;
      const res = await reply(`yes ${code} @tutor`);
      assert.equal(res.handled && res.status, 'executed');
    });

    it('"no" cancels; a later yes is told it was cancelled', async () => {
      const code = await requestDelete('a/keep.txt');
      const no = await reply('@tutor no');
      assert.equal(no.handled && no.status, 'cancelled');
      const yes = await reply(`@tutor yes ${code}`);
      assert.equal(yes.handled && yes.status, 'cancelled');
      assert.equal(nc.dav.files.read('alice', 'a/keep.txt'), 'content of a/keep.txt');
      const plainNo = await reply('@tutor no');
      assert.equal(plainNo.handled, false, 'a "no" without anything pending is an ordinary message');
    });

    it('a confirmation in another room is ignored (and the user is told why)', async () => {
      const code = await requestDelete('a/room.txt');
      const res = await reply(`@tutor yes ${code}`, { room: 'room-b' });
      assert.equal(res.handled && res.status, 'other-room');
      assert.equal(nc.dav.files.read('alice', 'a/room.txt'), 'content of a/room.txt');
    });

    it('an edited message, a file shared with the caption "yes <code>", and our own referenceId confirm nothing', async () => {
      const code = await requestDelete('a/edit.txt');
      const attachment: Attachment = { fileId: '250', name: 'pixel.png', mimeType: 'image/png', size: 73, path: 'Talk/pixel.png', kind: 'image' };
      const outcomes = [
        await reply(`@tutor yes ${code}`, { edited: true }),
        await reply(`@tutor yes ${code}`, { kind: 'file-share', attachments: [attachment], type: 'Activity' }),
        await reply(`@tutor yes ${code}`, { kind: 'file-share', attachments: [attachment] }),
        await reply(`@tutor yes ${code}`, { type: 'Activity' }),
        await reply(`@tutor yes ${code}`, { referenceId: createOwnReferenceId(SALT) }),
      ];
      for (const o of outcomes) assert.equal(o.handled, false);
      assert.equal(nc.dav.files.read('alice', 'a/edit.txt'), 'content of a/edit.txt');
      const talkRef = await reply(`@tutor yes ${code}`, { referenceId: 'a'.repeat(64) });
      assert.equal(talkRef.handled && talkRef.status, 'executed', "Talk's own referenceIds are ordinary messages");
    });

    it('the reply must address the same bot: by mention, or the always-mode bot', async () => {
      const code = await requestDelete('a/bot.txt');
      const other = await reply(`@helper yes ${code}`);
      assert.equal(other.handled && other.status, 'not-addressed');
      const noMention = await reply(`yes ${code}`);
      assert.equal(noMention.handled && noMention.status, 'not-addressed');
      assert.equal(nc.dav.files.read('alice', 'a/bot.txt'), 'content of a/bot.txt');
      alwaysMode = 'bot-1';
      const always = await reply(`Yes ${code}!`);
      assert.equal(always.handled && always.status, 'executed');
    });

    it('a wrong code is refused and too many wrong codes cancel the request', async () => {
      const code = await requestDelete('a/guess.txt');
      const wrong = code === '1111' ? '2222' : '1111';
      for (let i = 0; i < 4; i++) assert.equal((await reply(`@tutor yes ${wrong}`)).handled && 'code-mismatch', 'code-mismatch');
      const fifth = await reply(`@tutor yes ${wrong}`);
      assert.equal(fifth.handled && fifth.status, 'cancelled');
      const right = await reply(`@tutor yes ${code}`);
      assert.equal(right.handled && right.status, 'cancelled');
      assert.equal(nc.dav.files.read('alice', 'a/guess.txt'), 'content of a/guess.txt');
    });

    it('at most one pending action per (user, bot, room): a new request cancels the old', async () => {
      const first = await requestDelete('a/first.txt');
      const second = await requestDelete('a/second.txt');
      assert.match(posts.at(-1)?.text ?? '', /previous pending request in this conversation is cancelled/);
      const old = await reply(`@tutor yes ${first}`);
      assert.ok(old.handled);
      assert.notEqual(old.handled && old.status, 'executed');
      assert.equal(nc.dav.files.read('alice', 'a/first.txt'), 'content of a/first.txt');
      const now = await reply(`@tutor yes ${second}`);
      assert.equal(now.handled && now.status, 'executed');
      assert.equal(nc.dav.files.read('alice', 'a/second.txt'), null);
      const pendingHere = () =>
        tdb.db
          .selectFrom('pending_confirmations')
          .selectAll()
          .where('user_uid', '=', 'alice')
          .where('room_token', '=', 'room-a')
          .where('bot_id', '=', 'bot-1')
          .where('status', '=', 'pending')
          .execute();
      assert.equal((await pendingHere()).length, 0);
      await requestDelete('a/third.txt');
      const [row] = await pendingHere();
      assert.ok(row);
      // The database itself refuses a second pending row for the same (user, bot, room).
      await assert.rejects(() =>
        tdb.db
          .insertInto('pending_confirmations')
          .values({ ...row, id: 'duplicate-pending-row', code: '0000' })
          .execute(),
      );
    });

    it('two concurrent replies with the code run the action once', async () => {
      const code = await requestDelete('a/race.txt');
      const d0 = deletes();
      const results = await Promise.all([reply(`@tutor yes ${code}`), reply(`@tutor ok ${code}`), reply(`@tutor yes ${code}`)]);
      const executed = results.filter((r) => r.handled && r.status === 'executed');
      assert.equal(executed.length, 1);
      assert.equal(deletes(), d0 + 1);
    });

    it('is consumed once across a restart: a resumed reply is not repeated', async () => {
      const code = await requestDelete('a/restart.txt');
      const m = message(`@tutor yes ${code}`);
      // The first process consumes the confirmation and dies before the action finishes.
      let release: () => void = () => undefined;
      const crashed = build(async () => {
        await new Promise<void>((r) => (release = r));
        throw new Error('process killed');
      }).service;
      const dying = crashed.handleReply(m, { author: issueFromConfirmedTalkAuthor('alice'), deliveredType: 'Create' });
      // Wait until the first process has consumed it (a fixed delay races on a loaded machine).
      for (let i = 0; i < 200; i++) {
        const row = await tdb.db
          .selectFrom('pending_confirmations')
          .select('status')
          .where('code', '=', code)
          .where('user_uid', '=', 'alice')
          .orderBy('created_at', 'desc')
          .executeTakeFirst();
        if (row?.status === 'running') break;
        await new Promise((r) => setTimeout(r, 10));
      }
      // A new process over the same database processes the same message again.
      const fresh = build().service;
      await fresh.loadIndex();
      assert.equal(fresh.mightConcern('room-a', 'users/alice'), true);
      const resumed = await fresh.handleReply(m, { author: issueFromConfirmedTalkAuthor('alice'), deliveredType: 'Create' });
      assert.equal(resumed.handled && resumed.status, 'interrupted');
      const other = await fresh.handleReply(message(`@tutor yes ${code}`), { author: issueFromConfirmedTalkAuthor('alice'), deliveredType: 'Create' });
      assert.equal(other.handled && other.status, 'already-used');
      release();
      await dying;
      assert.equal(nc.dav.files.read('alice', 'a/restart.txt'), 'content of a/restart.txt', 'never run by the resumed process');
    });

    it('re-checks authorisation and the object state when it runs', async () => {
      const code = await requestDelete('a/auth.txt');
      const denied = build(async () => ({ ok: false, reason: 'the bot was switched off' })).service;
      const res = await denied.handleReply(message(`@tutor yes ${code}`), { author: issueFromConfirmedTalkAuthor('alice'), deliveredType: 'Create' });
      assert.equal(res.handled && res.status, 'failed');
      assert.match(res.handled ? res.reply : '', /no longer allowed to do this: the bot was switched off/);
      assert.equal(nc.dav.files.read('alice', 'a/auth.txt'), 'content of a/auth.txt');

      const code2 = await requestDelete('a/state.txt');
      nc.dav.files.putFile('alice', 'a/state.txt', 'changed meanwhile');
      const changed = await reply(`@tutor yes ${code2}`);
      assert.equal(changed.handled && changed.status, 'failed');
      assert.match(changed.handled ? changed.reply : '', /The file changed/);
      assert.equal(nc.dav.files.read('alice', 'a/state.txt'), 'changed meanwhile');
    });

    it('guests cannot confirm and an unrelated "ok 1234" is routed normally', async () => {
      const code = await requestDelete('a/guest.txt');
      const guest = await reply(`@tutor yes ${code}`, { actor: 'guests/abc123' });
      assert.equal(guest.handled && guest.status, 'not-yours');
      const unrelated = await reply('@tutor ok 9999', { room: 'room-q', uid: 'bob' });
      assert.equal(unrelated.handled, false);
      assert.equal(nc.dav.files.read('alice', 'a/guest.txt'), 'content of a/guest.txt');
    });

    it('writes the request, the notification and the replies in German within a German turn, and English outside', async () => {
      const replyText = (o: ReplyOutcome): string => (o.handled ? o.reply : '');
      const subject = () =>
        (nc.notifications.at(-1)?.params as { subject_params?: { rich_subject?: string; rich_message?: string } } | undefined)?.subject_params;
      // Rooms of their own: earlier tests leave pending requests in room-a.
      let room = 'room-de';
      const answer = (raw: string, opts: Parameters<typeof reply>[1] = {}) => reply(raw, { room, ...opts });
      const requestIn = async (path: string): Promise<{ code: string; lines: string[] }> => {
        nc.dav.files.putFile('alice', path, `content of ${path}`);
        await provider.executeTool('files_delete', { path }, {}, ctx('alice', room));
        const text = posts.at(-1)?.text ?? '';
        const code = /\((?:code|Code) (\d{4,6})\)/.exec(text)?.[1];
        assert.ok(code, text);
        return { code, lines: text.split('\n') };
      };

      await withTalkLanguage('de', async () => {
        const first = await requestIn('de/erste.txt');
        assert.deepEqual(first.lines.slice(0, 1), [`🔐 **Bestätigung erforderlich** (Code ${first.code})`]);
        assert.match(first.lines[1] ?? '', /^Auftrag an @tutor: delete the file \/de\/erste\.txt \(file id \d+\) to the trash bin\.$/);
        assert.equal(first.lines[2], 'Grund für die Bestätigung: deleting a file.');
        assert.equal(
          first.lines[3],
          `Bestätigen kann nur alice, in dieser Unterhaltung und innerhalb von 10 Minuten (bis 09:10 UTC): Zum Ausführen mit \`@tutor ja ${first.code}\` antworten, zum Abbrechen mit \`@tutor nein\`.`,
        );
        assert.equal(first.lines[4], 'Alternativ mit 👍 auf diese Nachricht ausführen oder mit 👎 abbrechen.');
        assert.equal(first.lines.length, 5);
        assert.equal(subject()?.rich_subject, 'Bestätigung erforderlich: {action}');
        assert.equal(
          subject()?.rich_message,
          `Zum Ausführen dem Bot in der Unterhaltung bis 09:10 UTC mit „ja ${first.code}“ antworten. Falls das nicht angefragt wurde, mit „nein“ antworten.`,
        );

        const wrong = first.code === '1111' ? '2222' : '1111';
        const mismatch = await answer(`@tutor ja ${wrong}`);
        assert.equal(mismatch.handled && mismatch.status, 'code-mismatch');
        assert.equal(
          replyText(mismatch),
          'Dieser Code passt nicht zur offenen Anfrage. Es wurde nichts ausgeführt; bitte den Code in der Bestätigungsanfrage prüfen.',
        );
        const bare = await answer('@tutor ja');
        assert.equal(
          replyText(bare),
          'Bisher wurde nichts ausgeführt: Zum Bestätigen mit „ja“ und dem Code aus der Bestätigungsanfrage antworten, zum Beispiel `ja 1234`.',
        );
        const bob = await answer(`@tutor ja ${first.code}`, { uid: 'bob' });
        assert.equal(replyText(bob), 'Diese Bestätigung ist für alice bestimmt; nur diese Person kann sie erteilen. Es wurde nichts ausgeführt.');

        // The reply the request suggests is the one that runs it.
        const done = await answer(`@tutor ja ${first.code}`);
        assert.equal(done.handled && done.status, 'executed', JSON.stringify(done));
        assert.match(replyText(done), /^✅ Erledigt: delete the file \/de\/erste\.txt \(file id \d+\) to the trash bin\.$/);
        assert.equal(nc.dav.files.read('alice', 'de/erste.txt'), null);
        assert.equal(replyText(await answer(`@tutor ja ${first.code}`)), 'Diese Bestätigung wurde bereits verwendet; sie wird nur einmal ausgeführt.');

        const older = await requestIn('de/zweite.txt');
        const newer = await requestIn('de/dritte.txt');
        assert.equal(newer.lines.at(-1), 'Die vorherige offene Anfrage in dieser Unterhaltung ist damit abgebrochen.');
        const no = await answer('@tutor nein');
        assert.equal(no.handled && no.status, 'cancelled');
        assert.match(replyText(no), /^Abgebrochen\. Nicht ausgeführt: delete the file \/de\/dritte\.txt \(file id \d+\) to the trash bin\.$/);
        assert.equal(
          replyText(await answer(`@tutor ja ${older.code}`)),
          'Diese Anfrage wurde durch eine neuere ersetzt; nur die neueste Anfrage kann bestätigt werden.',
        );
        assert.equal(
          replyText(await answer(`@tutor ja ${newer.code}`)),
          'Diese Anfrage wurde abgebrochen; es wurde nichts ausgeführt. Bei Bedarf bitte neu anfragen.',
        );

        const late = await requestIn('de/spaet.txt');
        clock += 10 * 60_000;
        assert.equal(
          replyText(await answer(`@tutor ja ${late.code}`)),
          'Diese Bestätigung ist abgelaufen; es wurde nichts ausgeführt. Bei Bedarf bitte neu anfragen.',
        );

        const denied = await requestIn('de/verboten.txt');
        const refusing = build(async () => ({ ok: false, reason: 'the bot was switched off' })).service;
        const failed = await refusing.handleReply(message(`@tutor ja ${denied.code}`, { room }), {
          author: issueFromConfirmedTalkAuthor('alice'),
          deliveredType: 'Create',
        });
        assert.equal(failed.handled && failed.status, 'failed');
        assert.match(
          replyText(failed),
          /^Nicht ausgeführt: delete the file \/de\/verboten\.txt \(file id \d+\) to the trash bin\.\nDafür fehlt inzwischen die Berechtigung: the bot was switched off$/,
        );
      });

      // Outside a German turn everything stays English.
      room = 'room-en';
      const english = await requestIn('en/file.txt');
      assert.equal(english.lines[0], `🔐 **Confirmation needed** (code ${english.code})`);
      assert.match(english.lines[1] ?? '', /^@tutor was asked to delete the file \/en\/file\.txt \(file id \d+\) to the trash bin\.$/);
      assert.equal(english.lines[2], 'This needs your confirmation because it means deleting a file.');
      assert.match(
        english.lines[3] ?? '',
        new RegExp(
          `^Only alice can confirm it, in this conversation, within 10 minutes \\(until \\d\\d:\\d\\d UTC\\): answer \`@tutor yes ${english.code}\` to go ahead, or \`@tutor no\` to cancel\\.$`,
        ),
      );
      assert.equal(english.lines[4], 'You can also react 👍 to this message to go ahead, or 👎 to cancel.');
      assert.equal(subject()?.rich_subject, 'Confirmation needed: {action}');
      assert.match(
        subject()?.rich_message ?? '',
        new RegExp(
          `^To go ahead, answer "yes ${english.code}" to the bot in the conversation before \\d\\d:\\d\\d UTC\\. If you did not ask for this, answer "no"\\.$`,
        ),
      );
      const wrong = english.code === '1111' ? '2222' : '1111';
      assert.equal(
        replyText(await answer(`@tutor ja ${wrong}`)),
        'That code does not match your pending request. Nothing was done; check the code in the confirmation request.',
      );
      assert.equal(
        replyText(await answer('@tutor yes')),
        'Nothing was done yet: to confirm, answer with "yes" and the code from the confirmation request, for example `yes 1234`.',
      );
      assert.match(replyText(await answer('@tutor nein')), /^Cancelled\. Nothing was done: delete the file \/en\/file\.txt/);
    });

    it('the stored action is bound by its hash: a tampered row is refused', async () => {
      const code = await requestDelete('a/tamper.txt');
      nc.dav.files.putFile('alice', 'a/victim.txt', 'victim');
      await tdb.db
        .updateTable('pending_confirmations')
        .set({ args: JSON.stringify({ path: 'a/victim.txt' }) })
        .where('code', '=', code)
        .where('status', '=', 'pending')
        .execute();
      const res = await reply(`@tutor yes ${code}`);
      assert.equal(res.handled && res.status, 'failed');
      assert.equal(nc.dav.files.read('alice', 'a/victim.txt'), 'victim');
      assert.equal(nc.dav.files.read('alice', 'a/tamper.txt'), 'content of a/tamper.txt');
    });
  });
}
