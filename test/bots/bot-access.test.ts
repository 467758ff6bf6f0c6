import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DefaultBotAccessPolicy, GovernanceAccessPolicy, type ActorKind, type BotAccessReason } from '../../lib/bots/bot-access.ts';
import type { Bot } from '../../lib/bots/bot-store.ts';
import type { Memberships, MembershipService } from '../../lib/bots/memberships.ts';

function bot(overrides: Partial<Bot> = {}): Bot {
  return {
    id: 'b1',
    ownerUid: 'alice',
    displayName: 'Tutor',
    mention: 'tutor',
    description: '',
    systemPrompt: '',
    model: null,
    temperature: null,
    active: true,
    onboardingQuestions: null,
    visibility: 'personal',
    allowedGroups: [],
    allowedTeams: [],
    knowledgeEnabled: false,
    guestsAllowed: false,
    approvalStatus: 'personal',
    teamMembers: 'direct',
    approvedVersionId: null,
    pendingVersionId: null,
    submittedAt: null,
    approvedBy: null,
    approvedAt: null,
    rejectionReason: null,
    testerUid: null,
    questionnaire: null,
    createdAt: 0,
    updatedAt: 0,
    ...overrides,
  };
}

describe('DefaultBotAccessPolicy', () => {
  const policy = new DefaultBotAccessPolicy();

  it('decides every actor kind for active and inactive bots', async () => {
    const matrix: Array<[boolean, ActorKind, string, boolean, BotAccessReason]> = [
      [true, 'user', 'alice', true, 'owner'],
      [true, 'user', 'bob', true, 'user'],
      [true, 'guest', 'guests/abc', false, 'guest-not-allowed'],
      [true, 'email', 'emails/x', false, 'guest-not-allowed'],
      [true, 'federated', 'alice@other.example', false, 'guest-not-allowed'],
      [true, 'bot', 'bots/tutor', false, 'not-a-person'],
      [true, 'other', 'alice', false, 'not-a-person'],
      [true, 'user', '', false, 'not-a-person'],
      [false, 'user', 'alice', false, 'inactive'],
      [false, 'user', 'bob', false, 'inactive'],
      [false, 'guest', 'guests/abc', false, 'inactive'],
    ];
    for (const [active, kind, uid, allowed, reason] of matrix) {
      assert.deepEqual(await policy.canUse(bot({ active }), { kind, uid }), { allowed, reason }, `${active ? 'active' : 'inactive'} ${kind} ${uid}`);
    }
  });

  it('does not treat a non-user actor whose id equals the owner uid as the owner', async () => {
    for (const kind of ['guest', 'federated', 'bot', 'email', 'other'] as const) {
      assert.equal((await policy.canUse(bot(), { kind, uid: 'alice' })).allowed, false, kind);
    }
  });
});

const TEAM = 'T'.repeat(31);

function stubMemberships(byUid: Record<string, Partial<Memberships>>, calls: string[] = []): MembershipService {
  return {
    forUser: async (user: { uid: string }) => {
      calls.push(user.uid);
      const m = byUid[user.uid];
      if (!m) throw new Error('Nextcloud is down');
      return { uid: user.uid, isAdmin: false, groups: [], subAdminGroups: [], teams: [], ...m };
    },
  } as unknown as MembershipService;
}

describe('GovernanceAccessPolicy', () => {
  const published = (o: Partial<Bot>) => bot({ approvalStatus: 'approved', approvedVersionId: 1, ...o });

  it('serves drafts, personal bots and first submissions to their owner (and tester) only', async () => {
    const calls: string[] = [];
    const policy = new GovernanceAccessPolicy({ memberships: stubMemberships({ bob: { groups: ['g'] } }, calls) });
    const draft = bot({ visibility: 'groups', allowedGroups: ['g'], approvalStatus: 'draft' });
    assert.deepEqual(await policy.canUse(draft, { kind: 'user', uid: 'alice' }), { allowed: true, reason: 'owner', userTools: true });
    assert.deepEqual(await policy.canUse(draft, { kind: 'user', uid: 'bob' }), { allowed: false, reason: 'not-shared' });
    const submitted = bot({ visibility: 'groups', allowedGroups: ['g'], approvalStatus: 'pending', testerUid: 'rev' });
    assert.equal((await policy.canUse(submitted, { kind: 'user', uid: 'rev' })).reason, 'tester');
    assert.equal((await policy.canUse(submitted, { kind: 'user', uid: 'bob' })).allowed, false);
    assert.deepEqual(calls, [], 'no membership lookups for unpublished bots');
    assert.equal((await policy.canUse(published({ active: false, visibility: 'global' }), { kind: 'user', uid: 'bob' })).reason, 'inactive');
  });

  it('keeps serving the approved scope while an edit waits, and names the group or team that grants access', async () => {
    const policy = new GovernanceAccessPolicy({
      memberships: stubMemberships({
        bob: { groups: ['g', 'h'] },
        carol: { teams: [{ id: TEAM, displayName: 'Team', level: 1, direct: false }] },
        dave: { teams: [{ id: TEAM, displayName: 'Team', level: 1, direct: true }] },
      }),
    });
    const groups = published({ visibility: 'groups', allowedGroups: ['h', 'x'], approvalStatus: 'pending', pendingVersionId: 2 });
    assert.deepEqual(await policy.canUse(groups, { kind: 'user', uid: 'bob' }), { allowed: true, reason: 'group', names: ['h'], userTools: true });
    // A team published by its moderator serves direct members only (S9); after a group review, everyone in it.
    const direct = published({ visibility: 'teams', allowedTeams: [TEAM], teamMembers: 'direct' });
    assert.deepEqual(await policy.canUse(direct, { kind: 'user', uid: 'carol' }), { allowed: false, reason: 'no-access' });
    assert.deepEqual(await policy.canUse(direct, { kind: 'user', uid: 'dave' }), { allowed: true, reason: 'team', names: ['Team'], userTools: true });
    assert.equal((await policy.canUse({ ...direct, teamMembers: 'all' }, { kind: 'user', uid: 'carol' })).allowed, true);
  });

  it('refuses when Nextcloud cannot tell, and refuses bots and unknown actors', async () => {
    const policy = new GovernanceAccessPolicy({ memberships: stubMemberships({}) });
    const groups = published({ visibility: 'groups', allowedGroups: ['g'] });
    assert.deepEqual(await policy.canUse(groups, { kind: 'user', uid: 'zoe' }), { allowed: false, reason: 'check-failed' });
    for (const kind of ['bot', 'other'] as const)
      assert.equal((await policy.canUse(published({ visibility: 'global' }), { kind, uid: 'x' })).reason, 'not-a-person');
    assert.equal((await policy.canUse(published({ visibility: 'global' }), { kind: 'user', uid: '' })).reason, 'not-a-person');
  });
});
