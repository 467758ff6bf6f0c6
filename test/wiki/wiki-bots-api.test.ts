// Team bots saved through the bots API (governance) get what ToolAssignmentStore gives: one wiki
// tool expands to all four with one shared config, the location is checked and initialised.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WIKI_TOOL_NAMES } from '../../lib/wiki/wiki-config.ts';
import { fakeTeams } from '../fakes/nextcloud/teams-groups.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

const ROOT = 'Collectives/Math Team';
const MATH = { location: 'collective', collective: 'Math Team' };

for (const dialect of DIALECTS) {
  describe(`wiki tools of team bots saved through the bots API (${dialect})`, () => {
    let s: TalkScenario;
    let teamId: string;
    before(async () => {
      s = await startTalkScenario({ dialect });
      const teams = fakeTeams(s.h.nc);
      const team = teams.createTeam({ name: 'Math Team', owner: 'alice' });
      teams.addMember(team.id, { userId: 'bob', type: 'user', level: 1 });
      teamId = team.id;
      // Collectives 2.x: the wiki finds the Collective through the `_api` routes with a cookie session.
      s.h.nc.collectives.generation = 2;
      s.h.nc.collectives.createCollective('Math Team', { alice: 'RGDNVCK', bob: 'RGDNVCK' }, { circleId: teamId });
      s.h.nc.collectives.createCollective('Other', { alice: 'RGDNVCK' });
    });
    after(async () => s.close());

    const api = (method: string, path: string, body: unknown) => s.h.fetch(path, { method, headers: s.h.browserHeaders('alice'), body });

    it('creating a team bot with one wiki tool assigns all four with the shared config and initialises the Collective wiki', async () => {
      const created = await api('POST', '/api/v1/bots', {
        displayName: 'Math Bot',
        mention: 'mathbot',
        systemPrompt: 'Help with maths.',
        visibility: 'teams',
        allowedTeams: [teamId],
        tools: [{ name: 'wiki_search', config: MATH }],
      });
      assert.equal(created.status, 201, created.text);
      const id = created.json.bot.id as string;
      const stored = await s.h.application.toolAssignments.list(id);
      assert.deepEqual(
        stored.map((a) => a.name),
        [...WIKI_TOOL_NAMES],
      );
      assert.ok(
        stored.every((a) => JSON.stringify(a.config) === JSON.stringify(MATH)),
        JSON.stringify(stored),
      );
      for (const file of ['index.md', 'log.md', 'schema.md']) assert.ok(s.h.nc.dav.files.read('alice', `${ROOT}/${file}`), file);
      const root = await s.h.application.wiki.roots.get(id);
      assert.deepEqual([root?.location, root?.rootPath, root?.uid], ['collective', ROOT, 'alice']);
    });

    it('an edit with a Collective of another team, or outside a Collective, is refused with a field error and stores nothing', async () => {
      const created = await api('POST', '/api/v1/bots', {
        displayName: 'Algebra Bot',
        mention: 'algebrabot',
        systemPrompt: 'Algebra.',
        visibility: 'teams',
        allowedTeams: [teamId],
      });
      assert.equal(created.status, 201, created.text);
      const id = created.json.bot.id as string;

      const other = await api('PUT', `/api/v1/bots/${id}`, { tools: [{ name: 'wiki_read_page', config: { location: 'collective', collective: 'Other' } }] });
      assert.equal(other.status, 400, other.text);
      assert.match(other.json.error.details.fields.tools, /the Collective "Other" of your team is not available to you/);
      const personal = await api('PUT', `/api/v1/bots/${id}`, { tools: [{ name: 'wiki_write_page' }] });
      assert.equal(personal.status, 400, personal.text);
      assert.match(personal.json.error.details.fields.tools, /must be in a Collective/);
      assert.deepEqual(await s.h.application.toolAssignments.list(id), []);

      // The bot is live, so write tools wait for a review; the location is checked and initialised already.
      const good = await api('PUT', `/api/v1/bots/${id}`, { tools: [{ name: 'wiki_log_event', config: MATH }] });
      assert.equal(good.status, 200, good.text);
      assert.deepEqual(
        good.json.bot.pendingChanges.tools,
        WIKI_TOOL_NAMES.map((name) => ({ name, config: MATH })),
      );
      assert.equal((await s.h.application.wiki.roots.get(id))?.rootPath, ROOT);
    });
  });
}
