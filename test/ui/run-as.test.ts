// "Run as", scope and confirmation policy of a tool in the bot editor (issues 7 + 10), in real headless
// Chromium inside the mimic of Nextcloud's embedded page, against the real ExApp and the fake Nextcloud.
// An administrator creates an agent profile and grants it to alice's bot through the API; alice picks
// the profile for a files tool in the editor, limits it to a folder inside the grant and saves.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AGENT_ACCOUNT_USERS, DEFAULT_USERS } from '../fakes/nextcloud/users.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { artifacts, ensureFrontendBuilt, launchChromium, openAs, screenshot, seriousViolations } from './browser.ts';
import { startMimicNextcloud, type MimicNextcloud } from './mimic-nextcloud.ts';

describe('Run as, scope and confirmation in the bot editor', () => {
  let h: Harness;
  let nc: MimicNextcloud;
  let browser: Browser;
  let botId = '';
  let profileId = '';
  const consoleErrors: string[] = [];

  const api = async (uid: string, method: string, path: string, body?: unknown) => {
    const r = await h.fetch(path, { method, headers: h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
    return r;
  };

  before(async () => {
    ensureFrontendBuilt();
    h = await startHarness({ dialect: 'sqlite', users: [...DEFAULT_USERS, ...AGENT_ACCOUNT_USERS] });
    const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
    assert.deepEqual(enabled.json, { error: '' });
    nc = await startMimicNextcloud(h, { alice: { displayName: 'Alice', admin: false }, admin: { displayName: 'admin', admin: true } });
    browser = await launchChromium();

    // Alice's personal bot with a files tool; the admin's profile and its grant to that bot (seeded as other tests do).
    const created = await api('alice', 'POST', '/api/v1/bots', { mention: 'filer', displayName: 'Class Filer', systemPrompt: 'Files class material.', tools: [{ name: 'files_create', config: {} }] });
    assert.equal(created.status, 201, created.text);
    botId = created.json.bot.id;
    const profile = await api('admin', 'POST', '/api/v1/admin/agent-profiles', {
      label: 'Class material AI',
      accountUid: 'nuqloud-ai',
      scopeDescription: 'Writes into the shared class folder.',
      toolFamilies: ['files'],
      triggerGroups: ['educai-students'],
      confirmGroups: ['educai-students'],
      enabled: true,
    });
    assert.equal(profile.status, 200, profile.text);
    profileId = profile.json.profile.id;
    const grant = await api('admin', 'POST', `/api/v1/admin/agent-profiles/${profileId}/grants`, { botId, maxScope: { folders: ['Shared/AI'] } });
    assert.equal(grant.status, 200, grant.text);
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await h?.close();
  });

  const open = (uid: string, colorScheme: 'light' | 'dark' = 'light'): Promise<{ context: BrowserContext; page: Page }> =>
    openAs(browser, nc, uid, { colorScheme, height: 900, errors: consoleErrors });

  it('explains in a new bot that a service account can be chosen after the first save; scope and confirmation are there already', async () => {
    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'New bot' }).click();
      const tool = page.locator('[data-test="tool-picker"] [data-tool="files_create"]');
      await tool.locator('input[type="checkbox"]').first().check({ force: true });
      await tool.getByText('After the first save you can choose a service account here').waitFor();
      assert.equal(await tool.getByLabel('Run as').count(), 0);
      assert.equal(await tool.getByLabel('Folders it may use (one per line)').count(), 1);
      assert.equal(await tool.getByLabel('Confirmation').inputValue(), 'destructive', 'destructive only is the default');
    } finally {
      await context.close();
    }
  });

  it('lets alice run a files tool as the granted profile within a folder of the grant, and saves agentProfile, scope and confirmation', async () => {
    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'Edit Class Filer' }).click();
      const tool = page.locator('[data-test="tool-picker"] [data-tool="files_create"]');
      const runAs = tool.getByLabel('Run as');
      await runAs.waitFor();
      assert.deepEqual(await runAs.locator('option').allInnerTexts(), ['The person who writes (default)', 'Service account: Class material AI']);
      assert.equal(await runAs.inputValue(), '', 'the person who writes by default');
      await runAs.selectOption({ label: 'Service account: Class material AI' });
      await tool.getByText('acts as the Nextcloud account nuqloud-ai').waitFor();

      // The folder field starts at what the grant allows, and says so.
      const folders = tool.getByLabel('Folders it may use (one per line)');
      assert.equal(await folders.inputValue(), 'Shared/AI');
      await tool.getByText('Allowed by the administrator: these folders and the folders inside them: /Shared/AI').waitFor();

      // Keyboard: from Run as, Tab reaches the folders, which take typing; then the confirmation select.
      await runAs.focus();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement && document.activeElement.getAttribute("data-field")'), 'scope.folders');
      await page.keyboard.press('Control+A');
      await page.keyboard.type('Shared/AI/Class 7');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement && document.activeElement.getAttribute("data-field")'), 'confirmation');
      await tool.getByLabel('Confirmation').selectOption('always');
      await tool.getByText('The person who writes confirms every change the tool makes.').waitFor();

      assert.deepEqual(await seriousViolations(page), [], 'axe: the editor with Run as, scope and confirmation (light)');
      await screenshot(page, 'bot-editor-run-as.png', true);

      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Class Filer was saved.').waitFor();

      const stored = await api('alice', 'GET', `/api/v1/bots/${botId}`);
      assert.equal(stored.status, 200, stored.text);
      assert.deepEqual(stored.json.bot.tools, [{ name: 'files_create', config: { agentProfile: profileId, scope: { folders: ['Shared/AI/Class 7'] }, confirmation: 'always' } }]);

      // The catalogue's details name the service account by its label only.
      const catalog = page.locator('[data-test="catalog"]');
      await catalog.getByText('Details of Class Filer').click();
      await catalog.getByText('(acts as the service account “Class material AI”, not as you)').waitFor();
      const listed = await api('alice', 'GET', '/api/v1/catalog');
      const item = listed.json.bots.find((b: { id: string }) => b.id === botId);
      assert.deepEqual(item.runsAs, [{ tool: 'files_create', profileLabel: 'Class material AI' }]);
      assert.doesNotMatch(listed.text, /nuqloud-ai|Writes into the shared class folder|Shared\/AI/, 'no account, description or scope in the catalogue');
    } finally {
      await context.close();
    }
  });

  it('shows the server’s field error at the folders when a folder lies outside the grant, and keeps the input (dark mode, axe clean)', async () => {
    const { context, page } = await open('alice', 'dark');
    try {
      await page.getByRole('button', { name: 'Edit Class Filer' }).click();
      const tool = page.locator('[data-test="tool-picker"] [data-tool="files_create"]');
      const runAs = tool.getByLabel('Run as');
      await runAs.waitFor();
      await tool.getByText('acts as the Nextcloud account nuqloud-ai').waitFor();
      assert.equal(await runAs.inputValue(), profileId, 'the saved profile is shown');
      const folders = tool.getByLabel('Folders it may use (one per line)');
      assert.equal(await folders.inputValue(), 'Shared/AI/Class 7');
      assert.equal(await tool.getByLabel('Confirmation').inputValue(), 'always');

      await folders.fill('Private/Grades');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Please correct the marked fields.').waitFor();
      assert.equal(await folders.getAttribute('aria-invalid'), 'true');
      const helpId = (await folders.getAttribute('aria-describedby')) ?? '';
      assert.match(await page.locator(`[id="${helpId}"]`).innerText(), /Must lie inside the scope an administrator approved/);
      assert.equal(await folders.inputValue(), 'Private/Grades', 'the form keeps what was typed');
      // The message is at the field, not repeated in the tool's general error list.
      assert.equal(await tool.getByText('Must lie inside the scope an administrator approved').count(), 1);
      assert.deepEqual(await seriousViolations(page), [], 'axe: the editor with a field error (dark)');
      mkdirSync(artifacts, { recursive: true });
      await tool.screenshot({ path: join(artifacts, 'bot-editor-run-as-error-dark.png') });

      const stored = await api('alice', 'GET', `/api/v1/bots/${botId}`);
      assert.deepEqual(stored.json.bot.tools[0].config.scope, { folders: ['Shared/AI/Class 7'] }, 'nothing was saved');

      // Back to the person who writes: the profile goes, the folder limit stays, and it saves.
      await runAs.selectOption('');
      await folders.fill('Projects');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Class Filer was saved.').waitFor();
      const back = await api('alice', 'GET', `/api/v1/bots/${botId}`);
      assert.deepEqual(back.json.bot.tools, [{ name: 'files_create', config: { scope: { folders: ['Projects'] }, confirmation: 'always' } }]);
    } finally {
      await context.close();
    }
  });

  it('logged no errors in the browser', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
