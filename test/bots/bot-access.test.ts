import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DefaultBotAccessPolicy, type ActorKind, type BotAccessReason } from '../../lib/bots/bot-access.ts';
import type { Bot } from '../../lib/bots/bot-store.ts';

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
