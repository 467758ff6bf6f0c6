import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { INITIAL_STATE_KEY, TOP_MENU_NAME } from '../../lib/appapi/ui-registrar.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { readFixture } from '../helpers/fixtures.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

const repoRoot = new URL('../..', import.meta.url).pathname;

/** The `data` of a captured OCS answer in fixture 85. */
function capturedData(step: string): Record<string, unknown> {
  const fixture = readFixture('85-appapi-ui-top-menu-initial-state-script-style.json') as Record<string, { response: { body: string } }>;
  const body = JSON.parse(fixture[step]!.response.body) as { ocs: { data: Record<string, unknown> } };
  return body.ocs.data;
}

/** An ex_app folder of our own with a built bundle named by `hash` (the real build writes the same manifest). */
function exAppWith(dir: string, hash: string | null): void {
  rmSync(join(dir, 'js'), { recursive: true, force: true });
  rmSync(join(dir, 'css'), { recursive: true, force: true });
  mkdirSync(join(dir, 'js'), { recursive: true });
  mkdirSync(join(dir, 'css'), { recursive: true });
  if (hash === null) return;
  writeFileSync(join(dir, 'js', `educai-main-${hash}.js`), '(function(){window.educaiLoaded=true})();\n');
  writeFileSync(join(dir, 'css', `educai-style-${hash}.css`), '.educai{color:red}\n');
  writeFileSync(join(dir, 'js', 'educai-manifest.json'), JSON.stringify({ script: `js/educai-main-${hash}`, style: `css/educai-style-${hash}` }));
}

for (const dialect of DIALECTS) {
  describe(`app page registration through AppAPI on ${dialect}`, () => {
    let h: Harness;
    let exAppDir: string;
    const enable = (on: boolean) => h.fetch(`/enabled?enabled=${on ? 1 : 0}`, { method: 'PUT', headers: h.headers('') });

    before(async () => {
      exAppDir = mkdtempSync(join(tmpdir(), 'educai-exapp-'));
      cpSync(join(repoRoot, 'ex_app', 'img'), join(exAppDir, 'img'), { recursive: true });
      exAppWith(exAppDir, 'aaaaaaaaaaaa');
      h = await startHarness({ dialect, build: { exAppDir } });
    });
    after(async () => {
      await h.close();
      rmSync(exAppDir, { recursive: true, force: true });
    });

    it('registers the top menu, initial state, script and style on enable, in the captured shapes', async () => {
      const r = await enable(true);
      assert.deepEqual(r.json, { error: '' });

      const menu = h.nc.ui.topMenus.get(TOP_MENU_NAME) as Record<string, unknown>;
      const captured = capturedData('getTopMenu');
      assert.deepEqual(Object.keys(menu).sort(), Object.keys(captured).sort());
      assert.deepEqual({ ...menu, id: 0 }, { ...captured, id: 0, display_name: 'Talk AI', icon: 'img/app.svg', admin_required: 0 });

      const state = h.nc.ui.initialStates.get(`top_menu/${TOP_MENU_NAME}/${INITIAL_STATE_KEY}`) as Record<string, unknown>;
      assert.deepEqual(Object.keys(state).sort(), Object.keys(capturedData('getInitialState')).sort());
      assert.deepEqual(state['value'], { appId: 'educai', version: '0.1.0' });

      assert.deepEqual([...h.nc.ui.scripts.keys()], [`top_menu/${TOP_MENU_NAME}/js/educai-main-aaaaaaaaaaaa`]);
      assert.deepEqual([...h.nc.ui.styles.keys()], [`top_menu/${TOP_MENU_NAME}/css/educai-style-aaaaaaaaaaaa`]);
      assert.deepEqual(h.nc.headerViolations, []);
    });

    it('is idempotent, and a new build replaces the old bundle names', async () => {
      await enable(true);
      assert.equal(h.nc.ui.topMenus.size, 1);
      assert.equal(h.nc.ui.scripts.size, 1);

      exAppWith(exAppDir, 'bbbbbbbbbbbb');
      await enable(true);
      assert.deepEqual([...h.nc.ui.scripts.keys()], [`top_menu/${TOP_MENU_NAME}/js/educai-main-bbbbbbbbbbbb`]);
      assert.deepEqual([...h.nc.ui.styles.keys()], [`top_menu/${TOP_MENU_NAME}/css/educai-style-bbbbbbbbbbbb`]);
      assert.equal(h.nc.ui.initialStates.size, 1);
    });

    it('serves the hashed bundle to users only, cacheable for good, with its content type', async () => {
      const anonymous = await h.fetch('/js/educai-main-bbbbbbbbbbbb.js', { headers: h.headers('') });
      assert.equal(anonymous.status, 401);
      const js = await h.fetch('/js/educai-main-bbbbbbbbbbbb.js', { headers: h.browserHeaders('alice') });
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type') ?? '', /javascript/);
      assert.equal(js.headers.get('x-content-type-options'), 'nosniff');
      assert.match(js.headers.get('cache-control') ?? '', /immutable/);
      const css = await h.fetch('/css/educai-style-bbbbbbbbbbbb.css', { headers: h.browserHeaders('alice') });
      assert.match(css.headers.get('content-type') ?? '', /text\/css/);
      const icon = await h.fetch('/img/app.svg', { headers: h.browserHeaders('alice') });
      assert.equal(icon.status, 200);
      assert.doesNotMatch(icon.headers.get('cache-control') ?? '', /immutable/);
    });

    it('removes everything on disable, and a second disable is no error', async () => {
      assert.deepEqual((await enable(false)).json, { error: '' });
      for (const map of [h.nc.ui.topMenus, h.nc.ui.scripts, h.nc.ui.styles, h.nc.ui.initialStates]) assert.equal(map.size, 0);
      assert.deepEqual((await enable(false)).json, { error: '' });
      assert.equal(h.nc.talkBots.size, 0, 'the Talk bot registrar still ran');
    });

    it('without a frontend build registers the stable names', async () => {
      exAppWith(exAppDir, null);
      assert.deepEqual((await enable(true)).json, { error: '' });
      assert.deepEqual([...h.nc.ui.scripts.keys()], [`top_menu/${TOP_MENU_NAME}/js/educai-main`]);
      assert.deepEqual([...h.nc.ui.styles.keys()], [`top_menu/${TOP_MENU_NAME}/css/educai-style`]);
      await enable(false);
    });
  });
}
