import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import * as S from '../../lib/bots/bot-schemas.ts';
import { MENTION_RESERVED, MENTION_TAKEN } from '../../lib/bots/bot-store.ts';
import { dedicatedRoute } from '../../lib/bots/dedicated-talk-bots.ts';
import { packageVersion, storedOpenApiPath } from '../../lib/cli/write-openapi.ts';
import { apiDocument, apiRouteSpecs } from '../../lib/server/api-specs.ts';
import { documentedRoutes, serializeOpenApi, servedRoutes } from '../../lib/server/openapi.ts';
import { SHARED_ROUTE } from '../../lib/talk/talk-identities.ts';
import { withToolTables } from '../../lib/storage/tables/tool-tables.ts';
import { freshMention, ALLOWED_MODEL, APP_ID, APP_SECRET, GROUP, READ_TOOL, startWorld, WRITE_TOOL, type World } from '../bots/governance-world.ts';
import { DIALECTS } from '../helpers/databases.ts';

const TREE = {
  start: 'level',
  questions: [
    {
      id: 'level',
      text: 'Your level?',
      answers: [
        { id: 'a', text: 'Beginner', next: 'topic' },
        { id: 'b', text: 'Advanced', next: null },
      ],
    },
    { id: 'topic', text: 'Which topic?', answers: [{ id: 'free', text: 'Tell me', next: null, type: 'free_text' }] },
  ],
};

for (const dialect of DIALECTS) {
  describe(`bots API on ${dialect}`, () => {
    let w: World;
    before(async () => {
      w = await startWorld(dialect);
    });
    after(async () => w.close());

    async function counts() {
      const db = w.tdb.db;
      const n = async (q: Promise<unknown[]>) => (await q).length;
      return {
        bots: await n(db.selectFrom('bots').select('id').execute()),
        versions: await n(db.selectFrom('bot_versions').select('id').execute()),
        tools: await n(withToolTables(db).selectFrom('bot_tools').select('bot_id').execute()),
      };
    }

    async function expectFields(uid: string, method: 'post' | 'put', path: string, body: unknown, expected: Record<string, RegExp | string>) {
      const before = await counts();
      const res = await w.api(uid, method, path, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.text}`);
      assert.equal(res.body.error.code, 'validation');
      const fields = res.body.error.details.fields as Record<string, string>;
      for (const [field, message] of Object.entries(expected)) {
        assert.equal(typeof fields[field], 'string', `field ${field} in ${JSON.stringify(fields)}`);
        if (message instanceof RegExp) assert.match(fields[field] ?? '', message);
        else assert.equal(fields[field], message);
      }
      assert.deepEqual(await counts(), before, 'nothing is written');
      return fields;
    }

    it('creates, reads, lists and edits bots with answers in the documented shape', async () => {
      const mention = freshMention('Tutor');
      const created = await w.api('student', 'post', '/api/v1/bots', {
        displayName: '  Fraction Tutor ',
        mention: `@${mention.toUpperCase()}`,
        systemPrompt: 'Explain fractions.',
        model: ALLOWED_MODEL,
        temperature: 0.456,
        tools: [{ name: READ_TOOL }],
        onboardingQuestions: TREE,
        knowledgeEnabled: true,
      });
      assert.equal(created.status, 201, created.text);
      const bot = S.botAnswer.parse(created.body).bot;
      assert.equal(bot.mention, mention.toLowerCase());
      assert.equal(bot.displayName, 'Fraction Tutor');
      assert.equal(bot.temperature, 0.46);
      assert.equal(bot.approvalStatus, 'personal');
      assert.deepEqual(bot.tools, [{ name: READ_TOOL, config: {} }]);
      assert.deepEqual(bot.onboardingQuestions, TREE);
      assert.ok(w.changes > 0, 'routing is refreshed after a change');

      const list = S.botListAnswer.parse((await w.api('student', 'get', '/api/v1/bots')).body);
      assert.ok(list.bots.some((b) => b.id === bot.id));
      assert.ok(!S.botListAnswer.parse((await w.api('owner', 'get', '/api/v1/bots')).body).bots.some((b) => b.id === bot.id), 'only my bots');
      assert.equal((await w.api('owner', 'get', `/api/v1/bots/${bot.id}`)).status, 403);
      assert.equal((await w.api('student', 'get', '/api/v1/bots/not-a-uuid')).status, 404);

      const edited = await w.api('student', 'put', `/api/v1/bots/${bot.id}`, { temperature: null, tools: [], mention });
      assert.equal(edited.status, 200, edited.text);
      assert.equal(edited.body.bot.temperature, null, 'null inherits the admin default');
      assert.deepEqual(edited.body.bot.tools, []);
      assert.equal(edited.body.bot.systemPrompt, 'Explain fractions.', 'absent fields stay');

      const all = S.botListAnswer.parse((await w.api('admin', 'get', '/api/v1/admin/bots')).body);
      assert.ok(
        all.bots.some((b) => b.id === bot.id),
        'admins see every bot',
      );
      assert.equal((await w.api('student', 'get', '/api/v1/admin/bots')).status, 403);
      const adminEdit = await w.api('admin', 'put', `/api/v1/admin/bots/${bot.id}`, { description: 'Checked' });
      assert.equal(adminEdit.body.bot.description, 'Checked', 'admins edit every bot');
      S.botAnswer.parse((await w.api('admin', 'get', `/api/v1/admin/bots/${bot.id}`)).body);
    });

    it('answers invalid input with field-specific errors and writes nothing', async () => {
      const taken = freshMention('taken');
      assert.equal((await w.api('student', 'post', '/api/v1/bots', { displayName: 'First', mention: taken })).status, 201);
      await expectFields('owner', 'post', '/api/v1/bots', { displayName: 'Second', mention: `@${taken.toUpperCase()}` }, { mention: MENTION_TAKEN });
      await expectFields('owner', 'post', '/api/v1/bots', { displayName: 'Bad', mention: 'hello world!' }, { mention: /letters, digits/ });
      for (const reserved of ['all', '@ALL', 'here', 'everyone']) {
        await expectFields('owner', 'post', '/api/v1/bots', { displayName: 'Talk word', mention: reserved }, { mention: MENTION_RESERVED });
      }
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        { displayName: 'Model', mention: freshMention('m'), model: 'primary:not-on-the-list' },
        { model: /not allowed/ },
      );
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        { displayName: 'Hot', mention: freshMention('t'), temperature: 1.5 },
        { temperature: /between 0 and 1/ },
      );
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        { displayName: 'Cold', mention: freshMention('t'), temperature: -0.1 },
        { temperature: /between 0 and 1/ },
      );
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        {
          displayName: 'Tree',
          mention: freshMention('tree'),
          onboardingQuestions: { start: 'missing', questions: [{ id: 'q', text: 'Q?', answers: [{ id: 'a', text: 'A', next: 'nowhere' }] }] },
        },
        { onboardingQuestions: /start/, 'onboardingQuestions.start': /No question/, 'onboardingQuestions.questions.0.answers.0.next': /nowhere/ },
      );
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        { displayName: 'Tree', mention: freshMention('tree'), onboardingQuestions: 'not a tree' },
        { onboardingQuestions: /question tree/ },
      );
      // Every problem at once, each on its field; a write tool's config is checked against the provider too.
      const fields = await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        {
          displayName: '',
          mention: 'all',
          temperature: 7,
          model: 'primary:nope',
          visibility: 'groups',
          allowedGroups: [],
          guestsAllowed: true,
          tools: [{ name: READ_TOOL, config: { url: 'x' } }],
        },
        {
          displayName: /name/,
          mention: MENTION_RESERVED,
          temperature: /between/,
          model: /not allowed/,
          allowedGroups: /at least one group/,
          guestsAllowed: /everyone/,
          [`tools.${READ_TOOL}.config`]: /no configuration/,
        },
      );
      assert.ok(Object.keys(fields).length >= 7);
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        { displayName: 'Everyone', mention: freshMention('g'), visibility: 'global' },
        { visibility: /administrators/ },
      );
      await expectFields(
        'owner',
        'post',
        '/api/v1/bots',
        { displayName: 'Teams', mention: freshMention('g'), visibility: 'teams', allowedTeams: ['../../etc'] },
        { 'allowedTeams.0': /team id/ },
      );

      // Edits: the mention is fixed, and a failed edit changes nothing.
      const mine = await w.api('owner', 'post', '/api/v1/bots', { displayName: 'Mine', mention: freshMention('mine'), systemPrompt: 'Keep' });
      await expectFields('owner', 'put', `/api/v1/bots/${mine.body.bot.id}`, { mention: freshMention('other') }, { mention: /cannot be changed/ });
      await expectFields(
        'owner',
        'put',
        `/api/v1/bots/${mine.body.bot.id}`,
        { systemPrompt: 'Changed', temperature: 2, onboardingQuestions: { start: 'x', questions: [] } },
        { temperature: /between/, onboardingQuestions: /question/ },
      );
      const after = await w.api('owner', 'get', `/api/v1/bots/${mine.body.bot.id}`);
      assert.equal(after.body.bot.systemPrompt, 'Keep');
      assert.equal(after.body.bot.updatedAt, mine.body.bot.updatedAt);

      const noCsrf = await request(w.app)
        .post('/api/v1/bots')
        .set({ 'EX-APP-ID': APP_ID, 'EX-APP-VERSION': '1.0.0', 'AUTHORIZATION-APP-API': Buffer.from(`owner:${APP_SECRET}`).toString('base64') })
        .send({ displayName: 'X', mention: freshMention('x') });
      assert.equal(noCsrf.status, 403);
      assert.equal(noCsrf.body.error.code, 'csrf');
      const bad = await w.api('owner', 'post', '/api/v1/bots/00000000-0000-4000-8000-000000000000/submit', { reason: '' });
      assert.equal(bad.status, 404);
      const emptyReason = await w.api('owner', 'post', `/api/v1/bots/${mine.body.bot.id}/submit`, { reason: '   ' });
      assert.equal(emptyReason.status, 400);
      assert.match(emptyReason.body.error.details.fields.reason, /why/);
    });

    it('lists approvals, permissions, groups and teams per user', async () => {
      const draft = await w.api('owner', 'post', '/api/v1/bots', {
        displayName: 'For 7b',
        mention: freshMention('q'),
        visibility: 'groups',
        allowedGroups: [GROUP],
        tools: [{ name: WRITE_TOOL }],
      });
      await w.api('owner', 'post', `/api/v1/bots/${draft.body.bot.id}/submit`, { reason: 'Homework help', capabilities: 'Mails reminders' });
      const forSub = S.approvalsAnswer.parse((await w.api('subadmin', 'get', '/api/v1/approvals')).body);
      const item = forSub.bots.find((b) => b.id === draft.body.bot.id);
      assert.ok(item, 'the sub-admin of the group reviews it');
      assert.equal(item.isUpdate, false);
      assert.deepEqual(
        item.reviewTarget.tools.map((t) => t.name),
        [WRITE_TOOL],
      );
      assert.equal(item.questionnaire?.capabilities, 'Mails reminders');
      assert.ok(!S.approvalsAnswer.parse((await w.api('teammod', 'get', '/api/v1/approvals')).body).bots.some((b) => b.id === draft.body.bot.id));

      const perms = S.permissionsAnswer.parse((await w.api('subadmin', 'get', '/api/v1/permissions')).body);
      assert.deepEqual(perms.permissions, {
        isAdmin: false,
        isGroupAdmin: true,
        isTeamAdmin: false,
        hasApprovalRights: true,
        adminGroups: [GROUP],
        adminTeams: [],
      });
      assert.deepEqual(
        perms.visibilities.map((v) => [v.value, v.requiresApproval]),
        [
          ['personal', false],
          ['groups', false],
          ['teams', true],
        ],
      );
      const adminPerms = S.permissionsAnswer.parse((await w.api('admin', 'get', '/api/v1/permissions')).body);
      assert.deepEqual(
        adminPerms.visibilities.map((v) => v.value),
        ['personal', 'groups', 'teams', 'global'],
      );
      const modPerms = S.permissionsAnswer.parse((await w.api('teammod', 'get', '/api/v1/permissions')).body);
      assert.deepEqual(modPerms.permissions.adminTeams.map((t) => t.displayName).sort(), ['Mixed team', 'Team 7b']);

      const groups = S.groupsAnswer.parse((await w.api('student', 'get', '/api/v1/groups')).body);
      assert.deepEqual(groups.groups, [{ id: GROUP, displayName: GROUP, canPublish: false }]);
      const adminGroups = S.groupsAnswer.parse((await w.api('admin', 'get', '/api/v1/groups')).body);
      assert.deepEqual(
        adminGroups.groups.map((g) => [g.id, g.canPublish]),
        [
          ['admin', true],
          [GROUP, true],
        ],
      );
      const subGroups = S.groupsAnswer.parse((await w.api('subadmin', 'get', '/api/v1/groups')).body);
      assert.deepEqual(subGroups.groups, [{ id: GROUP, displayName: GROUP, canPublish: true }]);

      const teams = S.teamsAnswer.parse((await w.api('student', 'get', '/api/v1/teams')).body);
      assert.deepEqual(
        teams.teams.map((t) => [t.displayName, t.canPublish]),
        [
          ['Mixed team', false],
          ['Team 7b', false],
        ],
      );
      const modTeams = S.teamsAnswer.parse((await w.api('teammod', 'get', '/api/v1/teams')).body);
      assert.deepEqual(
        modTeams.teams.map((t) => [t.displayName, t.level, t.canPublish]),
        [
          ['Mixed team', 9, true],
          ['Team 7b', 4, true],
        ],
      );
      assert.ok(
        w.nc.calls.filter((c) => c.path.endsWith('/apps/circles/circles')).every((c) => c.user !== '' && c.user !== null),
        'teams are read as the user',
      );
    });

    it('shows the catalogue of usable bots with the reason for access, tools and knowledge', async () => {
      const personal = await w.api('student', 'post', '/api/v1/bots', { displayName: 'Mine', mention: freshMention('mine') });
      const group = await w.api('subadmin', 'post', '/api/v1/bots', {
        displayName: 'Class',
        mention: freshMention('class'),
        visibility: 'groups',
        allowedGroups: [GROUP],
        tools: [{ name: READ_TOOL }],
        knowledgeEnabled: true,
      });
      const team = await w.api('teammod', 'post', '/api/v1/bots', {
        displayName: 'Team',
        mention: freshMention('team'),
        visibility: 'teams',
        allowedTeams: [w.teamId],
      });
      const global = await w.api('admin', 'post', '/api/v1/bots', {
        displayName: 'All',
        mention: freshMention('all'),
        visibility: 'global',
        onboardingQuestions: TREE,
      });
      const hidden = await w.api('owner', 'post', '/api/v1/bots', { displayName: 'Hidden', mention: freshMention('hidden') });
      const catalog = S.catalogAnswer.parse((await w.api('student', 'get', '/api/v1/catalog')).body);
      const byId = new Map(catalog.bots.map((b) => [b.id, b]));
      assert.deepEqual(byId.get(personal.body.bot.id)?.access, { type: 'owner', names: [] });
      assert.deepEqual(byId.get(group.body.bot.id)?.access, { type: 'group', names: [GROUP] });
      assert.deepEqual(byId.get(team.body.bot.id)?.access, { type: 'team', names: ['Team 7b'] });
      assert.deepEqual(byId.get(global.body.bot.id)?.access, { type: 'global', names: [] });
      assert.equal(byId.has(hidden.body.bot.id), false);
      const g = byId.get(group.body.bot.id);
      assert.deepEqual([g?.toolCount, g?.tools, g?.knowledgeEnabled, g?.knowledgeSourceCount], [1, [READ_TOOL], true, 3]);
      assert.equal(byId.get(global.body.bot.id)?.hasOnboarding, true);
      const adminCatalog = S.catalogAnswer.parse((await w.api('admin', 'get', '/api/v1/catalog')).body);
      assert.equal(
        adminCatalog.bots.some((b) => b.id === group.body.bot.id),
        false,
        'admins are not members of the group',
      );
    });

    it('speaks in Talk: creates a room as the user, enables our bot and posts the first message with the mention', async () => {
      const bot = await w.api('admin', 'post', '/api/v1/bots', { displayName: 'Helper', mention: freshMention('helper'), visibility: 'global' });
      const res = await w.api('student', 'post', '/api/v1/talk/speak', { botId: bot.body.bot.id, message: 'What is 1/2 + 1/4?' });
      assert.equal(res.status, 200, res.text);
      const out = S.speakAnswer.parse(res.body);
      assert.deepEqual(
        { ...out, roomToken: 'x', messageId: 0 },
        {
          success: true,
          roomToken: 'x',
          talkUrl: `${w.nc.url}/index.php/call/${out.roomToken}`,
          botEnabled: true,
          botWasAlreadyEnabled: false,
          messageSent: true,
          messageId: 0,
        },
      );
      const room = w.nc.room(out.roomToken);
      assert.equal(room.name, 'Chat with Helper');
      assert.equal(room.participant('student')?.participantType, 1, 'the user owns the new room');
      assert.ok(room.enabledBots.has(w.nc.talk.botByRoute(SHARED_ROUTE)?.talkId ?? -1), 'our Talk bot is enabled');
      const posted = room.messages.find((m) => m.id === out.messageId);
      assert.equal(posted?.actorId, 'student', 'posted as the user');
      assert.equal(posted?.message, `@${bot.body.bot.mention} What is 1/2 + 1/4?`);
      const created = w.nc.calls.find((c) => c.method === 'POST' && c.path.endsWith('/apps/spreed/api/v4/room'));
      assert.equal(created?.user, 'student', 'the room is created as the user');

      // An existing room: only where the user moderates; a message that names the bot is left as it is.
      const again = await w.api('student', 'post', '/api/v1/talk/speak', {
        botId: bot.body.bot.id,
        mode: 'existing',
        roomToken: out.roomToken,
        message: `hi @${bot.body.bot.mention}`,
      });
      assert.equal(again.body.botWasAlreadyEnabled, true);
      assert.equal(room.messages.find((m) => m.id === again.body.messageId)?.message, `hi @${bot.body.bot.mention}`);
      w.nc.addParticipant(out.roomToken, { actorId: 'owner', participantType: 3 });
      const notMod = await w.api('owner', 'post', '/api/v1/talk/speak', { botId: bot.body.bot.id, mode: 'existing', roomToken: out.roomToken });
      assert.equal(notMod.status, 403);
      const notIn = await w.api('teammod', 'post', '/api/v1/talk/speak', { botId: bot.body.bot.id, mode: 'existing', roomToken: out.roomToken });
      assert.equal(notIn.status, 404);
      const noRoom = await w.api('student', 'post', '/api/v1/talk/speak', { botId: bot.body.bot.id, mode: 'existing' });
      assert.equal(noRoom.status, 400);
      assert.ok(noRoom.body.error.details.fields.roomToken);
      const quiet = await w.api('student', 'post', '/api/v1/talk/speak', { botId: bot.body.bot.id, roomName: 'Quiet', message: 'x', sendMessage: false });
      assert.deepEqual([quiet.body.messageSent, quiet.body.messageId, w.nc.room(quiet.body.roomToken).name], [false, null, 'Quiet']);

      const privateBot = await w.api('owner', 'post', '/api/v1/bots', { displayName: 'Private', mention: freshMention('private') });
      const refused = await w.api('student', 'post', '/api/v1/talk/speak', { botId: privateBot.body.bot.id });
      assert.equal(refused.status, 403);
    });

    it('lists rooms, tells the bot status and lets moderators enable the bot', async () => {
      const room = w.nc.createRoom({
        name: 'Maths',
        type: 2,
        participants: [
          { actorId: 'teamlead', participantType: 1 },
          { actorId: 'student', participantType: 3 },
        ],
      });
      const rooms = S.roomsAnswer.parse((await w.api('teamlead', 'get', '/api/v1/talk/rooms')).body);
      assert.deepEqual(
        rooms.rooms.find((r) => r.token === room.token),
        { token: room.token, displayName: 'Maths', type: 2, participantType: 1, isModerator: true, readOnly: false, lastActivity: room.createdAt },
      );

      const asStudent = S.botStatusAnswer.parse((await w.api('student', 'get', `/api/v1/talk/rooms/${room.token}/bot-status`)).body);
      assert.deepEqual([asStudent.isModerator, asStudent.botEnabled], [false, null], 'only moderators can tell');
      const before = S.botStatusAnswer.parse((await w.api('teamlead', 'get', `/api/v1/talk/rooms/${room.token}/bot-status`)).body);
      assert.deepEqual([before.isModerator, before.botEnabled], [true, false]);
      assert.equal((await w.api('student', 'post', `/api/v1/talk/rooms/${room.token}/enable-bot`, {})).status, 403);
      const enabled = S.enableBotAnswer.parse((await w.api('teamlead', 'post', `/api/v1/talk/rooms/${room.token}/enable-bot`, {})).body);
      assert.equal(enabled.alreadyEnabled, false);
      assert.equal(enabled.talkBotId, w.nc.talk.botByRoute(SHARED_ROUTE)?.talkId);
      assert.equal((await w.api('teamlead', 'post', `/api/v1/talk/rooms/${room.token}/enable-bot`, {})).body.alreadyEnabled, true);
      assert.equal((await w.api('teamlead', 'get', `/api/v1/talk/rooms/${room.token}/bot-status`)).body.botEnabled, true);
      assert.equal((await w.api('owner', 'get', `/api/v1/talk/rooms/${room.token}/bot-status`)).status, 404, 'not a participant');
      assert.equal((await w.api('owner', 'get', '/api/v1/talk/rooms/..%2F..%2Fcloud/bot-status')).status, 404);

      // A former one-to-one conversation (its other participant was deleted): Talk allows no bots there.
      const former = w.nc.createRoom({ name: 'Former', type: 5, participants: [{ actorId: 'teamlead', participantType: 1 }] });
      const refused = await w.api('teamlead', 'post', `/api/v1/talk/rooms/${former.token}/enable-bot`, {});
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, /former one-to-one/);
    });

    it('gives only approved global bots their own Talk bot, and removes it when that stops (S14)', async () => {
      const group = await w.api('subadmin', 'post', '/api/v1/bots', {
        displayName: 'Group',
        mention: freshMention('grp'),
        visibility: 'groups',
        allowedGroups: [GROUP],
      });
      const refused = await w.api('admin', 'post', `/api/v1/admin/bots/${group.body.bot.id}/talk-identity`, {});
      assert.equal(refused.status, 409);
      const global = await w.api('admin', 'post', '/api/v1/bots', { displayName: 'Librarian', mention: freshMention('lib'), visibility: 'global' });
      const id = global.body.bot.id as string;
      const long = await w.api('admin', 'post', `/api/v1/admin/bots/${id}/talk-identity`, { name: 'x'.repeat(65) });
      assert.equal(long.status, 400);
      assert.match(long.body.error.details.fields.name, /64/);
      assert.equal((await w.api('student', 'post', `/api/v1/admin/bots/${id}/talk-identity`, {})).status, 403);
      const made = await w.api('admin', 'post', `/api/v1/admin/bots/${id}/talk-identity`, { name: 'Librarian' });
      assert.deepEqual(made.body, { talkIdentity: { route: dedicatedRoute(id), name: 'Librarian' } });
      const talkBot = w.nc.talk.botByRoute(dedicatedRoute(id));
      assert.equal(talkBot?.name, 'Librarian');

      // Moderators can enable it in their rooms; the status lists it.
      const room = w.nc.createRoom({ name: 'Library', type: 2, participants: [{ actorId: 'student', participantType: 1 }] });
      const enabled = await w.api('student', 'post', `/api/v1/talk/rooms/${room.token}/enable-bot`, { botId: id });
      assert.equal(enabled.body.talkBotId, talkBot?.talkId);
      const status = S.botStatusAnswer.parse((await w.api('student', 'get', `/api/v1/talk/rooms/${room.token}/bot-status`)).body);
      assert.deepEqual(
        status.dedicated.find((d) => d.botId === id),
        { botId: id, name: 'Librarian', enabled: true },
      );

      // No longer for everyone → its Talk bot goes. (The owner's own edit would wait for review; another admin's applies.)
      const narrowed = await w.api('admin2', 'put', `/api/v1/admin/bots/${id}`, { visibility: 'groups', allowedGroups: [GROUP] });
      assert.equal(narrowed.body.bot.visibility, 'groups');
      assert.equal(narrowed.body.bot.talkIdentity, null);
      assert.equal(w.nc.talk.botByRoute(dedicatedRoute(id)), undefined);

      // Approval step: an admin approving a bot for everyone can give it its own Talk bot at once.
      const edit = await w.api('admin2', 'post', '/api/v1/bots', { displayName: 'Quiz', mention: freshMention('quiz'), visibility: 'global' });
      await w.api('admin2', 'put', `/api/v1/bots/${edit.body.bot.id}`, { systemPrompt: 'New' });
      const notAdmin = await w.api('subadmin', 'post', `/api/v1/bots/${edit.body.bot.id}/approve`, { dedicatedTalkBot: {} });
      assert.notEqual(notAdmin.status, 200);
      const approved = await w.api('admin', 'post', `/api/v1/bots/${edit.body.bot.id}/approve`, { dedicatedTalkBot: { name: 'Quiz master' } });
      assert.equal(approved.status, 200, approved.text);
      assert.deepEqual(approved.body.bot.talkIdentity, { route: dedicatedRoute(edit.body.bot.id), name: 'Quiz master' });
      const removed = await w.api('admin', 'delete', `/api/v1/admin/bots/${edit.body.bot.id}/talk-identity`);
      assert.deepEqual(removed.body, { talkIdentity: null });
      assert.equal(w.nc.talk.botByRoute(dedicatedRoute(edit.body.bot.id)), undefined);
    });

    it('documents every route it serves in the OpenAPI 3.1 document (the whole app is checked in openapi.test.ts)', async () => {
      const served = await w.api('student', 'get', '/api/v1/openapi.json');
      assert.equal(served.status, 200);
      assert.equal(served.body.openapi, '3.1.0');
      const documented = new Set(documentedRoutes(served.body));
      for (const route of servedRoutes(w.app)) assert.ok(documented.has(route), `${route} is documented`);
      assert.equal(documentedRoutes(served.body).length, apiRouteSpecs().length);
      for (const [path, ops] of Object.entries(
        served.body.paths as Record<string, Record<string, { responses: object; requestBody?: { content: Record<string, { schema: { $ref: string } }> } }>>,
      )) {
        for (const [method, op] of Object.entries(ops)) {
          assert.ok(op.responses['401' as keyof object], `${method} ${path} documents 401`);
          const ref = op.requestBody?.content['application/json']?.schema.$ref;
          if (ref) assert.ok(served.body.components.schemas[ref.split('/').at(-1) ?? ''], `${ref} exists`);
        }
      }
      assert.equal(served.body.components.schemas.BotCreate.properties.mention.pattern, '^@?[A-Za-z0-9_-]{1,100}$');
      assert.deepEqual(served.body.components.schemas.BotCreate.required.sort(), ['displayName', 'mention']);
      assert.equal(served.body.components.schemas.BotCreate.properties.temperature.anyOf[0].maximum, 1);

      const stored = readFileSync(storedOpenApiPath(), 'utf8');
      assert.equal(stored, serializeOpenApi(apiDocument(packageVersion())), 'docs/openapi.json is current (node lib/cli/write-openapi.ts)');
    });
  });
}
