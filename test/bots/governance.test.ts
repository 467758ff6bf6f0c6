import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BotStore } from '../../lib/bots/bot-store.ts';
import { GovernanceError } from '../../lib/bots/governance.ts';
import { manageRight, publishRight, reviewRight, type Scope } from '../../lib/bots/governance-rights.ts';
import type { Memberships, TeamMember } from '../../lib/bots/memberships.ts';
import { ConversationMemory } from '../../lib/conversation/memory.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { MessageRouter } from '../../lib/router/message-router.ts';
import { OnboardingService } from '../../lib/router/onboarding.ts';
import type { ParsedMessage } from '../../lib/talk/message-parser.ts';
import { RoomInfo } from '../../lib/talk/room-info.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { freshMention, GROUP, READ_TOOL, startWorld, WRITE_TOOL, type World } from './governance-world.ts';

const T1 = 'A'.repeat(31);
const T2 = 'B'.repeat(31);

function member(o: Partial<Memberships> = {}): Memberships {
  return { uid: 'u', isAdmin: false, groups: [], subAdminGroups: [], teams: [], ...o };
}
const users = (...ids: string[]): TeamMember[] => ids.map((id) => ({ kind: 'user', id, level: 1 }));

describe('governance rules', () => {
  const groups = (...g: string[]): Scope => ({ visibility: 'groups', groups: g, teams: [] });
  const teams = (...t: string[]): Scope => ({ visibility: 'teams', groups: [], teams: t });
  const global: Scope = { visibility: 'global', groups: [], teams: [] };

  it('lets sub-admins publish only to groups they administer, all of them', () => {
    const sub = member({ subAdminGroups: ['a', 'b'] });
    assert.equal(publishRight(sub, groups('a', 'b'), new Map(), { writes: false }).allowed, true);
    assert.equal(publishRight(sub, groups('a', 'c'), new Map(), { writes: false }).allowed, false);
    assert.equal(publishRight(sub, global, new Map(), { writes: false }).allowed, false);
    assert.equal(publishRight(member({ isAdmin: true }), global, new Map(), { writes: true }).allowed, true, 'admins publish everything');
    assert.equal(publishRight(sub, groups('a'), new Map(), { writes: true }).allowed, false, 'write tools need a review');
  });

  it('lets team moderators publish only to teams they manage whose members are all direct users (S9)', () => {
    const mod = member({
      teams: [
        { id: T1, displayName: 'one', level: 4, direct: true },
        { id: T2, displayName: 'two', level: 1, direct: true },
      ],
    });
    const direct = new Map([[T1, users('x', 'y')]]);
    const right = publishRight(mod, teams(T1), direct, { writes: false });
    assert.deepEqual([right.allowed, right.teamMembers], [true, 'direct']);
    assert.equal(
      publishRight(
        mod,
        teams(T1, T2),
        new Map([
          [T1, users('x')],
          [T2, users('y')],
        ]),
        { writes: false },
      ).allowed,
      false,
      'all teams',
    );
    const withGroup = new Map<string, TeamMember[] | null>([[T1, [...users('x'), { kind: 'group', id: 'g', level: 1 }]]]);
    assert.match(publishRight(mod, teams(T1), withGroup, { writes: false }).reason, /group/);
    assert.equal(publishRight(mod, teams(T1), new Map([[T1, null]]), { writes: false }).allowed, false, 'an unreadable team is not direct-only');
  });

  it('lets a sub-admin of every group in a team approve it, but not a team with another team in it', () => {
    const sub = member({ subAdminGroups: ['g'] });
    const withGroup = new Map<string, TeamMember[] | null>([[T1, [...users('x'), { kind: 'group', id: 'g', level: 1 }]]]);
    const right = reviewRight(sub, teams(T1), withGroup, { writes: false, isOwner: false });
    assert.deepEqual([right.allowed, right.teamMembers], [true, 'all']);
    const nested = new Map<string, TeamMember[] | null>([
      [
        T1,
        [
          { kind: 'group', id: 'g', level: 1 },
          { kind: 'other', id: T2, level: 1 },
        ],
      ],
    ]);
    assert.equal(reviewRight(sub, teams(T1), nested, { writes: false, isOwner: false }).allowed, false);
    assert.equal(reviewRight(member({ isAdmin: true }), teams(T1), nested, { writes: false, isOwner: false }).allowed, true);
    assert.equal(
      reviewRight(sub, teams(T1), new Map([[T1, users('x')]]), { writes: false, isOwner: false }).allowed,
      false,
      'a direct-only team needs its moderator',
    );
    assert.equal(
      reviewRight(member({ isAdmin: true }), { visibility: 'personal', groups: [], teams: [] }, new Map(), { writes: false, isOwner: false }).allowed,
      false,
    );
    assert.equal(reviewRight(sub, groups('g'), new Map(), { writes: true, isOwner: true }).allowed, false, 'no self-review of write tools');
    assert.equal(reviewRight(sub, groups('g'), new Map(), { writes: true, isOwner: false }).allowed, true);
  });

  it('lets scope managers manage, nobody else', () => {
    assert.equal(manageRight(member({ subAdminGroups: ['g'] }), groups('g')), true);
    assert.equal(manageRight(member({ teams: [{ id: T1, displayName: '', level: 8, direct: true }] }), teams(T1)), true);
    assert.equal(manageRight(member({ teams: [{ id: T1, displayName: '', level: 1, direct: true }] }), teams(T1)), false);
    assert.equal(manageRight(member(), global), false);
    assert.equal(manageRight(member({ isAdmin: true }), { visibility: 'personal', groups: [], teams: [] }), true);
  });
});

for (const dialect of DIALECTS) {
  describe(`governance workflow on ${dialect}`, () => {
    let w: World;
    before(async () => {
      w = await startWorld(dialect);
    });
    after(async () => w.close());

    const user = (uid: string) => w.user(uid);

    it('keeps serving the approved version to others while the owner and the tester get the pending one (S10)', async () => {
      const created = await w.governance.create(user('subadmin'), {
        displayName: 'Tutor',
        mention: freshMention('tutor'),
        systemPrompt: 'Approved prompt',
        temperature: 0.2,
        visibility: 'groups',
        allowedGroups: [GROUP],
        tools: [{ name: READ_TOOL }],
      });
      assert.equal(created.approvalStatus, 'approved', 'a sub-admin publishes to their group');
      const approvedVersion = created.approvedVersionId;
      assert.ok(approvedVersion);

      const edited = await w.governance.update(user('subadmin'), created.id, {
        systemPrompt: 'Pending prompt',
        temperature: 0.7,
        tools: [],
        displayName: 'Tutor 2',
      });
      assert.equal(edited.approvalStatus, 'pending');
      assert.equal(edited.approvedVersionId, approvedVersion, 'the approved version stays');
      assert.ok(edited.pendingVersionId);
      assert.equal(edited.systemPrompt, 'Approved prompt', 'the stored bot still describes the approved version');

      const view = async (uid: string) => {
        const e = await w.resolver.effectiveBot(await w.governance.require(created.id), uid);
        return {
          prompt: e.systemPrompt,
          tools: e.tools.map((t) => t.name),
          temperature: e.temperature,
          name: e.displayName,
          pending: e.pending,
          review: e.reviewMode,
        };
      };
      const approvedView = { prompt: 'Approved prompt', tools: [READ_TOOL], temperature: 0.2, name: 'Tutor', pending: false, review: false };
      const pendingView = { prompt: 'Pending prompt', tools: [], temperature: 0.7, name: 'Tutor 2', pending: true, review: false };
      assert.deepEqual(await view('student'), approvedView);
      assert.deepEqual(await view('admin'), approvedView, 'a reviewer sees the approved version until they enable the test');
      assert.deepEqual(await view('subadmin'), pendingView, 'the owner talks to the pending version');
      assert.equal(
        (await w.access.canUse(await w.governance.require(created.id), { kind: 'user', uid: 'student' })).allowed,
        true,
        'the live scope keeps serving',
      );

      await w.governance.enableTest(user('admin'), created.id);
      assert.deepEqual(await view('admin'), { ...pendingView, review: true }, 'the tester gets the pending version, in review mode');
      assert.deepEqual(await view('student'), approvedView);
      const guest = await w.resolver.effectiveBot(await w.governance.require(created.id), { kind: 'guest', uid: 'guests/1' });
      assert.deepEqual(guest.tools, [], 'guests never get tools');

      // The snapshot is immutable: whatever happens to the stored row, others keep the approved configuration.
      await new BotStore(w.tdb.db).update(created.id, { systemPrompt: 'Tampered' });
      assert.deepEqual(await view('student'), approvedView);

      const approved = await w.governance.approve(user('admin'), created.id);
      assert.equal(approved.approvalStatus, 'approved');
      assert.equal(approved.testerUid, null);
      assert.equal(approved.pendingVersionId, null);
      assert.deepEqual(await view('student'), { ...pendingView, pending: false }, 'after approval everyone gets the new version');
      assert.deepEqual((await w.governance.liveConfig(approved)).tools, []);

      // A further edit is rejected: the approved version stays, the change is gone.
      const again = await w.governance.update(user('subadmin'), created.id, { systemPrompt: 'Third' });
      const rejected = await w.governance.reject(user('admin'), created.id, 'Too vague');
      assert.equal(rejected.approvalStatus, 'approved');
      assert.equal(rejected.rejectionReason, 'Too vague');
      assert.equal(rejected.pendingVersionId, null);
      const gone = await w.tdb.db
        .selectFrom('bot_versions')
        .select('id')
        .where('id', '=', again.pendingVersionId ?? -1)
        .execute();
      assert.equal(gone.length, 0, 'the rejected version is discarded');
      assert.equal((await view('subadmin')).prompt, 'Pending prompt', 'the owner is back on the approved version');
    });

    it('refuses to approve what changed after the reviewer looked at it', async () => {
      const made = await w.governance.create(user('owner'), {
        displayName: 'Race',
        mention: freshMention('race'),
        visibility: 'groups',
        allowedGroups: [GROUP],
      });
      await w.governance.submit(user('owner'), made.id, { reason: 'Class use' });
      const seen = await w.governance.require(made.id);
      await w.governance.update(user('owner'), made.id, { systemPrompt: 'Sneaky' });
      await assert.rejects(
        w.governance.approve(user('admin'), made.id, { revision: seen.updatedAt }),
        (e: unknown) => e instanceof GovernanceError && e.status === 409,
      );
      const fresh = await w.governance.require(made.id);
      assert.equal((await w.governance.approve(user('admin'), made.id, { revision: fresh.updatedAt })).approvalStatus, 'approved');
    });

    it('sends a team that contains a group to review by its sub-admin, and serves team members by how they joined (S9)', async () => {
      const mixed = await w.governance.create(user('teammod'), {
        displayName: 'Mixed',
        mention: freshMention('mixed'),
        visibility: 'teams',
        allowedTeams: [w.mixedTeamId],
      });
      assert.equal(mixed.approvalStatus, 'draft', 'the moderator of a team with a whole group in it cannot publish alone');
      await w.governance.submit(user('teammod'), mixed.id, { reason: 'For the team' });
      await assert.rejects(w.governance.approve(user('teammod'), mixed.id), (e: unknown) => e instanceof GovernanceError && e.status === 403);
      await assert.rejects(w.governance.approve(user('student'), mixed.id), (e: unknown) => e instanceof GovernanceError && e.status === 403);
      const approved = await w.governance.approve(user('subadmin'), mixed.id);
      assert.equal(approved.teamMembers, 'all');
      assert.equal((await w.access.canUse(approved, { kind: 'user', uid: 'student' })).allowed, true, 'members through the reviewed group');

      // Published by the moderator of a direct-only team: a group added later does not widen it.
      const direct = await w.governance.create(user('teammod'), {
        displayName: 'Direct',
        mention: freshMention('direct'),
        visibility: 'teams',
        allowedTeams: [w.teamId],
      });
      assert.equal(direct.approvalStatus, 'approved');
      assert.equal(direct.teamMembers, 'direct');
      const groupMember = w.teams.addMember(w.teamId, { userId: GROUP, type: 'group' });
      w.memberships.invalidate();
      try {
        assert.equal((await w.access.canUse(direct, { kind: 'user', uid: 'subadmin' })).allowed, false, 'only in the team through the group');
        assert.equal((await w.access.canUse(direct, { kind: 'user', uid: 'student' })).allowed, true, 'a direct member');
        const later = await w.governance.create(user('teammod'), {
          displayName: 'Later',
          mention: freshMention('later'),
          visibility: 'teams',
          allowedTeams: [w.teamId],
        });
        assert.equal(later.approvalStatus, 'draft', 'now the team needs a review');
      } finally {
        const team = w.teams.team(w.teamId);
        team.members.splice(team.members.indexOf(groupMember), 1);
        w.memberships.invalidate();
      }
    });

    it('never publishes bots with tools that change data without a review by someone else', async () => {
      const mod = await w.governance.create(user('teammod'), {
        displayName: 'Mailer',
        mention: freshMention('mail'),
        visibility: 'teams',
        allowedTeams: [w.teamId],
        tools: [{ name: WRITE_TOOL }],
      });
      assert.equal(mod.approvalStatus, 'draft');
      const sub = await w.governance.create(user('subadmin'), {
        displayName: 'Mailer',
        mention: freshMention('mail'),
        visibility: 'groups',
        allowedGroups: [GROUP],
        tools: [{ name: READ_TOOL }, { name: WRITE_TOOL }],
      });
      assert.equal(sub.approvalStatus, 'draft');
      await w.governance.submit(user('subadmin'), sub.id, { reason: 'Mail the class' });
      await assert.rejects(w.governance.approve(user('subadmin'), sub.id), /someone else/);
      assert.equal((await w.governance.approve(user('admin'), sub.id)).approvalStatus, 'approved');
      // Adding a write tool to a published bot goes to review as well.
      const read = await w.governance.create(user('subadmin'), {
        displayName: 'Reader',
        mention: freshMention('read'),
        visibility: 'groups',
        allowedGroups: [GROUP],
        tools: [{ name: READ_TOOL }],
      });
      assert.equal(read.approvalStatus, 'approved');
      const widened = await w.governance.update(user('admin'), read.id, { tools: [{ name: WRITE_TOOL }] });
      assert.equal(widened.approvalStatus, 'approved', 'an administrator\u2019s edit is the review');
      const admin = await w.governance.create(user('admin'), {
        displayName: 'Ops',
        mention: freshMention('ops'),
        visibility: 'global',
        tools: [{ name: WRITE_TOOL }],
      });
      assert.equal(admin.approvalStatus, 'approved');
    });

    it('turns a shared bot back into a personal one directly, and questionnaire answers are kept for reviewers', async () => {
      const made = await w.governance.create(user('owner'), { displayName: 'Q', mention: freshMention('q'), visibility: 'groups', allowedGroups: [GROUP] });
      const submitted = await w.governance.submit(user('owner'), made.id, {
        reason: 'Because',
        capabilities: 'Explains fractions',
        knowledgeDescription: 'None',
        testingNotes: 'Ask about 1/2',
      });
      assert.deepEqual(submitted.questionnaire, {
        reason: 'Because',
        capabilities: 'Explains fractions',
        knowledgeDescription: 'None',
        testingNotes: 'Ask about 1/2',
      });
      assert.ok(submitted.submittedAt);
      const queue = await w.governance.pendingFor(user('subadmin'));
      assert.ok(queue.some((v) => v.bot.id === made.id && !v.isUpdate));
      assert.ok(!(await w.governance.pendingFor(user('student'))).some((v) => v.bot.id === made.id));
      await assert.rejects(w.governance.submit(user('student'), made.id, { reason: 'x' }), (e: unknown) => e instanceof GovernanceError && e.status === 403);
      const personal = await w.governance.update(user('owner'), made.id, { visibility: 'personal' });
      assert.equal(personal.approvalStatus, 'personal');
      assert.equal(personal.questionnaire, null);
    });

    it('switches a published bot off and on, or saves it unchanged, without a review', async () => {
      const made = await w.governance.create(user('subadmin'), {
        displayName: 'Switch',
        mention: freshMention('sw'),
        visibility: 'groups',
        allowedGroups: [GROUP],
        tools: [{ name: READ_TOOL }],
      });
      const off = await w.governance.update(user('subadmin'), made.id, { active: false });
      assert.deepEqual([off.active, off.approvalStatus, off.pendingVersionId], [false, 'approved', null]);
      assert.equal((await w.access.canUse(off, { kind: 'user', uid: 'student' })).reason, 'inactive');
      const same = await w.governance.update(user('subadmin'), made.id, { active: true, systemPrompt: made.systemPrompt, tools: [{ name: READ_TOOL }] });
      assert.deepEqual([same.active, same.approvalStatus, same.pendingVersionId, same.approvedVersionId], [true, 'approved', null, made.approvedVersionId]);
    });

    it('politely refuses a Talk message to a bot the author may not use, without running the model', async () => {
      const draft = await w.governance.create(user('owner'), {
        displayName: 'Draft',
        mention: freshMention('draft'),
        visibility: 'groups',
        allowedGroups: [GROUP],
      });
      const router = new MessageRouter({
        bots: new BotStore(w.tdb.db),
        access: w.access,
        onboarding: new OnboardingService(w.tdb.db),
        memory: new ConversationMemory(w.tdb.db),
        rooms: new RoomInfo(w.nextcloud),
      });
      const message = (uid: string, kind: 'user' | 'guest' = 'user'): ParsedMessage => ({
        messageId: '42',
        roomToken: 'room1234',
        actor: { kind, id: uid, rawId: `${kind === 'user' ? 'users' : 'guests'}/${uid}`, displayName: uid },
        rawText: `@${draft.mention} hello`,
        text: `@${draft.mention} hello`,
        parameters: {},
        attachments: [],
        replyToId: null,
        threadId: null,
        referenceId: null,
        edited: false,
        kind: 'chat',
        systemName: null,
      });
      const refused = await router.route({ message: message('student'), author: issueFromConfirmedTalkAuthor('student') });
      assert.equal(refused.kind, 'reply');
      assert.match(refused.kind === 'reply' ? refused.text : '', /don't have access to @/);
      const guest = await router.route({ message: message('abc', 'guest'), author: null });
      assert.match(guest.kind === 'reply' ? guest.text : '', /not available to guests/);
      const owner = await router.route({ message: message('owner'), author: issueFromConfirmedTalkAuthor('owner') });
      assert.notEqual(owner.kind === 'reply' ? owner.text : '', refused.kind === 'reply' ? refused.text : '', 'the owner starts onboarding instead');
    });
  });
}
