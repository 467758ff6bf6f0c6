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
    // Collectives creates the team of the same name; carol may only read the Collective.
    w.nc.dav.files.mountCollective('Math Team', { alice: 'RGDNVCK', bob: 'RGDNVCK', carol: 'RG' });
    w.nc.dav.files.putFile('alice', `${ROOT}/Readme.md`, '# Math Team\n\nWelcome.\n');
    w.bots.set('bot-team', personalBot({ id: 'bot-team', mention: 'mathbot', displayName: 'Math Bot', visibility: 'teams', allowedTeams: [team.id] }));
  });
  after(async () => w.close());

  it('refuses a team bot wiki outside a Collective, and a Collective of another team', async () => {
    await assert.rejects(w.assignments.replace('bot-team', [{ name: 'wiki_search', config: {} }]), (err: Error) => err instanceof ToolAssignmentError && /must be in a Collective/.test(err.message));
    w.nc.dav.files.mountCollective('Other', { alice: 'RGDNVCK' });
    await assert.rejects(w.assignments.replace('bot-team', [{ name: 'wiki_search', config: { location: 'collective', collective: 'Other' } }]), /not in the team of the Collective "Other"/);
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
      assert.ok(calls.every((c) => c.user === uid), `${uid}: ${calls.map((c) => c.user).join(',')}`);
      assert.ok(!calls.some((c) => c.method === 'PUT' || c.method === 'MKCOL'));
    }
    assert.equal(w.nc.dav.files.read('alice', `${ROOT}/x.md`), null);
  });

  it('refuses a folder that only looks like the Collective (a share mounted under Collectives)', async () => {
    const teams = fakeTeams(w.nc);
    const team = teams.createTeam({ name: 'Fake Team', owner: 'alice' });
    teams.addMember(team.id, { userId: 'bob', type: 'user', level: 1 });
    w.nc.dav.files.receiveShare('bob', 'Collectives/Fake Team', 'carol');
    w.bots.set('bot-fake', personalBot({ id: 'bot-fake', visibility: 'teams', allowedTeams: [team.id] }));
    // The owner could not save this location (alice has no such Collective), so the config is passed as if stored earlier.
    const mark = w.nc.calls.length;
    const r = await w.wiki.provider.executeTool('wiki_write_page', { path: 'x.md', content: 'x' }, { location: 'collective', collective: 'Fake Team' }, w.ctx('bob', 'bot-fake'));
    assert.equal(r.isError, true);
    assert.match((r.content[0] as { text: string }).text, /unavailable to you: .*not a Collective's folder/);
    assert.ok(!w.callsSince(mark).some((c) => c.method === 'PUT' || c.method === 'MKCOL'));
  });
});
