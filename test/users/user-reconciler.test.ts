import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { GovernanceAccessPolicy } from '../../lib/bots/bot-access.ts';
import { BotDeletion } from '../../lib/bots/bot-deletion.ts';
import { BotStore } from '../../lib/bots/bot-store.ts';
import { ConversationMemory } from '../../lib/conversation/memory.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { UserDirectory } from '../../lib/users/user-directory.ts';
import { UserReconciler } from '../../lib/users/user-reconciler.ts';
import { UserStates } from '../../lib/users/user-states.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { freshMention, startWorld, type World } from '../bots/governance-world.ts';

for (const dialect of DIALECTS) {
  describe(`user reconciliation (S21) on ${dialect}`, () => {
    let w: World;
    let states: UserStates;
    let reconciler: UserReconciler;
    let access: GovernanceAccessPolicy;
    let adminCheck: AdminCheck;
    let botsChanged = 0;
    const logger = createLogger({ level: 'silent' });

    before(async () => {
      w = await startWorld(dialect);
      const db = w.tdb.db;
      states = new UserStates(db);
      const deletion = new BotDeletion({ db, queue: w.queue, traces: w.traces, dedicated: w.dedicated, owners: w.owners, logger });
      adminCheck = new AdminCheck(w.nextcloud, { onAdmin: (uid) => states.noteAdmin(uid) });
      reconciler = new UserReconciler({
        db,
        directory: new UserDirectory(w.nextcloud),
        states,
        bots: new BotStore(db),
        isAdmin: (u) => adminCheck.isAdmin(u),
        deleteBot: (id) => deletion.delete(id),
        clearTraces: (uid) => w.traces.clearForUser(uid),
        forgetMemory: (who) => new ConversationMemory(db).forgetUser(who),
        onBotsChanged: async () => void (botsChanged += 1),
        logger,
      });
      access = new GovernanceAccessPolicy({ memberships: w.memberships, logger, ownerStatus: (uid) => states.statusOf(uid) });
    });
    after(async () => w.close());

    const canUse = async (botId: string, uid: string) =>
      access.canUse(await w.governance.require(botId), { kind: 'user', uid, user: issueFromConfirmedTalkAuthor(uid) });

    it('without a known admin it purges nothing wrongly and says it could not read enabled flags', async () => {
      const r = await reconciler.run();
      assert.equal(r.skipped, null);
      assert.equal(r.enabledChecked, false);
      assert.deepEqual(r.gone, []);
    });

    it("a disabled owner's bots stop and come back when the account is enabled again", async () => {
      await adminCheck.isAdmin(w.user('admin'));
      assert.deepEqual(await states.knownAdmins(), ['admin']);
      const bot = await w.governance.create(w.user('owner'), { displayName: 'Owner bot', mention: freshMention('own') });
      assert.equal((await canUse(bot.id, 'owner')).allowed, true);

      const u = w.nc.users.get('owner');
      assert.ok(u);
      w.nc.users.add({ ...u, enabled: false });
      const r = await reconciler.run();
      assert.equal(r.enabledChecked, true);
      assert.deepEqual(r.disabled, ['owner']);
      const refused = await canUse(bot.id, 'owner');
      assert.deepEqual(refused, { allowed: false, reason: 'owner-unavailable' });
      const reads = w.nc.calls.filter((c) => c.path === '/ocs/v2.php/cloud/users/owner');
      assert.ok(reads.length > 0 && reads.every((c) => c.user === 'admin'), 'enabled flags are read as the admin the app saw');

      w.nc.users.add({ ...u, enabled: true });
      const back = await reconciler.run();
      assert.deepEqual(back.enabledAgain, ['owner']);
      assert.equal((await canUse(bot.id, 'owner')).allowed, true);
    });

    it("a deleted account's data is purged, its personal bots deleted, its shared bots stopped for good; a re-created uid starts empty", async () => {
      const db = w.tdb.db;
      w.nc.users.add({ id: 'leaver', displayName: 'Leaver', groups: [] });
      const personal = await w.governance.create(w.user('leaver'), { displayName: 'Mine', mention: freshMention('mine') });
      const shared = await w.governance.create(w.user('admin'), { displayName: 'Shared', mention: freshMention('shared'), visibility: 'global' });
      // The shared bot belongs to the leaver (as after an ownership hand-over).
      await db.updateTable('bots').set({ owner_uid: 'leaver' }).where('id', '=', shared.id).execute();
      const other = await w.governance.create(w.user('student'), { displayName: 'Stays', mention: freshMention('stays') });
      const memory = new ConversationMemory(db);
      // As the turn runner stores them: Talk actor ids for authors, the bot for its answers.
      await memory.append({
        botId: other.id,
        roomToken: 'room1',
        threadId: null,
        invokerUid: null,
        role: 'user',
        authorUid: 'users/leaver',
        messageId: '1',
        content: 'leaver wrote this',
      });
      await memory.append({
        botId: other.id,
        roomToken: 'room1',
        threadId: null,
        invokerUid: null,
        role: 'assistant',
        authorUid: `bots/${other.mention}`,
        messageId: '1',
        content: 'answer to the leaver',
      });
      await memory.append({
        botId: other.id,
        roomToken: 'room1',
        threadId: null,
        invokerUid: null,
        role: 'user',
        authorUid: 'users/student',
        messageId: '2',
        content: 'student wrote this',
      });
      await memory.append({
        botId: other.id,
        roomToken: 'room1',
        threadId: null,
        invokerUid: null,
        role: 'assistant',
        authorUid: `bots/${other.mention}`,
        messageId: '2',
        content: 'answer to the student',
      });
      await memory.append({
        botId: other.id,
        roomToken: 'room2',
        threadId: null,
        invokerUid: 'leaver',
        role: 'user',
        authorUid: 'users/student',
        messageId: '3',
        content: 'kept for the leaver as invoker',
      });
      await w.traces.startRun({
        uid: 'leaver',
        botId: other.id,
        botMention: other.mention,
        roomToken: 'room1',
        messageId: '1',
        source: 'talk',
        userText: 'hi',
      });
      await w.queue.enqueue({ botId: other.id, roomToken: 'room1', route: 'talk_bot', inboxPayload: { x: 1 }, uid: 'leaver', replyTo: '1' });

      // Still listed: nothing happens.
      assert.deepEqual((await reconciler.run()).gone, []);
      w.nc.users.remove('leaver');
      const changes = botsChanged;
      const r = await reconciler.run();
      assert.deepEqual(r.gone, ['leaver']);
      assert.deepEqual(r.botsDeleted, [personal.id]);
      assert.deepEqual(r.botsStopped, [shared.id]);
      assert.equal(botsChanged, changes + 1);
      assert.equal(await db.selectFrom('bots').select('id').where('id', '=', personal.id).executeTakeFirst(), undefined);
      const contents = (await db.selectFrom('conversation_messages').select('content').where('bot_id', '=', other.id).execute()).map((x) => x.content);
      assert.deepEqual(
        contents.sort(),
        ['answer to the student', 'student wrote this'],
        'their messages, the answers to them and their invoker memory are gone; bots are not accounts',
      );
      assert.equal((await db.selectFrom('trace_runs').select('id').where('uid', '=', 'leaver').execute()).length, 0);
      assert.equal((await db.selectFrom('request_queue').select('id').where('uid', '=', 'leaver').execute()).length, 0);
      assert.deepEqual(await canUse(shared.id, 'student'), { allowed: false, reason: 'inactive' });
      assert.equal((await canUse(other.id, 'student')).allowed, true);

      // The uid comes back as a new account: it owns nothing, and the stopped bot stays stopped.
      w.nc.users.add({ id: 'leaver', displayName: 'New Leaver', groups: [] });
      const again = await reconciler.run();
      assert.deepEqual(again.gone, []);
      assert.equal(await states.statusOf('leaver'), 'active');
      assert.deepEqual(await canUse(shared.id, 'student'), { allowed: false, reason: 'inactive' });
      assert.equal((await db.selectFrom('bots').select('id').where('owner_uid', '=', 'leaver').where('active', '=', 1).execute()).length, 0);
    });

    it('an empty or truncated user list changes nothing', async () => {
      const db = w.tdb.db;
      const before = await db.selectFrom('bots').select('id').execute();
      const saved = w.nc.users
        .ids()
        .map((id) => w.nc.users.get(id))
        .filter((x) => x !== undefined);
      for (const u of saved) if (u.id !== 'admin') w.nc.users.remove(u.id);
      try {
        const r = await reconciler.run();
        assert.match(r.skipped ?? '', /nothing was changed/);
        assert.deepEqual(r.gone, []);
        assert.equal((await db.selectFrom('bots').select('id').execute()).length, before.length);
        assert.equal(await states.statusOf('student'), 'active');
      } finally {
        for (const u of saved) w.nc.users.add(u);
      }
    });
  });
}
