import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BotActor } from '../../lib/bots/bot-access.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { freshMention, GROUP, startWorld, type World } from './governance-world.ts';

type Actor = 'admin' | 'subadmin' | 'teammod' | 'plain' | 'guest';
type Scope = 'personal' | 'groups' | 'teams' | 'global';
const ACTORS: Actor[] = ['admin', 'subadmin', 'teammod', 'plain', 'guest'];
const SCOPES: Scope[] = ['personal', 'groups', 'teams', 'global'];

/** The Nextcloud uid behind each row ('' = a guest, who has no Nextcloud account: AppAPI sends no user). */
const UID: Record<Actor, string> = { admin: 'admin', subadmin: 'subadmin', teammod: 'teammod', plain: 'student', guest: '' };

type Row = Record<Scope, string>;
type Table = Record<Actor, Row>;

// create / publish: the bot's state afterwards, or the refusal.
const CREATE: Table = {
  admin: { personal: 'personal', groups: 'approved', teams: 'approved', global: 'approved' },
  subadmin: { personal: 'personal', groups: 'approved', teams: 'draft', global: '400 visibility' },
  teammod: { personal: 'personal', groups: 'draft', teams: 'approved', global: '400 visibility' },
  plain: { personal: 'personal', groups: 'draft', teams: 'draft', global: '400 visibility' },
  guest: { personal: '401', groups: '401', teams: '401', global: '401' },
};
// submit own bot of that scope.
const SUBMIT: Table = {
  admin: { personal: '409', groups: '409', teams: '409', global: '409' },
  subadmin: { personal: '409', groups: '409', teams: 'pending', global: 'no such bot' },
  teammod: { personal: '409', groups: 'pending', teams: '409', global: 'no such bot' },
  plain: { personal: '409', groups: 'pending', teams: 'pending', global: 'no such bot' },
  guest: { personal: '401', groups: '401', teams: '401', global: '401' },
};
// approve / reject someone else's submission whose target is that scope.
const REVIEW: Table = {
  admin: { personal: '409', groups: '200', teams: '200', global: '200' },
  subadmin: { personal: '409', groups: '200', teams: '403', global: '403' },
  teammod: { personal: '409', groups: '403', teams: '200', global: '403' },
  plain: { personal: '409', groups: '403', teams: '403', global: '403' },
  guest: { personal: '401', groups: '401', teams: '401', global: '401' },
};
// use someone else's published bot in Talk.
const USE: Table = {
  admin: { personal: 'refused', groups: 'refused', teams: 'refused', global: 'allowed' },
  subadmin: { personal: 'refused', groups: 'allowed', teams: 'refused', global: 'allowed' },
  teammod: { personal: 'refused', groups: 'refused', teams: 'allowed', global: 'allowed' },
  plain: { personal: 'refused', groups: 'allowed', teams: 'allowed', global: 'allowed' },
  guest: { personal: 'refused', groups: 'refused', teams: 'refused', global: 'refused' },
};
// delete someone else's bot.
const DELETE: Table = {
  admin: { personal: '200', groups: '200', teams: '200', global: '200' },
  subadmin: { personal: '403', groups: '200', teams: '403', global: '403' },
  teammod: { personal: '403', groups: '403', teams: '200', global: '403' },
  plain: { personal: '403', groups: '403', teams: '403', global: '403' },
  guest: { personal: '401', groups: '401', teams: '401', global: '401' },
};

for (const dialect of DIALECTS) {
  describe(`permission matrix on ${dialect}`, () => {
    let w: World;
    before(async () => {
      w = await startWorld(dialect);
    });
    after(async () => w.close());

    const scopeBody = (scope: Scope) =>
      scope === 'groups'
        ? { visibility: 'groups', allowedGroups: [GROUP] }
        : scope === 'teams'
          ? { visibility: 'teams', allowedTeams: [w.teamId] }
          : { visibility: scope };

    async function create(uid: string, scope: Scope, extra: object = {}): Promise<{ status: number; body: any; text: string }> {
      return w.api(uid, 'post', '/api/v1/bots', { displayName: 'Matrix bot', mention: freshMention('m'), systemPrompt: 'P', ...scopeBody(scope), ...extra });
    }

    /** A bot of `scope` owned by someone else than the actors, in `state`. */
    async function othersBot(scope: Scope, state: 'pending' | 'published'): Promise<string> {
      if (scope === 'global') {
        const made = await create('admin2', 'global');
        assert.equal(made.status, 201, made.text);
        if (state === 'published') return made.body.bot.id;
        // An owner's edit of an approved bot waits for review.
        const edited = await w.api('admin2', 'put', `/api/v1/bots/${made.body.bot.id}`, { systemPrompt: 'Changed' });
        assert.equal(edited.body.bot.approvalStatus, 'pending');
        return made.body.bot.id;
      }
      const made = await create('owner', scope);
      assert.equal(made.status, 201, made.text);
      const id: string = made.body.bot.id;
      if (scope === 'personal') return id;
      assert.equal(made.body.bot.approvalStatus, 'draft');
      const submitted = await w.api('owner', 'post', `/api/v1/bots/${id}/submit`, { reason: 'For my class' });
      assert.equal(submitted.body.bot.approvalStatus, 'pending', submitted.text);
      if (state === 'published') {
        const approved = await w.api('admin', 'post', `/api/v1/bots/${id}/approve`, {});
        assert.equal(approved.body.bot.approvalStatus, 'approved', approved.text);
      }
      return id;
    }

    const outcome = (res: { status: number; body: any }) =>
      res.status === 201 || res.status === 200
        ? String(res.body.bot?.approvalStatus ?? res.status)
        : res.status === 400
          ? `400 ${Object.keys(res.body.error.details.fields).join(',')}`
          : String(res.status);

    it('create: who may create which scope, and whether it is published directly', async () => {
      for (const actor of ACTORS)
        for (const scope of SCOPES) {
          assert.equal(outcome(await create(UID[actor], scope)), CREATE[actor][scope], `create ${actor} × ${scope}`);
        }
    });

    it('publish: turning an own personal bot into a shared one publishes it or leaves a draft', async () => {
      for (const actor of ACTORS)
        for (const scope of SCOPES) {
          // Guests cannot own a bot; their attempt goes to another's bot and AppAPI gives no user.
          const own = actor === 'guest' ? await create('owner', 'personal') : await create(UID[actor], 'personal');
          assert.equal(own.status, 201);
          const res = await w.api(UID[actor], 'put', `/api/v1/bots/${own.body.bot.id}`, scopeBody(scope));
          assert.equal(outcome(res), CREATE[actor][scope], `publish ${actor} × ${scope}`);
        }
    });

    it('submit: only drafts go to review', async () => {
      for (const actor of ACTORS)
        for (const scope of SCOPES) {
          let cell: string;
          if (actor === 'guest') {
            const other = await othersBot(scope === 'global' ? 'personal' : scope, 'published');
            cell = String((await w.api('', 'post', `/api/v1/bots/${other}/submit`, { reason: 'x' })).status);
          } else {
            const made = await create(UID[actor], scope);
            if (made.status !== 201) cell = 'no such bot';
            else {
              const res = await w.api(UID[actor], 'post', `/api/v1/bots/${made.body.bot.id}/submit`, {
                reason: 'Please',
                capabilities: 'Answers',
                testingNotes: 'Ask it',
              });
              cell = res.status === 200 ? res.body.bot.approvalStatus : String(res.status);
            }
          }
          assert.equal(cell, SUBMIT[actor][scope], `submit ${actor} × ${scope}`);
        }
    });

    for (const action of ['approve', 'reject'] as const) {
      it(`${action}: the reviewer must hold the submission's target scope`, async () => {
        for (const actor of ACTORS)
          for (const scope of SCOPES) {
            const id = await othersBot(scope, 'pending');
            const res = await w.api(UID[actor], 'post', `/api/v1/bots/${id}/${action}`, action === 'reject' ? { reason: 'Not yet' } : {});
            assert.equal(String(res.status), REVIEW[actor][scope], `${action} ${actor} × ${scope}: ${res.text}`);
            const after = await w.governance.require(id);
            if (res.status === 200) {
              if (action === 'approve') assert.equal(after.approvalStatus, 'approved');
              else assert.equal(after.rejectionReason, 'Not yet');
            } else if (scope !== 'personal') {
              assert.equal(after.approvalStatus, 'pending', 'a refused review changes nothing');
            }
          }
      });
    }

    it('use in Talk: access is decided per message author', async () => {
      const bots: Record<Scope, string> = {
        personal: await othersBot('personal', 'published'),
        groups: await othersBot('groups', 'published'),
        teams: await othersBot('teams', 'published'),
        global: await othersBot('global', 'published'),
      };
      for (const actor of ACTORS)
        for (const scope of SCOPES) {
          const bot = await w.governance.require(bots[scope]);
          const who: BotActor = actor === 'guest' ? { kind: 'guest', uid: 'guests/5f0c' } : { kind: 'user', uid: UID[actor] };
          const decision = await w.access.canUse(bot, who);
          assert.equal(decision.allowed ? 'allowed' : 'refused', USE[actor][scope], `use ${actor} × ${scope} (${decision.reason})`);
        }
      // A guest only gets a global bot whose "guests allowed" switch is on, and then without user tools (S4).
      const open = await w.api('admin', 'post', '/api/v1/bots', {
        displayName: 'Open',
        mention: freshMention('open'),
        visibility: 'global',
        guestsAllowed: true,
      });
      const guestUse = await w.access.canUse(await w.governance.require(open.body.bot.id), { kind: 'guest', uid: 'guests/5f0c' });
      assert.deepEqual(guestUse, { allowed: true, reason: 'global', userTools: false });
      for (const kind of ['federated', 'email'] as const) {
        assert.equal((await w.access.canUse(await w.governance.require(open.body.bot.id), { kind, uid: 'x' })).allowed, true, kind);
        assert.equal((await w.access.canUse(await w.governance.require(bots.global), { kind, uid: 'x' })).allowed, false, kind);
      }
    });

    it('delete: the owner, an admin, or whoever manages the scope', async () => {
      for (const actor of ACTORS)
        for (const scope of SCOPES) {
          const id = await othersBot(scope, 'published');
          const res = await w.api(UID[actor], 'delete', `/api/v1/bots/${id}`);
          assert.equal(String(res.status), DELETE[actor][scope], `delete ${actor} × ${scope}: ${res.text}`);
          assert.equal((await w.governance.get(id)) === null, res.status === 200, 'deleted exactly when allowed');
        }
      const mine = await create('student', 'groups');
      assert.equal((await w.api('student', 'delete', `/api/v1/bots/${mine.body.bot.id}`)).status, 200, 'owners delete their own bots');
    });
  });
}
