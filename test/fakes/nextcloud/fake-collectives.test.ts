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
    cookie = t.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
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
    assert.deepEqual([pages.data[0]!['title'], pages.data[0]!['fileName'], pages.data[0]!['filePath'], pages.data[0]!['collectivePath'], pages.data[0]!['parentId']], ['Readme', 'Readme.md', '', 'Collectives/EducAI Lessons', 0]);
    const landing = Number(pages.data[0]!['id']);

    const page = (await (await api('POST', `/index.php/apps/collectives/_api/${id}/_pages/${landing}`, { title: 'Fractions' })).json()) as { data: Record<string, unknown> };
    assert.deepEqual(Object.keys(page.data), Object.keys(captured('createPage').body['data'] as object));
    assert.deepEqual([page.data['fileName'], page.data['filePath'], page.data['parentId'], page.data['size']], ['Fractions.md', '', landing, 0]);

    const put = await fetch(`${nc.url}/remote.php/dav/files/alice/Collectives/EducAI%20Lessons/Fractions.md`, { method: 'PUT', headers: { ...headers('alice'), 'Content-Type': 'text/markdown' }, body: '# Fractions\n\nWritten by the ExApp through WebDAV.\n' });
    assert.equal(put.status, 204);
    assert.equal(Number.parseInt(put.headers.get('oc-fileid') ?? '', 10), page.data['id'], 'page id = file id');

    const touched = (await (await api('GET', `/index.php/apps/collectives/_api/${id}/_pages/${String(page.data['id'])}/touch`)).json()) as { data: Record<string, unknown> };
    assert.equal(touched.data['size'], 50);
    const after = (await (await api('GET', `/index.php/apps/collectives/_api/${id}/_pages`)).json()) as { data: Array<Record<string, unknown>> };
    assert.deepEqual(after.data[0]!['subpageOrder'], [page.data['id']]);
    assert.deepEqual(nc.headerViolations, []);
  });

  it('2.x: another user\'s session cookie is refused, and the session user is who the API acts as', async () => {
    const res = await fetch(`${nc.url}/index.php/apps/collectives/_api`, { headers: headers('bob', { requesttoken: token, 'OCS-APIRequest': 'true', Cookie: cookie }) });
    assert.equal(res.status, 401);
    assert.equal(nc.webSessions.refused.at(-1)?.owner, 'alice');
    assert.ok(nc.collectives.calls.every((c) => c.uid === 'alice'));
    nc.headerViolations.length = 0;
  });

  it('3.x: the OCS API, and `_api` is gone', async () => {
    nc.collectives.generation = 3;
    const ocs = (path: string) => fetch(`${nc.url}/ocs/v2.php/apps/collectives/api/v1.0${path}?format=json`, { headers: headers('alice', { 'OCS-APIRequest': 'true' }) });
    const list = (await (await ocs('/collectives')).json()) as { ocs: { meta: { statuscode: number }; data: { collectives: Array<{ id: number }> } } };
    assert.equal(list.ocs.meta.statuscode, 200);
    const id = list.ocs.data.collectives[0]!.id;
    const pages = (await (await ocs(`/collectives/${id}/pages`)).json()) as { ocs: { data: { pages: Array<Record<string, unknown>> } } };
    assert.deepEqual(pages.ocs.data.pages.map((p) => p['title']), ['Readme', 'Fractions']);
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
