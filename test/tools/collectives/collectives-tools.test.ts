// Every Collectives tool on both API generations (selected by detection; 2.x on NC 29 and on
// NC 30+, where OCS-APIRequest passes the CSRF check), as the invoking user: happy paths, errors,
// the etag check on updates, trash with confirmation (once) and its permanent-delete case, file
// names with # and %, the moveOrCopy bodies, scope, S2 fuzz.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import type { PageInfo } from '../../../lib/nextcloud/collectives/api.ts';
import { encodeServerSegment, pageDavPath } from '../../../lib/nextcloud/collectives/page-file.ts';
import { titleArg } from '../../../lib/tools/collectives/collectives-pages.ts';
import { COLLECTIVES_TOOLS } from '../../../lib/tools/collectives/collectives-tools.ts';
import { parseUserPath } from '../../../lib/tools/files/user-paths.ts';
import type { PreparedAction, ToolEnv } from '../../../lib/tools/first-party-tool.ts';
import { ResourceScope } from '../../../lib/tools/resource-scope.ts';
import type { RecordedCall } from '../../fakes/nextcloud/server.ts';
import { json, NOW, text } from '../first-party-fixture.ts';
import { FRACTIONS, startCollectivesWorld, type CollectivesWorld } from './collectives-world.ts';

const NAMES = COLLECTIVES_TOOLS.map((t) => t.definition.name);

const VARIANTS = [
  { generation: 2, nc30: false },
  { generation: 2, nc30: true },
  { generation: 3, nc30: false },
] as const;

for (const { generation, nc30 } of VARIANTS) {
  describe(`Collectives ${generation}.x tools${nc30 ? ' on Nextcloud 30+' : ''}`, () => {
    let w: CollectivesWorld;
    let mark = 0;
    const stored = (index = -1) => w.confirmations.stored(index);
    const confirm = (uid = 'alice', index = -1) => w.provider.executeConfirmed(stored(index), issueFromConfirmedTalkAuthor(uid));
    const since = (): RecordedCall[] => w.callsSince(mark);

    /** Every call acted as `uid`, over the detected generation's API, and kept the header and cookie contract. */
    function assertAs(uid: string): void {
      const calls = since();
      assert.ok(calls.length > 0);
      for (const c of calls) assert.equal(c.user, uid, `${c.method} ${c.path}`);
      const api = calls.filter((c) => c.path.includes('collectives'));
      if (generation === 2) {
        // The first call of a user also runs the detection probe (OCS 404, then the 412 of capture 91).
        const probe = (c: RecordedCall): boolean => c.path === '/ocs/v2.php/apps/collectives/api/v1.0/collectives' && c.status === 404;
        assert.ok(
          api.every((c) => c.path.startsWith('/index.php/apps/collectives/_api') || c.path.startsWith('/remote.php/dav/') || probe(c)),
          api.map((c) => c.path).join(' '),
        );
      } else {
        assert.ok(
          api.every((c) => c.path.startsWith('/ocs/v2.php/apps/collectives/api/v1.0/collectives') || c.path.startsWith('/remote.php/dav/')),
          api.map((c) => c.path).join(' '),
        );
        assert.ok(
          calls.every((c) => c.headers.cookie === undefined),
          'the OCS API needs no cookie',
        );
      }
      for (const c of w.nc.collectives.calls) assert.equal(c.uid, uid, `${c.route} ran as ${c.uid}`);
      assert.deepEqual(w.nc.headerViolations, []);
      assert.deepEqual(w.nc.webSessions.refused, []);
    }

    before(async () => {
      w = await startCollectivesWorld(generation, { nc30 });
    });
    after(async () => w.close());
    beforeEach(() => {
      mark = w.nc.calls.length;
      w.nc.headerViolations.length = 0;
      w.nc.collectives.calls.length = 0;
      w.nc.clearInjections();
    });

    it('detects the generation as the user and advertises the tools', async () => {
      const tools = (await w.provider.getTools(w.ctx())).map((t) => t.name);
      for (const name of NAMES) assert.ok(tools.includes(name), name);
      const probes = since().filter((c) => /collectives/.test(c.path));
      assert.ok(probes.length >= 1);
      assert.ok(
        probes.every((c) => c.user === 'alice' && c.headers.cookie === undefined),
        'the probe keeps no session',
      );
      const webProbe = probes.find((c) => c.path === '/index.php/apps/collectives/_api');
      // NC 29 refuses the header-only probe (capture 91); NC 30+ lets it through and lists the collectives.
      if (generation === 2) assert.equal(webProbe?.status, nc30 ? 200 : 412);
      assert.equal(COLLECTIVES_TOOLS.find((t) => t.definition.name === 'collectives_trash_page')?.definition.policy.destructive, true);
      assert.ok(COLLECTIVES_TOOLS.every((t) => t.family === 'collectives' && t.definition.requiresUser));
    });

    it('collectives_list shows only the collectives alice belongs to', async () => {
      const res = await w.run('collectives_list', {});
      assert.equal(res.isError, false, text(res));
      assert.deepEqual(json(res)['collectives'], [{ id: w.math.id, name: 'Math Team', canEdit: true }]);
      assertAs('alice');
      if (generation === 2) {
        const paths = since().map((c) => c.path);
        assert.deepEqual(paths, ['/index.php/csrftoken', '/index.php/apps/collectives/_api'], 'a read needs the token, no user check');
      }
    });

    it('collectives_page_tree shows the tree and taints the turn', async () => {
      const ctx = w.ctx();
      const res = await w.run('collectives_page_tree', { collective_id: w.math.id }, ctx);
      assert.equal(res.isError, false, text(res));
      const pages = json(res)['pages'] as Array<Record<string, unknown>>;
      assert.deepEqual(
        pages.map((p) => [p['title'], p['depth']]),
        [
          ['Readme', 0],
          ['Fractions', 1],
        ],
      );
      assert.equal(pages[1]!['id'], w.fractionsId);
      assert.equal(w.provider.isTainted(ctx), true, "titles are other members' text (S6)");
      assertAs('alice');
    });

    it('collectives_read_page reads in character chunks with the etag', async () => {
      const ctx = w.ctx();
      const res = await w.run('collectives_read_page', { collective_id: w.math.id, page_id: w.fractionsId, limit: 11 }, ctx);
      assert.equal(res.isError, false, text(res));
      const body = json(res);
      assert.equal(body['content'], '# Fractions');
      assert.equal(body['has_more'], true);
      assert.equal(body['total_length'], FRACTIONS.length);
      assert.equal(body['etag'], w.nc.dav.files.node('alice', 'Collectives/Math Team/Fractions.md')!.etag);
      const rest = json(await w.run('collectives_read_page', { collective_id: w.math.id, page_id: String(w.fractionsId), offset: body['next_offset'] }, ctx));
      assert.equal(`${String(body['content'])}${String(rest['content'])}`, FRACTIONS);
      assert.equal(w.provider.isTainted(ctx), true, 'page contents taint the turn (S6)');
      assertAs('alice');
    });

    it('errors: unknown ids, a collective alice is not in, a read-only member writing', async () => {
      let res = await w.run('collectives_read_page', { collective_id: w.math.id, page_id: 999999 });
      assert.equal(res.isError, true);
      assert.match(text(res), /Not found \(Page not found: 999999\)/, "the server's own reason, also from 2.x's bare JSON string");
      res = await w.run('collectives_page_tree', { collective_id: w.other.id });
      assert.equal(res.isError, true, "bob's collective stays closed to alice");
      res = await w.run('collectives_create_page', { collective_id: w.other.id, parent_id: 1, title: 'x' });
      assert.equal(res.isError, true);
      assertAs('alice');
      mark = w.nc.calls.length;
      w.nc.collectives.calls.length = 0;
      res = await w.run('collectives_create_page', { collective_id: w.math.id, parent_id: w.landingId, title: 'Carol was here' }, w.ctx('carol'));
      assert.equal(res.isError, true, text(res));
      assert.match(text(res), /refused this for your account \(Not allowed to edit collective\)/);
      assert.equal(w.nc.dav.files.node('alice', 'Collectives/Math Team/Carol was here.md'), null);
      assertAs('carol');
    });

    it('collectives_create_page creates a subpage with content as alice (a leaf parent becomes a folder)', async () => {
      const res = await w.run('collectives_create_page', {
        collective_id: w.math.id,
        parent_id: w.fractionsId,
        title: 'Decimals',
        content: '# Decimals\n\n0.5 = 1/2\n',
      });
      assert.equal(res.isError, false, text(res));
      const created = json(res)['created'] as Record<string, unknown>;
      assert.equal(created['parentId'], w.fractionsId);
      assert.equal(w.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions/Decimals.md'), '# Decimals\n\n0.5 = 1/2\n');
      assert.equal(w.nc.dav.files.read('bob', 'Collectives/Math Team/Fractions/Readme.md'), FRACTIONS, 'the parent keeps its content and id');
      const page = w.nc.collectives.page('alice', w.math.id, Number(created['pageId']));
      assert.equal(page.lastUserId, 'alice');
      assertAs('alice');
      if (generation === 2) {
        const paths = since().map((c) => `${c.method} ${c.path}`);
        const check = paths.indexOf('GET /ocs/v2.php/cloud/user');
        const post = paths.findIndex((p) => p.startsWith('POST /index.php/apps/collectives/_api/'));
        assert.ok(check >= 0 && check < post, `the acting user is confirmed before the write: ${paths.join(', ')}`);
        assert.equal(new Set(w.nc.webSessions.opened.slice(-2).map((s) => s.id)).size, 2, 'prepare and execute each had their own session');
      }
    });

    it('collectives_update_page replaces with the etag that was read; after the read it waits for confirmation', async () => {
      const ctx = w.ctx();
      const read = json(await w.run('collectives_read_page', { collective_id: w.math.id, page_id: w.fractionsId }, ctx));
      const res = await w.run(
        'collectives_update_page',
        { collective_id: w.math.id, page_id: w.fractionsId, content: '# Fractions\n\nRewritten.\n', etag: read['etag'] },
        ctx,
      );
      assert.match(text(res), /NOT DONE YET/, 'the read tainted the turn (S6): writing to shared content needs alice');
      assert.equal(w.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions/Readme.md'), FRACTIONS);
      assert.match(stored().description, /replace the content of the page "Fractions"/);
      const done = await confirm();
      assert.equal(done.isError, false, text(done));
      assert.equal(w.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions/Readme.md'), '# Fractions\n\nRewritten.\n');
      const put = since().find((c) => c.method === 'PUT');
      assert.equal(put?.headers['if-match'], read['etag'], 'If-Match carries the revision that was read');
      assertAs('alice');
    });

    it('collectives_update_page appends, and refuses a stale etag before and after confirmation', async () => {
      let res = await w.run('collectives_update_page', { collective_id: w.math.id, page_id: w.fractionsId, content: 'More.', mode: 'append' });
      assert.equal(res.isError, false, text(res));
      assert.equal(w.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions/Readme.md'), '# Fractions\n\nRewritten.\n\nMore.');
      res = await w.run('collectives_update_page', { collective_id: w.math.id, page_id: w.fractionsId, content: 'x', etag: '"0123abc"' });
      assert.equal(res.isError, true);
      assert.match(text(res), /changed since you read it/);
      // Prepared against one revision; bob edits the page before alice confirms.
      const tainted = w.ctx();
      await w.run('collectives_page_tree', { collective_id: w.math.id }, tainted);
      res = await w.run('collectives_update_page', { collective_id: w.math.id, page_id: w.fractionsId, content: 'alice version' }, tainted);
      assert.match(text(res), /NOT DONE YET/);
      w.nc.dav.files.putFile('bob', 'Collectives/Math Team/Fractions/Readme.md', 'bob version');
      const done = await confirm();
      assert.equal(done.isError, true);
      assert.match(text(done), /changed since it was read/);
      assert.equal(w.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions/Readme.md'), 'bob version', "bob's edit is kept");
      assertAs('alice');
    });

    /** The JSON body of the last moveOrCopy (PUT on a page) since the mark. */
    function moveBody(): unknown {
      const put = since()
        .filter((c) => c.method === 'PUT' && /\/(_pages|pages)\/\d+$/.test(c.path))
        .at(-1);
      assert.ok(put, 'a moveOrCopy call');
      return JSON.parse(put.body) as unknown;
    }

    it('collectives_rename_page and collectives_move_page send what the Collectives UI sends; a moved page goes last', async () => {
      const created = json(await w.run('collectives_create_page', { collective_id: w.math.id, parent_id: w.landingId, title: 'Geometry' }))[
        'created'
      ] as Record<string, unknown>;
      const id = Number(created['pageId']);
      let res = await w.run('collectives_rename_page', { collective_id: w.math.id, page_id: id, title: 'Shapes' });
      assert.equal(res.isError, false, text(res));
      assert.deepEqual(moveBody(), { title: 'Shapes' }, 'a rename sends only the title');
      assert.equal(w.nc.collectives.page('alice', w.math.id, id).title, 'Shapes');
      assert.ok(w.nc.dav.files.node('alice', 'Collectives/Math Team/Shapes.md'));
      const siblings = w.nc.collectives.page('alice', w.math.id, w.fractionsId).subpageOrder;
      assert.ok(siblings.length > 0, 'Fractions already has subpages');
      res = await w.run('collectives_move_page', { collective_id: w.math.id, page_id: id, parent_id: w.fractionsId });
      assert.equal(res.isError, false, text(res));
      assert.deepEqual(moveBody(), { parentId: w.fractionsId, index: siblings.length }, 'a move sends the parent and the end of its subpage order');
      assert.deepEqual(w.nc.collectives.page('alice', w.math.id, w.fractionsId).subpageOrder, [...siblings, id], 'the moved page is last, not first');
      assert.match(String(json(res)['position']), /after the other subpages of "Fractions"/);
      assert.equal(w.nc.collectives.page('alice', w.math.id, id).parentId, w.fractionsId);
      assert.ok(w.nc.dav.files.node('alice', 'Collectives/Math Team/Fractions/Shapes.md'));
      // A clash is resolved by Collectives (`Shapes (2)`); the answer says which title was saved.
      const other = json(await w.run('collectives_create_page', { collective_id: w.math.id, parent_id: w.landingId, title: 'Shapes' }))['created'] as Record<
        string,
        unknown
      >;
      res = await w.run('collectives_move_page', { collective_id: w.math.id, page_id: Number(other['pageId']), parent_id: w.fractionsId });
      assert.equal(res.isError, false, text(res));
      assert.equal((json(res)['moved'] as Record<string, unknown>)['title'], 'Shapes (2)');
      assert.match(String(json(res)['note']), /saved the title as "Shapes \(2\)"/);
      res = await w.run('collectives_move_page', { collective_id: w.math.id, page_id: w.landingId, parent_id: w.fractionsId });
      assert.equal(res.isError, true, 'the landing page stays');
      res = await w.run('collectives_rename_page', { collective_id: w.math.id, page_id: id, title: '../escape' });
      assert.equal(res.isError, true);
      assertAs('alice');
    });

    it('collectives_trash_page always needs confirmation and runs once', async () => {
      const id = w.nc.collectives.createPage('alice', w.math.id, w.landingId, 'Old notes').id;
      mark = w.nc.calls.length;
      w.nc.collectives.calls.length = 0;
      const res = await w.run('collectives_trash_page', { collective_id: w.math.id, page_id: id });
      assert.match(text(res), /NOT DONE YET/);
      assert.ok(w.nc.dav.files.node('alice', 'Collectives/Math Team/Old notes.md'), 'nothing trashed yet');
      assert.match(stored().description, /"Old notes"/);
      assert.equal((await confirm('bob')).isError, true, 'only alice can confirm');
      assert.doesNotMatch(stored().description, /restore|WARNING/, 'the trash is enabled here (capture 20: files.undelete), and restoring is not promised');
      const first = await confirm();
      assert.equal(first.isError, false, text(first));
      assert.equal(w.nc.collectives.isTrashed(id), true);
      assert.deepEqual(json(first)['trashed'], { collectiveId: w.math.id, pageId: id, title: 'Old notes' });
      assert.equal(json(first)['note'], 'moved to the trash (members can restore it)');
      const again = await confirm();
      assert.equal(again.isError, true);
      assert.match(text(again), /not there any more/);
      assert.equal(w.nc.collectives.calls.filter((c) => c.route === 'page#trash').length, 1, 'trashed once');
      assertAs('alice');
    });

    it('collectives_trash_page says truthfully that a page was deleted for good when the trash is off for the user', async () => {
      const id = w.nc.collectives.createPage('alice', w.math.id, w.landingId, 'Scratch').id;
      w.nc.collectives.trashbinDisabledFor.add('alice');
      try {
        assert.match(text(await w.run('collectives_trash_page', { collective_id: w.math.id, page_id: id })), /NOT DONE YET/);
        const done = await confirm();
        assert.equal(done.isError, false, text(done));
        assert.equal(json(done)['trashed'], undefined, 'not reported as trashed');
        assert.deepEqual(json(done)['deletedPermanently'], { collectiveId: w.math.id, pageId: id, title: 'Scratch' });
        assert.match(String(json(done)['note']), /deleted permanently: the trash is not available for this user/);
        assert.doesNotMatch(String(json(done)['note']), /can restore/);
        assert.equal(w.nc.collectives.isDeleted(id), true);
      } finally {
        w.nc.collectives.trashbinDisabledFor.delete('alice');
      }
      const tool = COLLECTIVES_TOOLS.find((t) => t.definition.name === 'collectives_trash_page')!;
      assert.doesNotMatch(tool.definition.description, /\(members can restore it there\)/, 'the tool does not promise a restore');
    });

    it('collectives_trash_page warns in the confirmation when the capabilities show no trash', async () => {
      const id = w.nc.collectives.createPage('alice', w.math.id, w.landingId, 'Draft').id;
      const alice = issueFromConfirmedTalkAuthor('alice');
      const env = (caps: string[]): ToolEnv => ({
        user: alice,
        session: w.client.as(alice),
        capabilities: new Set([...caps, 'collectives', ...(generation === 3 ? ['collectives-ocs'] : [])]) as ToolEnv['capabilities'],
        now: () => NOW,
        scope: new ResourceScope({}),
      });
      const tool = COLLECTIVES_TOOLS.find((t) => t.definition.name === 'collectives_trash_page')!;
      const without = (await tool.prepare!({ collective_id: w.math.id, page_id: id }, env(['files']))) as PreparedAction;
      assert.match(without.description, /WARNING: the Nextcloud trash is not enabled for you, so Collectives will most likely delete it permanently/);
      assert.match(String(without.confirmReason), /permanently/);
      const withTrash = (await tool.prepare!({ collective_id: w.math.id, page_id: id }, env(['files', 'trashbin']))) as PreparedAction;
      assert.doesNotMatch(withTrash.description, /WARNING/);
      assert.ok(w.nc.dav.files.node('alice', 'Collectives/Math Team/Draft.md'), 'preparing changes nothing');
    });

    it('pages whose file names keep # and % are created with content, read and updated (no half-created page)', async () => {
      const title = 'C# & 50% rule';
      const res = await w.run('collectives_create_page', { collective_id: w.math.id, parent_id: w.landingId, title, content: '# C#\n\nHalf is 50%.\n' });
      assert.equal(res.isError, false, text(res));
      const id = Number((json(res)['created'] as Record<string, unknown>)['pageId']);
      assert.equal(w.nc.dav.files.read('alice', `Collectives/Math Team/${title}.md`), '# C#\n\nHalf is 50%.\n');
      const put = since().find((c) => c.method === 'PUT' && c.path.startsWith('/remote.php/dav/'));
      assert.equal(
        put?.path,
        '/remote.php/dav/files/alice/Collectives/Math%20Team/C%23%20%26%2050%25%20rule.md',
        'each name encoded as it is, never decoded first',
      );
      const ctx = w.ctx();
      const read = json(await w.run('collectives_read_page', { collective_id: w.math.id, page_id: id }, ctx));
      assert.equal(read['content'], '# C#\n\nHalf is 50%.\n');
      const upd = await w.run('collectives_update_page', { collective_id: w.math.id, page_id: id, content: 'Rewritten', etag: read['etag'] });
      assert.equal(upd.isError, false, text(upd));
      assert.equal(w.nc.dav.files.read('alice', `Collectives/Math Team/${title}.md`), 'Rewritten');
      // `a%2Fb` is one file name, not `a/b`: read it, not a decoy that decoding would reach.
      const odd = w.nc.collectives.createPage('alice', w.math.id, w.landingId, 'a%2Fb%41').id;
      w.nc.dav.files.putFile('alice', 'Collectives/Math Team/a%2Fb%41.md', 'the odd page');
      const oddRead = await w.run('collectives_read_page', { collective_id: w.math.id, page_id: odd }, ctx);
      assert.equal(oddRead.isError, false, text(oddRead));
      assert.equal(json(oddRead)['content'], 'the odd page');
      assertAs('alice');
    });

    it('a page created but not written says so, instead of a misleading error', async () => {
      w.nc.failNext({ method: 'PUT', path: /^\/remote\.php\/dav\/files\/alice\/Collectives\/Math%20Team\/Full%20disk\.md$/ }, { status: 507 });
      const res = await w.run('collectives_create_page', { collective_id: w.math.id, parent_id: w.landingId, title: 'Full disk', content: 'x' });
      assert.equal(res.isError, true);
      assert.match(
        text(res),
        /The page "Full disk" \(page \d+\) was created, but it is empty: its content could not be written \(HTTP 507\)\. Write it with collectives_update_page/,
      );
    });

    it('the page file must still carry the page id', async () => {
      const wrong =
        '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:response><d:href>/remote.php/dav/files/alice/Collectives/Math%20Team/Fractions/Readme.md</d:href>' +
        '<d:propstat><d:prop><d:getetag>"abc"</d:getetag><oc:fileid>999999</oc:fileid><d:resourcetype/></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>';
      w.nc.failNext(
        { method: 'PROPFIND', path: /^\/remote\.php\/dav\/files\/alice\/Collectives\/Math%20Team\/Fractions\/Readme\.md$/ },
        { status: 207, body: wrong },
      );
      const res = await w.run('collectives_read_page', { collective_id: w.math.id, page_id: w.fractionsId });
      assert.equal(res.isError, true);
      assert.match(text(res), /is not that page's file/);
    });

    it('a title Collectives would change is refused before anything is sent', async () => {
      await w.provider.getTools(w.ctx());
      mark = w.nc.calls.length;
      for (const title of ['Q&A: why?', 'a*b', 'x|y', 'say "hi"', '<b>', 'Notes.', '.hidden', 'x\u0085y']) {
        for (const name of ['collectives_create_page', 'collectives_rename_page']) {
          const res = await w.run(name, { collective_id: w.math.id, parent_id: w.landingId, page_id: w.fractionsId, title });
          assert.equal(res.isError, true, `${name} ${JSON.stringify(title)}`);
          assert.match(text(res), /title may not/);
        }
      }
      assert.deepEqual(
        since().filter((c) => /collectives|\/remote\.php\//.test(c.path)),
        [],
      );
    });

    if (generation === 3) {
      it('a 404 for the pages of a listed collective means an unsupported Collectives version, not "not found"', async () => {
        const body = '{"ocs":{"meta":{"status":"failure","statuscode":998,"message":"Invalid query"},"data":[]}}';
        w.nc.failNext({ method: 'GET', path: new RegExp(`^/ocs/v2\\.php/apps/collectives/api/v1\\.0/collectives/${w.math.id}/pages$`) }, { status: 404, body });
        const res = await w.run('collectives_page_tree', { collective_id: w.math.id });
        assert.equal(res.isError, true);
        assert.match(text(res), /this version of the Collectives app is not supported/);
        assert.doesNotMatch(text(res), /Not found/);
        const foreign = await w.run('collectives_page_tree', { collective_id: w.other.id });
        assert.match(text(foreign), /Not found \(Collective not found/, 'a collective the user does not have stays "not found"');
      });
    }

    it('two users in a row: each call its own session, every call as its user', async () => {
      await w.provider.getTools(w.ctx('bob'));
      w.nc.collectives.calls.length = 0;
      mark = w.nc.calls.length;
      const opened = w.nc.webSessions.opened.length;
      await w.run('collectives_list', {}, w.ctx('alice'));
      await w.run('collectives_list', {}, w.ctx('bob'));
      await w.run('collectives_list', {}, w.ctx('alice'));
      const calls = w.nc.collectives.calls;
      assert.deepEqual(
        calls.map((c) => c.uid),
        ['alice', 'bob', 'alice'],
      );
      for (const c of since())
        if (c.headers.cookie) assert.ok(w.nc.webSessions.check(c.headers.cookie, c.user).kind === 'own', `${c.path} carried its own user's session`);
      assert.equal(w.nc.webSessions.opened.length - opened, generation === 2 ? 3 : 0, 'a fresh session per call');
      assert.deepEqual(w.nc.webSessions.refused, []);
      assert.deepEqual(w.nc.headerViolations, []);
    });

    it('scope: a collective outside the assignment is refused before any request', async () => {
      const alice = issueFromConfirmedTalkAuthor('alice');
      const env: ToolEnv = {
        user: alice,
        session: w.client.as(alice),
        capabilities: new Set(['files', 'collectives', ...(generation === 3 ? (['collectives-ocs'] as const) : [])]),
        now: () => NOW,
        scope: new ResourceScope({ collectives: [w.other.id] }),
      };
      const tree = COLLECTIVES_TOOLS.find((t) => t.definition.name === 'collectives_page_tree')!;
      const trash = COLLECTIVES_TOOLS.find((t) => t.definition.name === 'collectives_trash_page')!;
      const res = await tree.run!({ collective_id: w.math.id }, env);
      assert.equal(res.isError, true);
      assert.match(text(res), /not one this bot may use/);
      const prepared = await trash.prepare!({ collective_id: w.math.id, page_id: w.fractionsId }, env);
      assert.match(text(prepared as never), /not one this bot may use/);
      assert.deepEqual(since(), [], 'nothing reached Nextcloud');
      const list = COLLECTIVES_TOOLS.find((t) => t.definition.name === 'collectives_list')!;
      assert.deepEqual(json(await list.run!({}, env))['collectives'], [], 'the list shows only collectives in scope');
    });

    it('S2: no id or title argument reaches a URL unchecked', async () => {
      const payloads: unknown[] = ['../', '%2e%2e', '..%2f..', '4?x=1', '4#frag', '4/../5', ' 4', '-1', '0', 0, 1.5, '1e3', '0x10', {}, [], true, null, '４'];
      const base: Record<string, Record<string, unknown>> = {
        collectives_page_tree: { collective_id: w.math.id },
        collectives_read_page: { collective_id: w.math.id, page_id: w.fractionsId },
        collectives_create_page: { collective_id: w.math.id, parent_id: w.landingId, title: 'T' },
        collectives_update_page: { collective_id: w.math.id, page_id: w.fractionsId, content: 'c' },
        collectives_rename_page: { collective_id: w.math.id, page_id: w.fractionsId, title: 'T' },
        collectives_move_page: { collective_id: w.math.id, page_id: w.fractionsId, parent_id: w.landingId },
        collectives_trash_page: { collective_id: w.math.id, page_id: w.fractionsId },
      };
      await w.provider.getTools(w.ctx());
      mark = w.nc.calls.length;
      let tried = 0;
      for (const [name, args] of Object.entries(base)) {
        for (const field of Object.keys(args).filter((k) => k.endsWith('_id'))) {
          for (const payload of payloads) {
            const res = await w.run(name, { ...args, [field]: payload });
            assert.equal(res.isError, true, `${name}.${field}=${JSON.stringify(payload)}`);
            assert.match(text(res), /positive whole number/);
            tried++;
          }
        }
        if ('title' in args) {
          for (const bad of ['../x', 'a/b', 'a\\b', '..', '', 'x\u0000y', 'Q&A: why?', 'Notes.']) {
            const res = await w.run(name, { ...args, title: bad });
            assert.equal(res.isError, true, `${name}.title=${JSON.stringify(bad)}`);
            tried++;
          }
        }
      }
      assert.ok(tried > 200, `fuzzed ${tried} calls`);
      assert.deepEqual(
        since().filter((c) => /collectives|\/remote\.php\//.test(c.path)),
        [],
        'every one was refused before any request',
      );
      assert.deepEqual(w.nc.headerViolations, []);
    });
  });
}

describe('Collectives absent', () => {
  let w: CollectivesWorld;
  before(async () => {
    w = await startCollectivesWorld(null);
  });
  after(async () => w.close());

  it('the tools are neither advertised nor callable, and the rest of the loadout works', async () => {
    const tools = (await w.provider.getTools(w.ctx())).map((t) => t.name);
    for (const name of NAMES) assert.ok(!tools.includes(name), name);
    assert.ok(tools.includes('files_list') && tools.includes('calendar_list'));
    const res = await w.run('collectives_list', {});
    assert.equal(res.isError, true);
    assert.match(text(res), /not available on this Nextcloud/);
    const files = await w.run('files_list', {});
    assert.equal(files.isError, false, text(files));
    assert.deepEqual(w.nc.collectives.calls, []);
    assert.deepEqual(w.nc.headerViolations, []);
  });
});

describe('Collectives page file paths and titles', () => {
  const page = (over: Partial<PageInfo>): PageInfo => ({
    id: 7,
    collectiveId: 4,
    title: 'T',
    parentId: 3,
    fileName: 'T.md',
    filePath: '',
    collectivePath: 'Collectives/Math Team',
    size: 0,
    timestamp: 0,
    lastUserId: null,
    subpageOrder: [],
    trashTimestamp: null,
    ...over,
  });

  it('a name the server reported is encoded as it is, never decoded; only what no name can be is refused', () => {
    assert.equal(encodeServerSegment('50% rule.md'), '50%25%20rule.md');
    assert.equal(encodeServerSegment('C# basics.md'), 'C%23%20basics.md');
    assert.equal(encodeServerSegment('a%2Fb.md'), 'a%252Fb.md');
    assert.equal(encodeServerSegment('%2e%2e'), '%252e%252e');
    assert.equal(encodeServerSegment('.Collectives'), '.Collectives');
    for (const bad of ['', '.', '..', 'a/b', 'a\\b', 'x\u0000y', 'x\u007fy', 'x\u0085y']) assert.equal(encodeServerSegment(bad), null, JSON.stringify(bad));
    assert.equal(pageDavPath(page({ filePath: 'Unit 1/C# #2', fileName: 'Readme.md' })), '/files/{uid}/Collectives/Math%20Team/Unit%201/C%23%20%232/Readme.md');
    for (const filePath of ['..', 'a/../b', 'a//b', 'a\\b'])
      assert.throws(() => pageDavPath(page({ filePath })), /has a path these tools cannot use/, filePath);
    assert.throws(() => pageDavPath(page({ collectivePath: null })), /no Markdown file/);
  });

  it('paths a model types keep their strict checks (url-template.ts is unchanged for them)', () => {
    assert.throws(() => parseUserPath('C# basics.md'));
    assert.throws(() => parseUserPath('50% rule.md'));
  });

  it('titleArg keeps # % & ( ) and refuses what sanitiseFilename would change', () => {
    assert.equal(titleArg({ title: '  C# & 50% (draft)  ' }), 'C# & 50% (draft)');
    assert.throws(() => titleArg({ title: 'Q&A: why?' }), /may not contain any of \/ \\ \* \| : " < > \?/);
    assert.throws(() => titleArg({ title: 'Chapter 1.' }), /may not start or end with a dot/);
  });
});
