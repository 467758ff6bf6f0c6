import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ToolAssignmentError } from '../../lib/tools/tool-assignments.ts';
import { fakeTeams } from '../fakes/nextcloud/teams-groups.ts';
import { personalBot, startWikiWorld, type WikiWorld } from './wiki-world.ts';

const ROOT = 'Collectives/Math Team';

describe('team bot wiki in a Collective, as the member talking', () => {
  let w: WikiWorld;
  before(async () => {
    w = await startWikiWorld('sqlite');
    const teams = fakeTeams(w.nc);
    const team = teams.createTeam({ name: 'Math Team', owner: 'alice' });
    teams.addMember(team.id, { userId: 'bob', type: 'user', level: 1 });
    teams.addMember(team.id, { userId: 'carol', type: 'user', level: 1 });
    // Collectives (3.x here) creates the team of the same name; carol may only read the Collective.
    w.nc.collectives.generation = 3;
    w.nc.collectives.createCollective(
      'Math Team',
      { alice: 'RGDNVCK', bob: 'RGDNVCK', carol: 'RG' },
      { landing: '# Math Team\n\nWelcome.\n', circleId: team.id },
    );
    w.bots.set('bot-team', personalBot({ id: 'bot-team', mention: 'mathbot', displayName: 'Math Bot', visibility: 'teams', allowedTeams: [team.id] }));
  });
  after(async () => w.close());

  it('refuses a team bot wiki outside a Collective, and a Collective of another team', async () => {
    await assert.rejects(
      w.assignments.replace('bot-team', [{ name: 'wiki_search', config: {} }]),
      (err: Error) => err instanceof ToolAssignmentError && /must be in a Collective/.test(err.message),
    );
    // alice is in the bot's team, but "Other" belongs to another team.
    w.nc.collectives.createCollective('Other', { alice: 'RGDNVCK' });
    await assert.rejects(
      w.assignments.replace('bot-team', [{ name: 'wiki_search', config: { location: 'collective', collective: 'Other' } }]),
      /the Collective "Other" of your team is not available to you/,
    );
    assert.deepEqual(await w.assignments.list('bot-team'), []);
  });

  it('initialises the Collective wiki when the owner saves it', async () => {
    const saved = await w.assignments.replace('bot-team', [{ name: 'wiki_write_page', config: { location: 'collective', collective: 'Math Team' } }]);
    assert.equal(saved.length, 4);
    assert.ok(w.nc.dav.files.read('alice', `${ROOT}/index.md`));
    const root = await w.wiki.roots.get('bot-team');
    assert.deepEqual([root?.location, root?.rootPath, root?.uid], ['collective', ROOT, 'alice']);
  });

  it('bob reaches the Collective as bob: every call is made as bob, none as the owner', async () => {
    const mark = w.nc.calls.length;
    const wrote = await w.run('wiki_write_page', { path: 'algebra.md', content: '# Algebra\n\nSolve for x.\n' }, 'bob', 'bot-team');
    assert.equal(wrote.result.isError, false, JSON.stringify(wrote.json));
    const found = await w.run('wiki_search', { query: 'algebra' }, 'bob', 'bot-team');
    assert.equal(found.json.results[0].path, 'algebra.md');
    const read = await w.run('wiki_read_page', { path: 'algebra.md' }, 'bob', 'bot-team');
    assert.match(read.json.content, /Solve for x/);
    const calls = w.callsSince(mark);
    assert.ok(calls.length > 0);
    assert.deepEqual([...new Set(calls.map((c) => c.user))], ['bob']);
    // The Collective is one folder: alice sees bob's page and the index lists it.
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/algebra.md`), '# Algebra\n\nSolve for x.\n');
    assert.match(w.nc.dav.files.read('alice', `${ROOT}/index.md`)!, /- \[Algebra\]\(algebra\.md\)/);
    assert.match(w.nc.dav.files.read('alice', `${ROOT}/index.md`)!, /- \[Math Team\]\(Readme\.md\)/);
  });

  it('refuses members who cannot edit the Collective, and people outside the team, without calls as the owner', async () => {
    for (const uid of ['carol', 'admin']) {
      const mark = w.nc.calls.length;
      for (const tool of ['wiki_search', 'wiki_write_page']) {
        const r = await w.run(tool, { query: 'algebra', path: 'x.md', content: 'x' }, uid, 'bot-team');
        assert.equal(r.result.isError, true);
        assert.match(r.json.error, /^wiki tools are unavailable to you/);
      }
      const calls = w.callsSince(mark);
      assert.ok(
        calls.every((c) => c.user === uid),
        `${uid}: ${calls.map((c) => c.user).join(',')}`,
      );
      assert.ok(!calls.some((c) => c.method === 'PUT' || c.method === 'MKCOL'));
    }
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/x.md`), null);
  });

  it('refuses a folder that only looks like the Collective (a share mounted where the Collective should be)', async () => {
    const teams = fakeTeams(w.nc);
    const team = teams.createTeam({ name: 'Fake Team', owner: 'alice' });
    teams.addMember(team.id, { userId: 'bob', type: 'user', level: 1 });
    // Collectives says bob's folder is `Collectives/Fake Team`, but what bob has there is carol's share.
    w.nc.collectives.createCollective('Fake Team', { alice: 'RGDNVCK', bob: 'RGDNVCK' }, { circleId: team.id });
    w.nc.dav.files.receiveShare('bob', 'Collectives/Fake Team', 'carol');
    w.bots.set('bot-fake', personalBot({ id: 'bot-fake', visibility: 'teams', allowedTeams: [team.id] }));
    // The config is passed as if stored earlier.
    const mark = w.nc.calls.length;
    const r = await w.wiki.provider.executeTool(
      'wiki_write_page',
      { path: 'x.md', content: 'x' },
      { location: 'collective', collective: 'Fake Team' },
      w.ctx('bob', 'bot-fake'),
    );
    assert.equal(r.isError, true);
    assert.match((r.content[0] as { text: string }).text, /unavailable to you: .*not a Collective's folder/);
    assert.ok(!w.callsSince(mark).some((c) => c.method === 'PUT' || c.method === 'MKCOL'));
  });
});

// Upstream the Collectives folder is each member's own setting, translated by default
// (UserFolderHelper: "Kollektive" for German users), and a Collective's name is its team's
// sanitized name, so another team's Collective can carry the name a bot is configured with.
/** A team owned by alice with one more member, its Collective (both may edit) and a team bot of it. */
function teamBotWithCollective(w: WikiWorld, o: { team: string; member: string; bot: string; mention: string }): void {
  const teams = fakeTeams(w.nc);
  const team = teams.createTeam({ name: o.team, owner: 'alice' });
  teams.addMember(team.id, { userId: o.member, type: 'user', level: 1 });
  w.nc.collectives.createCollective(o.team, { alice: 'RGDNVCK', [o.member]: 'RGDNVCK' }, { circleId: team.id });
  w.bots.set(o.bot, personalBot({ id: o.bot, mention: o.mention, displayName: `${o.team} Bot`, visibility: 'teams', allowedTeams: [team.id] }));
}

describe('team bot wiki where the Collectives folder differs per member, found by team id', () => {
  let w: WikiWorld;
  before(async () => {
    w = await startWikiWorld('sqlite');
    // Collectives 2.x: the wiki asks the `_api` routes through a cookie session, as the member.
    w.nc.collectives.generation = 2;
    w.nc.collectives.setUserFolder('bob', 'Kollektive');
    teamBotWithCollective(w, { team: 'Math Team', member: 'bob', bot: 'bot-team', mention: 'mathbot' });
  });
  after(async () => w.close());

  it('a German member uses the team wiki in Kollektive/Math Team, and the sync keeps working there', async () => {
    await w.assignments.replace('bot-team', [{ name: 'wiki_write_page', config: { location: 'collective', collective: 'Math Team' } }]);
    assert.ok(w.nc.dav.files.read('alice', `${ROOT}/index.md`));
    assert.equal(w.nc.dav.files.node('bob', 'Collectives'), null);

    const mark = w.nc.calls.length;
    const wrote = await w.run('wiki_write_page', { path: 'algebra.md', content: '# Algebra\n\nSolve for x.\n' }, 'bob', 'bot-team');
    assert.equal(wrote.result.isError, false, JSON.stringify(wrote.json));
    assert.deepEqual([...new Set(w.callsSince(mark).map((c) => c.user))], ['bob']);
    assert.equal(w.nc.dav.files.read('bob', 'Kollektive/Math Team/algebra.md'), '# Algebra\n\nSolve for x.\n');
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/algebra.md`), '# Algebra\n\nSolve for x.\n');
    const read = await w.run('wiki_read_page', { path: 'algebra.md' }, 'bob', 'bot-team');
    assert.match(read.json.content, /Solve for x/);

    // The root is registered as bob sees it; a manual edit is picked up by the sync through that path.
    const root = await w.wiki.roots.get('bot-team');
    assert.deepEqual([root?.rootPath, root?.uid], ['Kollektive/Math Team', 'bob']);
    w.nc.dav.files.putFile('alice', `${ROOT}/geometry.md`, '# Geometry\n\nAngles.\n', 'text/markdown');
    await w.wiki.syncRoot('bot-team');
    assert.match(w.nc.dav.files.read('bob', 'Kollektive/Math Team/index.md')!, /- \[Geometry\]\(geometry\.md\)/);
  });

  it('a Collective of the configured name that belongs to another team is not used', async () => {
    const teams = fakeTeams(w.nc);
    // "Physics?" came first: its Collective got the sanitized name "Physics"; the team "Physics" then got "Physics (2)".
    const other = teams.createTeam({ name: 'Physics?', owner: 'carol' });
    teams.addMember(other.id, { userId: 'alice', type: 'user', level: 1 });
    teams.addMember(other.id, { userId: 'bob', type: 'user', level: 1 });
    w.nc.collectives.createCollective('Physics', { carol: 'RGDNVCK', alice: 'RGDNVCK', bob: 'RGDNVCK' }, { circleId: other.id });
    const physics = teams.createTeam({ name: 'Physics', owner: 'alice' });
    teams.addMember(physics.id, { userId: 'bob', type: 'user', level: 1 });
    w.nc.collectives.createCollective('Physics (2)', { alice: 'RGDNVCK', bob: 'RGDNVCK' }, { circleId: physics.id });
    w.bots.set(
      'bot-physics',
      personalBot({ id: 'bot-physics', mention: 'physbot', displayName: 'Physics Bot', visibility: 'teams', allowedTeams: [physics.id] }),
    );

    const named = { location: 'collective', collective: 'Physics' };
    await assert.rejects(
      w.assignments.replace('bot-physics', [{ name: 'wiki_search', config: named }]),
      /the Collective "Physics" of your team is not available to you/,
    );
    const r = await w.wiki.provider.executeTool('wiki_write_page', { path: 'x.md', content: 'x' }, named, w.ctx('bob', 'bot-physics'));
    assert.equal(r.isError, true);
    assert.match(
      JSON.parse((r.content[0] as { text: string }).text).error,
      /^wiki tools are unavailable to you: the Collective "Physics" of your team is not available to you/,
    );
    for (const file of ['index.md', 'x.md']) assert.equal(w.nc.dav.files.read('carol', `Collectives/Physics/${file}`), null, file);

    // The team's own Collective, found by its id, at each member's own folder.
    const own = { location: 'collective', collective: 'Physics (2)' };
    await w.assignments.replace('bot-physics', [{ name: 'wiki_search', config: own }]);
    assert.ok(w.nc.dav.files.read('alice', 'Collectives/Physics (2)/index.md'));
    const wrote = await w.wiki.provider.executeTool('wiki_write_page', { path: 'forces.md', content: '# Forces\n' }, own, w.ctx('bob', 'bot-physics'));
    assert.equal(wrote.isError, false, JSON.stringify(wrote.content));
    assert.equal(w.nc.dav.files.read('bob', 'Kollektive/Physics (2)/forces.md'), '# Forces\n');
    assert.equal(w.nc.dav.files.read('carol', 'Collectives/Physics/forces.md'), null);
  });

  it('a member on Collectives 4.x (folder `.Collectives`) uses the team wiki there', async () => {
    w.nc.collectives.setUserFolder('carol', '.Collectives');
    teamBotWithCollective(w, { team: 'Chemistry', member: 'carol', bot: 'bot-chem', mention: 'chembot' });
    const chem = { location: 'collective', collective: 'Chemistry' };
    await w.assignments.replace('bot-chem', [{ name: 'wiki_write_page', config: chem }]);
    const wrote = await w.wiki.provider.executeTool('wiki_write_page', { path: 'acids.md', content: '# Acids\n' }, chem, w.ctx('carol', 'bot-chem'));
    assert.equal(wrote.isError, false, JSON.stringify(wrote.content));
    assert.equal(w.nc.dav.files.read('carol', '.Collectives/Chemistry/acids.md'), '# Acids\n');
    assert.equal(w.nc.dav.files.read('alice', 'Collectives/Chemistry/acids.md'), '# Acids\n');
    assert.equal((await w.wiki.roots.get('bot-chem'))?.rootPath, '.Collectives/Chemistry');
    await w.wiki.syncRoot('bot-chem');
    assert.match(w.nc.dav.files.read('carol', '.Collectives/Chemistry/index.md')!, /- \[Acids\]\(acids\.md\)/);
  });
});
