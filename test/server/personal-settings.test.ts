// Personal settings on the app page (trap 1 of capture 86: Nextcloud 29 refuses a non-admin's save on a
// personal declarative form): the choice of tool families is written as the user through AppAPI's
// preferences, where the personal form reads it, and bot owners can only add tools of enabled families.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TOOL_FAMILIES_KEY } from '../../lib/appapi/settings-forms.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

for (const dialect of DIALECTS) {
  describe(`personal settings and tool families on ${dialect}`, () => {
    let h: Harness;
    const api = (uid: string, method: string, path: string, body?: unknown) => h.fetch(path, { method, headers: h.browserHeaders(uid), body });

    before(async () => {
      h = await startHarness({ dialect });
    });
    after(async () => {
      await h.close();
    });

    it('starts with every family enabled, like the form’s default', async () => {
      const r = await api('alice', 'GET', '/api/v1/me/settings');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { toolFamilies: { files: true, sharing: true, calendar: true, deck: true, collectives: true } });
      assert.equal(r.headers.get('cache-control'), 'no-store');
    });

    it('stores the choice as alice’s own preference in the form’s JSON shape, not bob’s', async () => {
      const r = await api('alice', 'PUT', '/api/v1/me/settings', { toolFamilies: { calendar: false, deck: false } });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.toolFamilies, { files: true, sharing: true, calendar: false, deck: false, collectives: true });
      assert.deepEqual(JSON.parse(h.nc.preferences.get('alice')!.get(TOOL_FAMILIES_KEY)!), {
        files: true,
        sharing: true,
        calendar: false,
        deck: false,
        collectives: true,
      });
      assert.equal(h.nc.preferences.get('bob')?.get(TOOL_FAMILIES_KEY), undefined);
      assert.equal((await api('bob', 'GET', '/api/v1/me/settings')).json.toolFamilies.calendar, true);
    });

    it('reads a value saved through Nextcloud’s personal form (AppAPI stores the multi-checkbox as JSON)', async () => {
      h.nc.preferences.set('bob', new Map([[TOOL_FAMILIES_KEY, '{"files":false,"sharing":true}']]));
      const r = await api('bob', 'GET', '/api/v1/me/settings');
      assert.deepEqual(r.json.toolFamilies, { files: false, sharing: true, calendar: true, deck: true, collectives: true });
      h.nc.preferences.delete('bob');
    });

    it('refuses bad input and keeps the stored choice', async () => {
      const r = await api('alice', 'PUT', '/api/v1/me/settings', { toolFamilies: { calendar: 'yes', weather: true } });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.details.fields['toolFamilies.calendar'], 'Must be true or false');
      assert.equal(r.json.error.details.fields['toolFamilies.weather'], 'Unknown field');
      assert.equal((await api('alice', 'GET', '/api/v1/me/settings')).json.toolFamilies.calendar, false);
      const csrf = await h.fetch('/api/v1/me/settings', {
        method: 'PUT',
        headers: h.browserHeaders('alice', { requesttoken: '' }),
        body: { toolFamilies: { calendar: true } },
      });
      assert.equal(csrf.status, 403, 'the CSRF guard applies');
    });

    it('tells the bot editor which families are enabled', async () => {
      const r = await api('alice', 'GET', '/api/v1/tools');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.enabledFamilies, ['files', 'sharing', 'collectives']);
      assert.ok(r.json.tools.some((t: { name: string; family: string | null }) => t.name === 'calendar_list' && t.family === 'calendar'));
    });

    it('refuses a calendar tool on alice’s new bot, accepts a files tool', async () => {
      const refused = await api('alice', 'POST', '/api/v1/bots', {
        displayName: 'Planner',
        mention: 'planner',
        tools: [{ name: 'calendar_list' }, { name: 'files_list' }],
      });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.json.error.details.fields.tools, /calendar/);
      assert.match(refused.json.error.details.fields.tools, /Personal settings/);
      assert.doesNotMatch(refused.json.error.details.fields.tools, /files_list/);
      assert.equal((await api('alice', 'GET', '/api/v1/bots')).json.bots.length, 0, 'nothing stored');

      const created = await api('alice', 'POST', '/api/v1/bots', { displayName: 'Planner', mention: 'planner', tools: [{ name: 'files_list' }] });
      assert.equal(created.status, 201, created.text);
    });

    it('refuses adding a disabled family on edit and through the tools API, and keeps tools assigned before', async () => {
      const bot = (await api('alice', 'GET', '/api/v1/bots')).json.bots[0];
      const viaEdit = await api('alice', 'PUT', `/api/v1/bots/${bot.id}`, { tools: [{ name: 'files_list' }, { name: 'calendar_search' }] });
      assert.equal(viaEdit.status, 400, viaEdit.text);
      assert.match(viaEdit.json.error.details.fields.tools, /calendar_search/);
      const viaTools = await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, { tools: [{ name: 'files_list' }, { name: 'calendar_list' }] });
      assert.equal(viaTools.status, 400, viaTools.text);
      assert.match(viaTools.json.error.details.tools, /calendar_list/, 'the tools API answers its fields flat');

      // Enabled again: the calendar tool is added; switched off afterwards, it stays assigned.
      await api('alice', 'PUT', '/api/v1/me/settings', { toolFamilies: { calendar: true } });
      assert.equal((await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, { tools: [{ name: 'files_list' }, { name: 'calendar_list' }] })).status, 200);
      await api('alice', 'PUT', '/api/v1/me/settings', { toolFamilies: { calendar: false } });
      const kept = await api('alice', 'PUT', `/api/v1/bots/${bot.id}`, {
        description: 'Plans the week',
        tools: [{ name: 'files_list' }, { name: 'calendar_list' }],
      });
      assert.equal(kept.status, 200, kept.text);
    });

    it('checks the owner’s choice when an admin edits alice’s bot', async () => {
      const bot = (await api('alice', 'GET', '/api/v1/bots')).json.bots[0];
      const r = await api('admin', 'PUT', `/api/v1/admin/bots/${bot.id}`, {
        tools: [{ name: 'files_list' }, { name: 'calendar_list' }, { name: 'calendar_search' }],
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error.details.fields.tools, /calendar_search/);
    });
  });
}
