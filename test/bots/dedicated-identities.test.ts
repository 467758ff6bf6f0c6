// Dedicated Talk identities end to end (S14, S3, S23): a shared global bot with its own Talk bot, in a room
// that also has the shared "Talk AI" enabled; Talk delivers every message to both routes, in any order.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ROUTE_MATCHERS } from '../../lib/appapi/route-matchers.ts';
import { readManifest } from '../../lib/appapi/manifest.ts';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { dedicatedRoute } from '../../lib/bots/dedicated-talk-bots.ts';
import { SHARED_ROUTE } from '../../lib/talk/talk-identities.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

for (const dialect of DIALECTS) {
  describe(`dedicated Talk identities on ${dialect}`, () => {
    let s: TalkScenario;
    let librarian: Bot;
    let tutor: Bot;
    let room: string;
    before(async () => {
      s = await startTalkScenario({ dialect });
      librarian = await s.createBot({ mention: 'librarian', displayName: 'Librarian' });
      tutor = await s.createBot({ mention: 'tutor', displayName: 'Tutor' });
      const registered = await admin('POST', `/api/v1/admin/bots/${librarian.id}/talk-identity`, { name: 'Librarian' });
      assert.equal(registered.status, 200, registered.text);
      await s.h.application.index.refresh();
      room = s.groupRoom();
      s.h.nc.enableBotInRoom(room, dedicatedRoute(librarian.id));
    });
    after(async () => s.close());

    const admin = (method: string, path: string, body?: unknown) =>
      s.h.fetch(path, { method, headers: s.h.browserHeaders('admin'), ...(body === undefined ? {} : { body }) });
    const post = (route: string, body: string, headers = s.h.headers('')) =>
      s.h.fetch(`/${route}`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body });

    /** Posts as alice and delivers to the routes in `order`, as Talk does for every enabled bot. */
    async function sayThrough(order: string[], text: string, token = room) {
      const msg = s.h.nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, text);
      const statuses: string[] = [];
      for (const route of order) {
        const r = await post(route, s.h.nc.webhookBodyFor(msg, { route }));
        assert.equal(r.status, 200, r.text);
        statuses.push(r.json.status);
      }
      await s.idle();
      return { msg, statuses };
    }

    /** Bot messages after `id`, with the route of the Talk bot that posted each. */
    function answersAfter(id: number, token = room): Array<{ route: string; text: string }> {
      const byActor = new Map([...s.h.nc.talk.bots.values()].map((b) => [`bot-${b.urlHash}`, b.route]));
      return s.h.nc.talk
        .room(token)
        .messages.filter((m) => m.id > id && m.actorType === 'bots')
        .map((m) => ({ route: byActor.get(m.actorId) ?? '?', text: m.message }));
    }

    const handledCount = async () => (await s.h.application.database.db.selectFrom('handled_messages').select('message_id').execute()).length;

    /** A message the intake of `route` kept (as it would when its bot is active in the room), processed. */
    async function storedOnlyFor(route: string, token: string, text: string) {
      const msg = s.h.nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, text);
      await s.h.application.inbox.add({
        roomToken: token,
        messageId: String(msg.id),
        actorId: 'users/alice',
        route,
        kind: 'chat',
        payload: { type: 'Create', systemName: null, actorId: 'users/alice', roomToken: token, messageId: String(msg.id) },
      });
      s.h.application.processing.notify();
      await s.idle();
      return msg;
    }

    it('answers a message for its bot once, through its own identity, whichever delivery comes first', async () => {
      const first = await sayThrough([dedicatedRoute(librarian.id), SHARED_ROUTE], '@librarian hello');
      const onboarding = answersAfter(first.msg.id);
      assert.equal(onboarding.length, 1, JSON.stringify(onboarding));
      assert.equal(onboarding[0]!.route, dedicatedRoute(librarian.id));
      // The shared delivery is dropped at the intake once the first is handled, or kept and found handled: one answer either way.
      assert.ok(['duplicate', 'accepted'].includes(first.statuses[1] ?? ''), String(first.statuses[1]));

      await sayThrough([SHARED_ROUTE, dedicatedRoute(librarian.id)], 'A');
      s.llm.enqueue({ text: ['Shelf 4.'] });
      const asked = await sayThrough([SHARED_ROUTE, dedicatedRoute(librarian.id)], '@librarian where are the atlases?');
      assert.deepEqual(answersAfter(asked.msg.id), [{ route: dedicatedRoute(librarian.id), text: 'Shelf 4.' }]);
    });

    it("never lets its identity take another bot's message, so the shared bot still answers it once", async () => {
      const intro = await sayThrough([dedicatedRoute(librarian.id), SHARED_ROUTE], '@tutor hi');
      assert.equal(intro.statuses[0], 'ignored', "the librarian's route does not even keep the tutor's message");
      const answers = answersAfter(intro.msg.id);
      assert.equal(answers.length, 1);
      assert.equal(answers[0]!.route, SHARED_ROUTE);

      // Even when its intake kept such a message (e.g. while its bot was onboarding in the room), the
      // librarian's identity does not answer it: where the shared bot delivers, it is answered as that delivery...
      await sayThrough([SHARED_ROUTE], 'A');
      s.llm.enqueue({ text: ['Tutor here.'] });
      const merged = await storedOnlyFor(dedicatedRoute(librarian.id), room, '@tutor through the wrong door');
      // Both bots are in this room, so the shared identity names the tutor (feature row 13).
      assert.deepEqual(answersAfter(merged.id), [{ route: SHARED_ROUTE, text: '**Tutor:** Tutor here.' }]);

      // ...and where only the librarian's own Talk bot is enabled, nobody answers and the message is not marked handled.
      const lonely = s.h.nc.createRoom({ name: 'Librarian only', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] }).token;
      s.h.nc.enableBotInRoom(lonely, dedicatedRoute(librarian.id));
      const before = await handledCount();
      const stray = await storedOnlyFor(dedicatedRoute(librarian.id), lonely, '@tutor are you here?');
      assert.deepEqual(answersAfter(stray.id, lonely), [], 'no bot answers through the wrong identity');
      assert.equal(await handledCount(), before, 'the dedupe key stays free for a delivery to the right identity');
    });

    it('a message its identity kept but may not answer is answered once by the shared delivery, even where the shared bot never delivered before', async () => {
      const fresh = s.groupRoom('Fresh room');
      s.h.nc.enableBotInRoom(fresh, dedicatedRoute(librarian.id));
      const msg = await storedOnlyFor(dedicatedRoute(librarian.id), fresh, '@tutor hello from a new room');
      assert.deepEqual(answersAfter(msg.id, fresh), [], 'the librarian identity does not answer it');
      // Talk delivers the same message to the shared bot too: the inbox keeps it (one row per route) and it is answered.
      const shared = await post(SHARED_ROUTE, s.h.nc.webhookBodyFor(msg, { route: SHARED_ROUTE }));
      assert.equal(shared.status, 200, shared.text);
      assert.equal(shared.json.status, 'accepted');
      await s.idle();
      const answers = answersAfter(msg.id, fresh);
      assert.equal(answers.length, 1, JSON.stringify(answers));
      assert.equal(answers[0]!.route, SHARED_ROUTE);
    });

    it('answers through the shared bot once a moderator removed its own Talk bot from the room, and stops trying the removed one', async () => {
      const lib = s.h.nc.talk.botByRoute(dedicatedRoute(librarian.id))!;
      const moved = s.groupRoom('Own bot removed');
      s.h.nc.enableBotInRoom(moved, dedicatedRoute(librarian.id));
      s.h.nc.enableBotInRoom(moved, SHARED_ROUTE);
      await sayThrough([dedicatedRoute(librarian.id), SHARED_ROUTE], '@librarian hello', moved);
      await sayThrough([SHARED_ROUTE], 'A', moved);
      // The moderator removes the librarian's own Talk bot; Talk now delivers only to the shared one.
      s.h.nc.talk.room(moved).enabledBots.delete(lib.talkId);
      const refusedBefore = s.h.nc.botMessages.filter((b) => b.token === moved && b.status === 401).length;
      s.llm.enqueue({ text: ['Shelf 9.'] });
      const asked = await sayThrough([SHARED_ROUTE], '@librarian where are the maps?', moved);
      assert.deepEqual(answersAfter(asked.msg.id, moved), [{ route: SHARED_ROUTE, text: 'Shelf 9.' }]);
      assert.equal(s.h.nc.botMessages.filter((b) => b.token === moved && b.status === 401).length, refusedBefore + 1, 'one refusal, then the shared bot');
      // The next answer goes straight through the shared bot: no more 401s, which Talk would throttle.
      s.llm.enqueue({ text: ['Shelf 10.'] });
      const again = await sayThrough([SHARED_ROUTE], '@librarian and the globes?', moved);
      assert.deepEqual(answersAfter(again.msg.id, moved), [{ route: SHARED_ROUTE, text: 'Shelf 10.' }]);
      assert.equal(s.h.nc.botMessages.filter((b) => b.token === moved && b.status === 401).length, refusedBefore + 1);
    });

    it('stays silent when its bot is no longer for everyone', async () => {
      const db = s.h.application.database.db;
      await db
        .updateTable('bots')
        .set({ visibility: 'groups', allowed_groups: JSON.stringify(['nobody']) } as never)
        .where('id', '=', librarian.id)
        .execute();
      try {
        const msg = await storedOnlyFor(dedicatedRoute(librarian.id), room, '@librarian still there?');
        const answers = answersAfter(msg.id);
        assert.ok(answers.length > 0, 'the message was processed, as the shared delivery of the room');
        assert.deepEqual(
          answers.filter((a) => a.route === dedicatedRoute(librarian.id)),
          [],
          'never through its own identity',
        );
      } finally {
        await db
          .updateTable('bots')
          .set({ visibility: 'global', allowed_groups: '[]' } as never)
          .where('id', '=', librarian.id)
          .execute();
      }
    });

    it('guards its route like /talk_bot, and no declared route matches it under any AppAPI version', async () => {
      const msg = s.h.nc.postMessage(room, { actorType: 'users', actorId: 'alice' }, '@librarian hi');
      const body = s.h.nc.webhookBodyFor(msg, { route: dedicatedRoute(librarian.id) });
      assert.equal((await post(dedicatedRoute(librarian.id), body, s.h.headers('alice'))).status, 403, 'a user is refused');
      assert.equal((await post(dedicatedRoute(librarian.id), body, s.h.browserHeaders(''))).status, 403, 'proxy markers are refused');
      assert.equal((await post('talk_bot_no-such-bot', body)).status, 404, 'a route no bot owns');
      assert.equal((await post('talk_bot_no-such-bot', body, s.h.browserHeaders(''))).status, 403, 'refused before telling anything');

      const manifest = readManifest(new URL('../../appinfo/info.xml', import.meta.url).pathname);
      for (const [name, matcher] of Object.entries(ROUTE_MATCHERS)) {
        for (const path of [`/${dedicatedRoute(librarian.id)}`, '/talk_bot_x']) {
          assert.equal(
            manifest.routes.find((r) => matcher(r.url, path)),
            undefined,
            `${name} matches no declared route for ${path}`,
          );
        }
      }
    });

    it('gives Talk bot names of at most 64 bytes (as Talk counts), only to bots for everyone', async () => {
      const long = await admin('POST', `/api/v1/admin/bots/${tutor.id}/talk-identity`, { name: 'x'.repeat(65) });
      assert.equal(long.status, 400, long.text);
      // 40 characters, 80 bytes: Talk would refuse it, so we do, with a reason.
      const umlauts = await admin('POST', `/api/v1/admin/bots/${tutor.id}/talk-identity`, { name: 'ä'.repeat(40) });
      assert.equal(umlauts.status, 400, umlauts.text);
      assert.match(umlauts.text, /64 bytes/);
      // Without a name the display name is the default, shortened to what Talk takes.
      const wide = await s.createBot({ mention: 'widebot', displayName: 'Übungsleiter für Mathematik, Physik, Chemie und Biologie der Oberstufe' });
      const named = await admin('POST', `/api/v1/admin/bots/${wide.id}/talk-identity`, {});
      assert.equal(named.status, 200, named.text);
      const registered = s.h.nc.talk.botByRoute(dedicatedRoute(wide.id));
      assert.ok(
        registered && Buffer.byteLength(registered.name) <= 64 && registered.name.startsWith('Übungsleiter für Mathematik'),
        JSON.stringify(registered?.name),
      );
      const personal = await s.h.application.bots.create({ displayName: 'Mine', mention: 'minebot', systemPrompt: 'p' }, 'alice');
      const refused = await admin('POST', `/api/v1/admin/bots/${personal.id}/talk-identity`, { name: 'Mine' });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(s.h.nc.talk.botByRoute(dedicatedRoute(personal.id)), undefined);
    });
  });
}
