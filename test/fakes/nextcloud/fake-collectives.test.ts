// The Collectives fakes replay capture 91 (2.x web routes with CSRF token and session) and keep
// the 3.x OCS shapes of nextcloud/collectives' routes and controllers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readNc29Exchange } from './fixtures.ts';
import { FakeNextcloud } from './server.ts';

const SECRET = 'fake-collectives-secret-0123456789';

describe('fake Collectives against capture 91', () => {
  let nc: FakeNextcloud;
  let cookie = '';
  let token = '';

  const headers = (uid: string, extra: Record<string, string> = {}): Record<string, string> => ({
    'EX-APP-ID': 'educai',
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': nc.authHeaderFor(uid),
    Accept: 'application/json',
    ...extra,
  });
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${nc.url}${path}`, {
      method,
      headers: headers('alice', { requesttoken: token, 'OCS-APIRequest': 'true', Cookie: cookie, ...(body ? { 'Content-Type': 'application/json' } : {}) }),
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const captured = (step: string): { status: number; body: Record<string, unknown> } => {
    const ex = readNc29Exchange('91-collectives.json', step);
    return { status: ex.response.status, body: JSON.parse(String(ex.response.body)) as Record<string, unknown> };
  };

  /** A collective of alice's of its own, so that each test sees only its pages. */
  const scratch = (name: string): { id: number; landing: number } => {
    const id = nc.collectives.createCollective(name, { alice: 'RGDNVCK' }).id;
    return { id, landing: nc.dav.files.node('alice', `Collectives/${name}/Readme.md`)!.fileId };
  };

  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: SECRET });
    nc.collectives.generation = 2;
  });
  after(async () => nc.close());

  it('2.x: 412 without a token; csrftoken opens a session; the API answers in the captured shapes', async () => {
    const refused = await fetch(`${nc.url}/index.php/apps/collectives/_api`, { headers: headers('alice', { 'OCS-APIRequest': 'true' }) });
    const want = readNc29Exchange('91-collectives.json', 'collectivesWithoutCsrfToken').response;
    assert.equal(refused.status, want.status);
    assert.equal(await refused.text(), want.body);

    const t = await fetch(`${nc.url}/index.php/csrftoken`, { headers: headers('alice') });
    assert.equal(t.status, 200);
    token = ((await t.json()) as { token: string }).token;
    assert.match(token, /^[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    cookie = t.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    assert.ok(cookie.length > 0);

    const list = await api('GET', '/index.php/apps/collectives/_api');
    assert.deepEqual(await list.json(), captured('listCollectives').body);

    const created = (await (await api('POST', '/index.php/apps/collectives/_api', { name: 'EducAI Lessons' })).json()) as { data: Record<string, unknown> };
    const wantCollective = captured('createCollective').body['data'] as Record<string, unknown>;
    assert.deepEqual(Object.keys(created.data), Object.keys(wantCollective));
    assert.equal(created.data['name'], 'EducAI Lessons');
    const id = Number(created.data['id']);

    const pages = (await (await api('GET', `/index.php/apps/collectives/_api/${id}/_pages`)).json()) as { data: Array<Record<string, unknown>> };
    const wantPage = (captured('listPages').body['data'] as Array<Record<string, unknown>>)[0]!;
    assert.deepEqual(Object.keys(pages.data[0]!), Object.keys(wantPage));
    assert.deepEqual(
      [pages.data[0]!['title'], pages.data[0]!['fileName'], pages.data[0]!['filePath'], pages.data[0]!['collectivePath'], pages.data[0]!['parentId']],
      ['Readme', 'Readme.md', '', 'Collectives/EducAI Lessons', 0],
    );
    const landing = Number(pages.data[0]!['id']);

    const page = (await (await api('POST', `/index.php/apps/collectives/_api/${id}/_pages/${landing}`, { title: 'Fractions' })).json()) as {
      data: Record<string, unknown>;
    };
    assert.deepEqual(Object.keys(page.data), Object.keys(captured('createPage').body['data'] as object));
    assert.deepEqual([page.data['fileName'], page.data['filePath'], page.data['parentId'], page.data['size']], ['Fractions.md', '', landing, 0]);

    const put = await fetch(`${nc.url}/remote.php/dav/files/alice/Collectives/EducAI%20Lessons/Fractions.md`, {
      method: 'PUT',
      headers: { ...headers('alice'), 'Content-Type': 'text/markdown' },
      body: '# Fractions\n\nWritten by the ExApp through WebDAV.\n',
    });
    assert.equal(put.status, 204);
    assert.equal(Number.parseInt(put.headers.get('oc-fileid') ?? '', 10), page.data['id'], 'page id = file id');

    const touched = (await (await api('GET', `/index.php/apps/collectives/_api/${id}/_pages/${String(page.data['id'])}/touch`)).json()) as {
      data: Record<string, unknown>;
    };
    assert.equal(touched.data['size'], 50);
    const after = (await (await api('GET', `/index.php/apps/collectives/_api/${id}/_pages`)).json()) as { data: Array<Record<string, unknown>> };
    assert.deepEqual(after.data[0]!['subpageOrder'], [page.data['id']]);
    assert.deepEqual(nc.headerViolations, []);
  });

  it("2.x: another user's session cookie is refused, and the session user is who the API acts as", async () => {
    const res = await fetch(`${nc.url}/index.php/apps/collectives/_api`, {
      headers: headers('bob', { requesttoken: token, 'OCS-APIRequest': 'true', Cookie: cookie }),
    });
    assert.equal(res.status, 401);
    assert.equal(nc.webSessions.refused.at(-1)?.owner, 'alice');
    assert.ok(nc.collectives.calls.every((c) => c.uid === 'alice'));
    nc.headerViolations.length = 0;
  });

  it('2.x: controller errors are bare JSON strings (ErrorHelper); middleware errors stay {message}', async () => {
    const { id, landing } = scratch('Errors');
    const moved = await api('PUT', `/index.php/apps/collectives/_api/${id}/_pages/${landing}`, { title: 'x' });
    assert.equal(moved.status, 403);
    assert.equal(await moved.json(), 'Not allowed to move or copy landing page');
    const missing = await api('GET', `/index.php/apps/collectives/_api/${id}/_pages/999999`);
    assert.equal(missing.status, 404);
    assert.equal(typeof (await missing.json()), 'string');
    const csrf = await fetch(`${nc.url}/index.php/apps/collectives/_api`, { headers: headers('alice', { 'OCS-APIRequest': 'true' }) });
    assert.deepEqual(await csrf.json(), { message: 'CSRF check failed' });
  });

  it('2.x: titles keep # and %, lose */|\\:"<>?, and get " (2)" on a clash (NodeHelper)', async () => {
    const { id, landing } = scratch('Titles');
    const create = async (title: string) =>
      ((await (await api('POST', `/index.php/apps/collectives/_api/${id}/_pages/${landing}`, { title })).json()) as { data: Record<string, unknown> }).data;
    assert.deepEqual(
      [(await create('C# & 50% rule')).fileName, (await create('Q&A: why? <b>*|"'))['title'], (await create(' ..Notes.. '))['title']],
      ['C# & 50% rule.md', 'Q&A why b', 'Notes'],
    );
    assert.equal((await create('a/b'))['fileName'], 'a-b.md');
    assert.equal((await create('C# & 50% rule'))['title'], 'C# & 50% rule (2)');
    assert.ok(nc.dav.files.node('alice', 'Collectives/Titles/C# & 50% rule.md'));
  });

  it('2.x moveOrCopy: {title} renames in place, {parentId, index} moves into that position, parentId 0 keeps the parent', async () => {
    const { id, landing } = scratch('Moves');
    const url = (page: number) => `/index.php/apps/collectives/_api/${id}/_pages/${page}`;
    const post = async (parent: number, title: string) =>
      Number(((await (await api('POST', url(parent), { title })).json()) as { data: { id: number } }).data.id);
    const put = async (page: number, body: unknown) => ((await (await api('PUT', url(page), body)).json()) as { data: Record<string, unknown> }).data;
    const parent = await post(landing, 'Unit 1');
    const [a, b, c] = [await post(parent, 'A'), await post(parent, 'B'), await post(landing, 'C')];
    assert.deepEqual(nc.collectives.page('alice', id, parent).subpageOrder, [b, a], 'create puts a page first');
    const renamed = await put(c, { title: 'C renamed' });
    assert.deepEqual([renamed['title'], renamed['parentId']], ['C renamed', landing]);
    assert.deepEqual(
      await put(c, { parentId: 0, title: '' }).then((p) => [p['title'], p['parentId']]),
      ['C renamed', landing],
      'parentId 0 and an empty title change nothing',
    );
    const moved = await put(c, { parentId: parent, index: 2 });
    assert.deepEqual([moved['title'], moved['parentId']], ['C renamed', parent]);
    assert.deepEqual(nc.collectives.page('alice', id, parent).subpageOrder, [b, a, c], 'index 2 of two subpages is the end');
    assert.ok(!nc.collectives.page('alice', id, landing).subpageOrder.includes(c));
    const back = await put(a, { parentId: landing, index: 0 });
    assert.equal(back['parentId'], landing);
    assert.equal(nc.collectives.page('alice', id, landing).subpageOrder[0], a);
    const clash = await put(b, { parentId: landing, index: 99 });
    assert.equal(clash['title'], 'B', 'no clash: the name stays');
    await post(parent, 'A');
    assert.equal((await put(a, { parentId: parent }))['title'], 'A (2)', 'a clash in the new folder gets " (2)"');
  });

  it('2.x trash: with files_trashbin a trashTimestamp; without it the page is deleted for good and has none', async () => {
    const { id, landing } = scratch('Trash');
    const post = async (title: string) =>
      Number(((await (await api('POST', `/index.php/apps/collectives/_api/${id}/_pages/${landing}`, { title })).json()) as { data: { id: number } }).data.id);
    const trash = async (page: number) =>
      ((await (await api('DELETE', `/index.php/apps/collectives/_api/${id}/_pages/${page}`)).json()) as { data: Record<string, unknown> }).data;
    const kept = await post('Kept in trash');
    assert.equal(typeof (await trash(kept))['trashTimestamp'], 'number');
    assert.equal(nc.collectives.isTrashed(kept), true);
    nc.collectives.trashbinDisabledFor.add('alice');
    try {
      const gone = await post('Gone for good');
      assert.equal((await trash(gone))['trashTimestamp'], null);
      assert.deepEqual([nc.collectives.isTrashed(gone), nc.collectives.isDeleted(gone)], [false, true]);
      assert.equal(nc.dav.files.node('alice', 'Collectives/Trash/Gone for good.md'), null);
    } finally {
      nc.collectives.trashbinDisabledFor.delete('alice');
    }
  });

  it('NC 30+: OCS-APIRequest alone passes the CSRF check of the 2.x routes (server#46760), as the AppAPI user', async () => {
    nc.webSessions.ocsApiRequestPassesCsrf = true;
    try {
      const res = await fetch(`${nc.url}/index.php/apps/collectives/_api`, { headers: headers('alice', { 'OCS-APIRequest': 'true' }) });
      assert.equal(res.status, 200);
      assert.ok(((await res.json()) as { data: Array<{ name: string }> }).data.some((c) => c.name === 'EducAI Lessons'));
      assert.equal(nc.collectives.calls.at(-1)?.uid, 'alice');
      const without = await fetch(`${nc.url}/index.php/apps/collectives/_api`, { headers: headers('alice') });
      assert.equal(without.status, 412, 'without the header the CSRF check still applies');
      assert.equal((await api('GET', '/index.php/apps/collectives/_api')).status, 200, 'the session with its token still works');
    } finally {
      nc.webSessions.ocsApiRequestPassesCsrf = false;
    }
  });

  it('3.x: the OCS API, and `_api` is gone', async () => {
    nc.collectives.generation = 3;
    const ocs = (path: string) =>
      fetch(`${nc.url}/ocs/v2.php/apps/collectives/api/v1.0${path}?format=json`, { headers: headers('alice', { 'OCS-APIRequest': 'true' }) });
    const list = (await (await ocs('/collectives')).json()) as {
      ocs: { meta: { statuscode: number }; data: { collectives: Array<{ id: number; name: string }> } };
    };
    assert.equal(list.ocs.meta.statuscode, 200);
    const id = list.ocs.data.collectives.find((c) => c.name === 'EducAI Lessons')!.id;
    const pages = (await (await ocs(`/collectives/${id}/pages`)).json()) as { ocs: { data: { pages: Array<Record<string, unknown>> } } };
    assert.deepEqual(
      pages.ocs.data.pages.map((p) => p['title']),
      ['Readme', 'Fractions'],
    );
    assert.deepEqual(pages.ocs.data.pages[1]!['tags'], []);
    const missing = await ocs(`/collectives/${id}/pages/999999`);
    assert.equal(missing.status, 404);
    const old = await fetch(`${nc.url}/index.php/apps/collectives/_api`, { headers: headers('alice', { 'OCS-APIRequest': 'true' }) });
    assert.equal(old.status, 200);
    assert.match(await old.text(), /<html/, 'the 3.x catch-all route renders the app page');
    nc.collectives.generation = null;
    assert.equal((await ocs('/collectives')).status, 404, 'absent: an unknown OCS route');
  });
});
