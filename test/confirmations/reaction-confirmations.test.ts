// Confirm with a 👍 (issue 23, S7) against the fake Talk, which does reactions as Talk 21 does
// them (test/fixtures/nextcloud33/talk-21-reactions.json): the request is found by its
// referenceId as the requester, only the requester's own 👍/👎 counts, once, within 10 minutes,
// through the same atomic consume as "yes <code>"; the bot reacts ✅/❌ afterwards.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { ConfirmationService } from '../../lib/confirmations/confirmation-service.ts';
import { ReactionWatcher, requesterAnswer, type ReactionWatcherOptions } from '../../lib/confirmations/reaction-watcher.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { postBotReaction } from '../../lib/nextcloud/talk-reactions.ts';
import { signBotMessage } from '../../lib/talk/bot-signature.ts';
import { normalizeActor, type ParsedMessage } from '../../lib/talk/message-parser.ts';
import { parseTalkWebhook } from '../../lib/talk/webhook-schema.ts';
import { CapabilityProbe } from '../../lib/tools/first-party-capabilities.ts';
import { FirstPartyToolProvider } from '../../lib/tools/first-party-provider.ts';
import { createInvocationContext, type InvocationContext } from '../../lib/tools/tool-provider.ts';
import { Vault } from '../../lib/vault/vault.ts';
import type { TalkBot } from '../fakes/nextcloud/talk.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';
import { APP_ID, APP_SECRET, USERS } from '../tools/first-party-fixture.ts';

const T0 = Date.UTC(2027, 0, 10, 9, 0, 0);
const ROOM = 'reactroom1';
const OTHER_ROOM = 'reactroom2';

for (const dialect of DIALECTS) {
  describe(`reaction confirmations on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let client: NextcloudClient;
    let bot: TalkBot;
    let clock = T0;
    let messageId = 5000;
    let service: ConfirmationService;
    let provider: FirstPartyToolProvider;
    let watcher: ReactionWatcher;
    let answers: Array<{ roomToken: string; text: string }>;

    function build(options: Partial<ReactionWatcherOptions> = {}): void {
      service = new ConfirmationService({
        db: tdb.db,
        sealer: new Vault(tdb.db, randomBytes(32)),
        nextcloud: client,
        appId: APP_ID,
        now: () => clock,
        isOneToOne: async () => false,
        // As the bot: Talk keeps the referenceId, and answers with no message id (capture step 01).
        postToRoom: async ({ roomToken }, text, referenceId) =>
          void nc.talk.postMessage(roomToken, { actorType: 'bots', actorId: `bot-${bot.urlHash}` }, text, { referenceId, parameters: {} }),
      });
      provider = new FirstPartyToolProvider({
        nextcloud: client,
        confirmations: service,
        capabilities: new CapabilityProbe(client, { now: () => clock }),
        now: () => clock,
      });
      service.registerExecutor(provider);
      watcher = new ReactionWatcher({
        confirmations: service,
        nextcloud: client,
        now: () => clock,
        // Ticks are driven by the tests.
        tickMs: 3_600_000,
        post: async (target, text) => void answers.push({ roomToken: target.roomToken, text }),
        react: async (target, id, emoji) => {
          const { random, signature } = signBotMessage(bot.secret, emoji);
          await postBotReaction(client, target.roomToken, id, emoji, { 'X-Nextcloud-Talk-Bot-Random': random, 'X-Nextcloud-Talk-Bot-Signature': signature });
        },
        ...options,
      });
    }

    function ctx(uid = 'alice', room = ROOM): InvocationContext {
      return createInvocationContext({
        user: issueFromConfirmedTalkAuthor(uid),
        actorKind: 'user',
        botId: 'bot-1',
        roomToken: room,
        messageId: String(++messageId),
      });
    }

    /** Asks to delete `path` (always confirmed); returns the code and the request's Talk message id. */
    async function requestDelete(path: string, c = ctx()): Promise<{ code: string; requestId: number }> {
      nc.dav.files.putFile(c.user?.uid ?? 'alice', path, `content of ${path}`);
      const res = await provider.executeTool('files_delete', { path }, {}, c);
      assert.match(res.content.map((x) => String((x as { text?: string }).text)).join(''), /NOT DONE YET/);
      const request = nc.talk
        .room(c.roomToken ?? ROOM)
        .messages.filter((m) => m.actorType === 'bots' && m.systemMessage === '')
        .at(-1);
      assert.ok(request, 'the server posted the request as the bot');
      const code = /code (\d{4,6})/.exec(request.message)?.[1];
      assert.ok(code);
      return { code, requestId: request.id };
    }

    async function react(uid: string, requestId: number, emoji: string, method: 'POST' | 'DELETE' = 'POST', room = ROOM): Promise<void> {
      const r = await nc.talk.userReaction(room, uid, requestId, emoji, method);
      assert.ok(r.status < 300, `reaction ${method} answered ${r.status}`);
    }

    function yes(code: string, uid = 'alice', room = ROOM): ParsedMessage {
      return {
        messageId: String(++messageId),
        roomToken: room,
        actor: normalizeActor(`users/${uid}`, uid),
        rawText: `yes ${code}`,
        text: `yes ${code}`,
        parameters: {},
        attachments: [],
        replyToId: null,
        threadId: null,
        referenceId: null,
        edited: false,
        kind: 'chat',
        systemName: null,
      };
    }

    function deletes(): number {
      return nc.calls.filter((c) => c.method === 'DELETE' && c.path.startsWith('/remote.php/dav/files/')).length;
    }

    function reads(): Array<{ path: string; user: string | null }> {
      return nc.calls
        .filter((c) => c.method === 'GET' && /\/apps\/spreed\/api\/v1\/(chat|reaction)\//.test(c.path))
        .map((c) => ({ path: c.path, user: c.user }));
    }

    function botReactions(requestId: number): string[] {
      return nc.talk.botReactions.filter((r) => r.messageId === requestId && r.status < 300).map((r) => r.reaction);
    }

    async function status(): Promise<string[]> {
      return (await tdb.db.selectFrom('pending_confirmations').select('status').orderBy('created_at').execute()).map((r) => r.status);
    }

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET, users: USERS });
      client = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
      bot = nc.talk.installBot({ route: 'talk_bot', name: 'Talk AI', description: 'test', secret: 'b'.repeat(64), baseUrl: nc.url });
      for (const token of [ROOM, OTHER_ROOM]) {
        nc.talk.createRoom({
          token,
          name: token,
          type: 2,
          participants: [
            { actorId: 'alice', participantType: 1 },
            { actorId: 'bob', participantType: 3 },
          ],
        });
        nc.talk.enableBotInRoom(token, 'talk_bot');
      }
    });
    after(async () => {
      await nc.close();
      await tdb.drop();
    });
    beforeEach(async () => {
      clock = T0;
      answers = [];
      await tdb.db.deleteFrom('pending_confirmations').execute();
      build();
    });
    afterEach(async () => {
      watcher.close();
      await watcher.idle();
    });

    it("alice's 👍 on the request runs it exactly once, as alice; the bot answers and reacts ✅", async () => {
      const { requestId } = await requestDelete('r/one.txt');
      const d0 = deletes();
      assert.equal(await watcher.tick(), true, 'a pending request keeps the watcher going');
      assert.equal(deletes(), d0, 'no reaction yet, nothing ran');
      const [row] = await tdb.db.selectFrom('pending_confirmations').select(['talk_message_id', 'talk_reference_id']).execute();
      assert.equal(row?.talk_message_id, String(requestId), 'the request was found by its referenceId');

      await react('alice', requestId, '👍');
      clock += 5_000;
      await watcher.tick();
      await watcher.idle();
      assert.equal(deletes(), d0 + 1);
      assert.equal(nc.dav.files.read('alice', 'r/one.txt'), null);
      assert.deepEqual(await status(), ['done']);
      assert.match(answers.at(-1)?.text ?? '', /Done: delete the file \/r\/one\.txt/);
      assert.deepEqual(botReactions(requestId), ['✅']);
      for (const r of reads()) assert.equal(r.user, 'alice', 'chat and reactions are read as the requester');

      clock += 5_000;
      assert.equal(await watcher.tick(), false, 'nothing pending: the watcher stops');
      assert.equal(deletes(), d0 + 1, 'never twice');
    });

    it("alice's 👎 declines: nothing runs, the bot answers and reacts ❌", async () => {
      const { requestId } = await requestDelete('r/two.txt');
      await react('alice', requestId, '👎');
      const d0 = deletes();
      await watcher.tick();
      await watcher.idle();
      assert.equal(deletes(), d0);
      assert.equal(nc.dav.files.read('alice', 'r/two.txt'), 'content of r/two.txt');
      assert.deepEqual(await status(), ['cancelled']);
      assert.match(answers.at(-1)?.text ?? '', /Cancelled\. Nothing was done/);
      assert.deepEqual(botReactions(requestId), ['❌']);
    });

    it("answers in the requester's Nextcloud language", async () => {
      watcher.close();
      build({ languageOf: async (uid) => (uid === 'alice' ? 'de' : 'en') });
      const { requestId } = await requestDelete('r/sprache.txt');
      await react('alice', requestId, '👍');
      await watcher.tick();
      await watcher.idle();
      assert.match(answers.at(-1)?.text ?? '', /Erledigt: delete the file \/r\/sprache\.txt/);
    });

    it("bob's 👍 does nothing; alice's own 👍 still runs it once", async () => {
      const { requestId } = await requestDelete('r/three.txt');
      const d0 = deletes();
      await react('bob', requestId, '👍');
      await react('bob', requestId, '👍🏽');
      await watcher.tick();
      assert.equal(deletes(), d0);
      assert.deepEqual(await status(), ['pending']);
      assert.deepEqual(answers, [], 'no answer to a stranger');

      await react('alice', requestId, '👍🏽');
      clock += 5_000;
      await watcher.tick();
      await watcher.idle();
      assert.equal(deletes(), d0 + 1, 'a skin-toned 👍 is a 👍');
      assert.deepEqual(await status(), ['done']);
    });

    it('a 👍 on another message, or both 👍 and 👎, answers nothing', async () => {
      const { requestId } = await requestDelete('r/four.txt');
      const other = nc.talk.postMessage(ROOM, { actorType: 'users', actorId: 'bob' }, 'unrelated');
      await react('alice', other.id, '👍');
      await react('alice', requestId, '👍');
      await react('alice', requestId, '👎');
      const d0 = deletes();
      await watcher.tick();
      assert.equal(deletes(), d0);
      assert.deepEqual(await status(), ['pending']);
      await react('alice', requestId, '👎', 'DELETE');
      clock += 5_000;
      await watcher.tick();
      assert.equal(deletes(), d0 + 1, 'once the 👎 is taken back, the 👍 counts');
    });

    it('a 👍 after 10 minutes does nothing, and the reads stop at expiry', async () => {
      const { requestId } = await requestDelete('r/five.txt');
      await watcher.tick();
      clock += 10 * 60_000 + 1;
      await react('alice', requestId, '👍');
      const r0 = reads().length;
      assert.equal(await watcher.tick(), false, 'an expired request is not watched');
      assert.equal(reads().length, r0, 'no read after expiry');
      assert.equal(nc.dav.files.read('alice', 'r/five.txt'), 'content of r/five.txt');
      // Even if a read raced the expiry, the consume refuses it.
      const late = await service.handleReaction(
        (await tdb.db.selectFrom('pending_confirmations').select('id').executeTakeFirstOrThrow()).id,
        issueFromConfirmedTalkAuthor('alice'),
        'yes',
        String(requestId),
      );
      assert.equal(late.handled, false);
      assert.equal(nc.dav.files.read('alice', 'r/five.txt'), 'content of r/five.txt');
    });

    it('a 👍 and a "yes <code>" racing run the action once', async () => {
      const { code, requestId } = await requestDelete('r/six.txt');
      await watcher.tick();
      await react('alice', requestId, '👍');
      clock += 5_000;
      const d0 = deletes();
      const [, typed] = await Promise.all([
        watcher.tick(),
        service.handleReply(yes(code), { author: issueFromConfirmedTalkAuthor('alice'), deliveredType: 'Create' }),
      ]);
      await watcher.idle();
      assert.equal(deletes(), d0 + 1, 'exactly once');
      assert.equal(typed.handled, true);
      assert.ok(typed.handled && ['executed', 'already-used'].includes(typed.status), typed.handled ? typed.status : '');
      assert.deepEqual(await status(), ['done']);
      assert.deepEqual(botReactions(requestId), ['✅'], 'one ✅');
    });

    it('a typed "yes <code>" also gets the ✅ on the request, found by its referenceId', async () => {
      const { code, requestId } = await requestDelete('r/seven.txt');
      const outcome = await service.handleReply(yes(code), { author: issueFromConfirmedTalkAuthor('alice'), deliveredType: 'Create' });
      await watcher.idle();
      assert.equal(outcome.handled && outcome.status, 'executed');
      assert.deepEqual(botReactions(requestId), ['✅']);
    });

    it('reads only while requests are pending, at most once per request per interval and a bounded number per tick', async () => {
      watcher.close();
      build({ minIntervalMs: 5_000, maxReadsPerTick: 2 });
      const r0 = reads().length;
      assert.equal(await watcher.tick(), false, 'nothing pending: the watcher stops');
      assert.equal(reads().length, r0, 'and reads nothing at all');

      await requestDelete('r/a.txt', ctx('alice', ROOM));
      await requestDelete('r/b.txt', ctx('bob', ROOM));
      await requestDelete('r/c.txt', ctx('alice', OTHER_ROOM));
      const before = watcher.reads;
      await watcher.tick();
      const first = watcher.reads - before;
      assert.equal(first, 4, 'two of three requests in the first tick (the chat lookup and the reactions of each)');
      await watcher.tick();
      const second = watcher.reads - before - first;
      assert.equal(second, 2, 'the third request in the next tick');
      const afterTwo = watcher.reads;
      await watcher.tick();
      assert.equal(watcher.reads, afterTwo, 'within the interval no request is read again');
      clock += 5_000;
      await watcher.tick();
      assert.equal(watcher.reads - afterTwo, 2, 'after the interval they are, two per tick (ids known: reactions only)');
    });

    it('the timer runs only while something is pending and stops on its own', async () => {
      watcher.close();
      build({ tickMs: 5, minIntervalMs: 0 });
      assert.equal(watcher.running, false, 'nothing pending, no timer');
      const { requestId } = await requestDelete('r/timer.txt');
      assert.equal(watcher.running, true, 'a posted request starts it');
      await react('alice', requestId, '👍');
      for (let i = 0; i < 400 && (watcher.running || nc.dav.files.read('alice', 'r/timer.txt') !== null); i++) await new Promise((r) => setTimeout(r, 5));
      await watcher.idle();
      assert.equal(nc.dav.files.read('alice', 'r/timer.txt'), null, 'the timer found the 👍');
      assert.equal(watcher.running, false, 'and stopped once nothing was pending');
    });

    it("with Talk's reaction feature a Like webhook brings the read forward; its actor is the request's author, so only the read decides", async () => {
      watcher.close();
      build({ minIntervalMs: 5_000, webhookIntervalMs: 60_000, hintIntervalMs: 1_000 });
      nc.talk.setBotFeatures('talk_bot', ['webhook', 'response', 'reaction']);
      const likes: Array<{ room: string; id: string; actor: string }> = [];
      nc.talk.webhookHandler = (d) => {
        const parsed = parseTalkWebhook(JSON.parse(d.body));
        if (parsed.ok && parsed.event.type === 'Like') {
          likes.push({ room: parsed.event.target.id, id: parsed.event.object.id, actor: parsed.event.actor.id });
          watcher.hint(parsed.event.target.id, parsed.event.object.id);
        }
      };
      try {
        const { requestId } = await requestDelete('r/hook.txt');
        await watcher.tick();
        await react('bob', requestId, '👍');
        assert.deepEqual(likes.at(-1), { room: ROOM, id: String(requestId), actor: `bots/bot-${bot.urlHash}` });
        clock += 1_000;
        await watcher.tick();
        assert.deepEqual(await status(), ['pending'], "bob's Like looks like anyone's; the read shows it is not alice's");
        await react('alice', requestId, '👍');
        clock += 1_000;
        await watcher.tick();
        await watcher.idle();
        assert.deepEqual(await status(), ['done'], 'read at once after the hint, before the 60 s safety interval');
      } finally {
        nc.talk.webhookHandler = null;
        nc.talk.setBotFeatures('talk_bot', ['webhook', 'response']);
      }
    });
  });
}

describe('requesterAnswer', () => {
  it("takes only the requester's own 👍 or 👎, with any skin tone, and nothing when both", () => {
    const alice = { actorType: 'users', actorId: 'alice' };
    const bob = { actorType: 'users', actorId: 'bob' };
    const guestAlice = { actorType: 'guests', actorId: 'alice' };
    assert.equal(requesterAnswer(new Map([['👍', [bob, guestAlice]]]), 'alice'), null);
    assert.equal(requesterAnswer(new Map([['👍🏿', [alice]]]), 'alice'), 'yes');
    assert.equal(
      requesterAnswer(
        new Map([
          ['👎', [alice]],
          ['❤️', [alice]],
        ]),
        'alice',
      ),
      'no',
    );
    assert.equal(
      requesterAnswer(
        new Map([
          ['👎', [alice]],
          ['👍', [alice]],
        ]),
        'alice',
      ),
      null,
    );
  });
});
