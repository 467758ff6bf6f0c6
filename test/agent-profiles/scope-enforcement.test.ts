// Scope enforcement in the first-party tools (S2 + issue 10), in user mode: every resolved path
// (source and destination), a share's path read from OCS, listings, and every calendar id.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { ResourceScope, type ConfirmationPolicy, type ResourceScopeInput } from '../../lib/tools/resource-scope.ts';
import { deriveInvocationContext, type InvocationContext } from '../../lib/tools/tool-provider.ts';
import { json, seedFiles, startToolWorld, text, type ToolWorld } from '../tools/first-party-fixture.ts';

describe('resource scopes in the first-party tools', () => {
  let w: ToolWorld;
  const scoped = (scope: ResourceScopeInput, confirmation: ConfirmationPolicy = 'destructive'): InvocationContext =>
    deriveInvocationContext(w.ctx('alice'), {
      user: issueFromConfirmedTalkAuthor('alice'),
      execution: { mode: 'user', profileId: null, scope: new ResourceScope(scope), confirmation },
    });

  before(async () => {
    w = await startToolWorld();
    seedFiles(w.nc);
    w.nc.dav.files.mkdir('alice', 'Projects');
    w.nc.dav.files.putFile('alice', 'Projects/plan.md', 'plan');
    w.nc.dav.calendars.createCalendar('alice', 'ai', 'AI');
    w.nc.dav.calendars.createCalendar('alice', 'personal', 'Personal');
  });
  after(() => w.close());

  it('refuses escapes: ../, %2e%2e, absolute paths outside, with a clear error and no write', async () => {
    const ctx = scoped({ folders: ['Projects'] });
    const mark = w.nc.calls.length;
    for (const path of ['Projects/../EducAI-worksheet.txt', 'Projects/%2e%2e/x.txt', '/educai-share/lesson.txt', 'educai-share/new.txt']) {
      const r = await w.run('files_create', { path, content: 'x' }, ctx);
      assert.equal(r.isError, true, path);
      assert.match(text(r), /outside the folders this bot may use|is not allowed: use a plain path/, path);
    }
    assert.ok(
      w.callsSince(mark).every((c) => c.method !== 'PUT'),
      'nothing was written',
    );
    const ok = await w.run('files_create', { path: '/Projects/new.md', content: 'inside' }, ctx);
    assert.equal(ok.isError, false, text(ok));
  });

  it('checks both source and destination of copy and move', async () => {
    const ctx = scoped({ folders: ['Projects'] });
    const out = await w.run('files_copy', { source: 'Projects/plan.md', destination: 'educai-share/plan.md' }, ctx);
    assert.equal(out.isError, true);
    assert.match(text(out), /\/educai-share\/plan\.md is outside the folders this bot may use \(\/Projects\)/);
    const from = await w.run('files_move', { source: 'EducAI-worksheet.txt', destination: 'Projects/worksheet.txt' }, ctx);
    assert.match(text(from), /\/EducAI-worksheet\.txt is outside/);
    assert.equal(w.nc.dav.files.node('alice', 'educai-share/plan.md'), null);
  });

  it('filters listings and refuses reads outside, also by file id', async () => {
    const ctx = scoped({ folders: ['Projects'] });
    const home = json(await w.run('files_list', {}, ctx));
    assert.deepEqual(
      (home['items'] as Array<{ path: string }>).map((i) => i.path),
      ['/Projects'],
    );
    const other = await w.run('files_list', { path: 'educai-share' }, ctx);
    assert.match(text(other), /outside the folders/);
    const read = await w.run('files_read', { path: 'EducAI-worksheet.txt' }, ctx);
    assert.match(text(read), /outside the folders/);
    const all = json(await w.run('files_list', {}, w.ctx('alice')));
    const worksheet = (all['items'] as Array<{ path: string; fileId: string }>).find((i) => i.path === '/EducAI-worksheet.txt');
    assert.ok(worksheet);
    const byId = await w.run('files_read', { fileId: worksheet.fileId }, ctx);
    assert.equal(byId.isError, true);
    assert.match(text(byId), /outside the folders/);
  });

  it("reads a share's path from OCS before acting on it, and filters the share list", async () => {
    const created = await w.run('sharing_create_user_share', { path: 'educai-share/lesson.txt', user: 'bob', permissions: ['read'] }, w.ctx('alice'));
    assert.equal(created.isError, false, text(created));
    if (/NOT DONE YET/.test(text(created))) {
      const done = await w.provider.executeConfirmed(w.confirmations.stored(), issueFromConfirmedTalkAuthor('alice'));
      assert.equal(done.isError, false, text(done));
    }
    const shares = json(await w.run('sharing_list', {}, w.ctx('alice')))['shares'] as Array<{ id: string }>;
    const id = shares[0]?.id;
    assert.ok(id);
    const ctx = scoped({ folders: ['Projects'] });
    assert.equal(json(await w.run('sharing_list', {}, ctx))['count'] as number, 0);
    const del = await w.run('sharing_delete', { shareId: id }, ctx);
    assert.equal(del.isError, true);
    assert.match(text(del), /\/educai-share\/lesson\.txt is outside the folders/);
  });

  it('refuses another calendar and lists only scoped ones', async () => {
    const ctx = scoped({ calendars: ['ai'] });
    const list = json(await w.run('calendar_list', {}, ctx));
    assert.deepEqual(
      (list['calendars'] as Array<{ id: string }>).map((c) => c.id),
      ['ai'],
    );
    const r = await w.run(
      'calendar_create_event',
      { calendar: 'personal', title: 'x', start: '2027-03-01T09:00:00+00:00', end: '2027-03-01T10:00:00+00:00' },
      ctx,
    );
    assert.equal(r.isError, true);
    assert.match(text(r), /calendar "personal" is not one this bot may use/);
  });

  it("'never' refuses destructive actions, 'always' asks even for a plain create", async () => {
    const never = await w.run('files_delete', { path: 'Projects/plan.md' }, scoped({ folders: ['Projects'] }, 'never'));
    assert.equal(never.isError, true);
    assert.match(text(never), /forbid destructive actions/);
    const asked = w.confirmations.requests.length;
    const always = await w.run('files_mkdir', { path: 'Projects/sub' }, scoped({ folders: ['Projects'] }, 'always'));
    assert.equal(always.isError, false, text(always));
    assert.match(text(always), /NOT DONE YET/);
    assert.equal(w.confirmations.requests.length, asked + 1);
    const req = w.confirmations.requests.at(-1)!;
    assert.equal(req.ctx.user?.uid, 'alice', 'the invoker is asked');
    assert.deepEqual(req.action.execution, { mode: 'user', profileId: null, scope: { folders: ['Projects'] }, confirmation: 'always' });
  });
});
