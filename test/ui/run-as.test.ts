// "Run as", scope and confirmation policy of a tool in the bot editor (issues 7 + 10), in real headless
// Chromium inside the mimic of Nextcloud's embedded page, against the real ExApp and the fake Nextcloud.
// An administrator creates an agent profile and grants it to alice's bot through the API; alice picks
// the profile for a files tool in the editor, limits it to a folder inside the grant and saves.
// Then a companion tool server (a real MCP server): the admin names it in a profile in the profile
// editor and grants it; alice runs its tool as that profile ("Run as" only: no scope, no confirmation).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AGENT_ACCOUNT_USERS, DEFAULT_USERS } from '../fakes/nextcloud/users.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { startTestMcpServer, text, type TestMcpServer } from '../mcp/mcp-test-server.ts';
import {
  artifacts,
  choose,
  chosen,
  ensureFrontendBuilt,
  foreignControls,
  launchChromium,
  openAs,
  optionTexts,
  screenshot,
  seriousViolations,
} from './browser.ts';
import { startMimicNextcloud, type MimicNextcloud } from './mimic-nextcloud.ts';

describe('Run as, scope and confirmation in the bot editor', () => {
  let h: Harness;
  let nc: MimicNextcloud;
  let browser: Browser;
  let mcp: TestMcpServer;
  let botId = '';
  let profileId = '';
  const consoleErrors: string[] = [];

  const api = async (uid: string, method: string, path: string, body?: unknown) => {
    const r = await h.fetch(path, { method, headers: h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
    return r;
  };

  before(async () => {
    ensureFrontendBuilt();
    mcp = await startTestMcpServer([{ name: 'lookup_word', description: 'Looks a word up in the dictionary', handler: () => text('a word') }]);
    h = await startHarness({ dialect: 'sqlite', users: [...DEFAULT_USERS, ...AGENT_ACCOUNT_USERS] });
    const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
    assert.deepEqual(enabled.json, { error: '' });
    nc = await startMimicNextcloud(h, { alice: { displayName: 'Alice', admin: false }, admin: { displayName: 'admin', admin: true } });
    browser = await launchChromium();

    // Alice's personal bot with a files tool; the admin's profile and its grant to that bot (seeded as other tests do).
    const created = await api('alice', 'POST', '/api/v1/bots', {
      mention: 'filer',
      displayName: 'Class Filer',
      systemPrompt: 'Files class material.',
      tools: [{ name: 'files_create', config: {} }],
    });
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
    await mcp?.close();
  });

  const open = (uid: string, colorScheme: 'light' | 'dark' = 'light', hash?: string): Promise<{ context: BrowserContext; page: Page }> =>
    openAs(browser, nc, uid, { colorScheme, height: 900, errors: consoleErrors, ...(hash ? { hash } : {}) });

  it('explains in a new bot that a service account can be chosen after the first save; scope and confirmation are there already', async () => {
    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'New bot' }).click();
      const tool = page.locator('[data-test="tool-picker"] [data-tool="files_create"]');
      await tool.locator('input[type="checkbox"]').first().check({ force: true });
      await tool.getByText('After the first save you can choose a service account here').waitFor();
      assert.equal(await tool.getByLabel('Run as').count(), 0);
      assert.equal(await tool.getByLabel('Folders it may use (one per line)').count(), 1);
      assert.equal(await chosen(tool.getByLabel('Confirmation')), 'Ask before destructive actions only (default)', 'destructive only is the default');
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
      assert.deepEqual(await optionTexts(page, runAs), ['The person who writes (default)', 'Service account: Class material AI']);
      assert.equal(await chosen(runAs), 'The person who writes (default)', 'the person who writes by default');
      await choose(page, runAs, 'Service account: Class material AI');
      await tool.getByText('acts as the Nextcloud account nuqloud-ai').waitFor();

      // The folder field starts at what the grant allows, and says so.
      const folders = tool.getByLabel('Folders it may use (one per line)');
      assert.equal(await folders.inputValue(), 'Shared/AI');
      await tool.getByText('Allowed by the administrator: these folders and the folders inside them: /Shared/AI').waitFor();

      // Keyboard: from Run as, Tab reaches the folders, which take typing; then the confirmation field.
      await runAs.focus();
      await page.keyboard.press('Tab');
      assert.equal(
        await page.evaluate('document.activeElement && document.activeElement.closest("[data-field]")?.getAttribute("data-field")'),
        'scope.folders',
      );
      await page.keyboard.press('Control+A');
      await page.keyboard.type('Shared/AI/Class 7');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement && document.activeElement.closest("[data-field]")?.getAttribute("data-field")'), 'confirmation');
      await choose(page, tool.getByLabel('Confirmation'), 'Always ask');
      await tool.getByText('The person who writes confirms every change the tool makes.').waitFor();

      assert.deepEqual(await seriousViolations(page), [], 'axe: the editor with Run as, scope and confirmation (light)');
      assert.deepEqual(await foreignControls(page), [], 'Run as and Confirmation are NcSelects, the tools NcCheckboxRadioSwitches');
      await screenshot(page, 'bot-editor-run-as.png', true);

      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Class Filer was saved.').waitFor();

      const stored = await api('alice', 'GET', `/api/v1/bots/${botId}`);
      assert.equal(stored.status, 200, stored.text);
      assert.deepEqual(stored.json.bot.tools, [
        { name: 'files_create', config: { agentProfile: profileId, scope: { folders: ['Shared/AI/Class 7'] }, confirmation: 'always' } },
      ]);

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
      assert.equal(await chosen(runAs), 'Service account: Class material AI', 'the saved profile is shown');
      const folders = tool.getByLabel('Folders it may use (one per line)');
      assert.equal(await folders.inputValue(), 'Shared/AI/Class 7');
      assert.equal(await chosen(tool.getByLabel('Confirmation')), 'Always ask');

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
      await choose(page, runAs, 'The person who writes (default)');
      await folders.fill('Projects');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Class Filer was saved.').waitFor();
      const back = await api('alice', 'GET', `/api/v1/bots/${botId}`);
      assert.deepEqual(back.json.bot.tools, [{ name: 'files_create', config: { scope: { folders: ['Projects'] }, confirmation: 'always' } }]);
    } finally {
      await context.close();
    }
  });

  it('lets an admin name a companion in a profile and grant it; alice runs its tool as that profile (Run as only) and saves', async () => {
    // The companion, registered and its tool approved by the admin (the tool servers page is tested in admin-pages).
    const registered = await api('admin', 'POST', '/api/v1/admin/mcp-servers', {
      name: 'Dictionary',
      url: mcp.url,
      kind: 'companion',
      agentCredential: 'dictionary-token',
    });
    assert.equal(registered.status, 201, registered.text);
    const serverId: string = registered.json.server.id;
    const review = await api('admin', 'GET', `/api/v1/admin/mcp-servers/${serverId}/review`);
    assert.equal(review.status, 200, review.text);
    const approved = await api('admin', 'POST', `/api/v1/admin/mcp-servers/${serverId}/approve`, {
      hash: review.json.review.hash,
      policies: { lookup_word: 'read' },
    });
    assert.equal(approved.status, 200, approved.text);
    const created = await api('alice', 'POST', '/api/v1/bots', {
      mention: 'words',
      displayName: 'Word Helper',
      systemPrompt: 'Explains words.',
      tools: [
        { name: 'lookup_word', config: {} },
        { name: 'files_list', config: {} },
      ],
    });
    assert.equal(created.status, 201, created.text);
    const wordBot: string = created.json.bot.id;

    // The admin creates the profile in the editor: the tool server is offered by name, stored by id.
    const admin = await open('admin', 'light', 'admin/profiles');
    let dictionaryProfile: string;
    try {
      await admin.page.getByRole('button', { name: 'Add agent profile' }).click();
      const editor = admin.page.locator('[data-test="profile-editor"]');
      await editor.getByLabel('Label', { exact: true }).fill('Dictionary AI');
      await editor.getByLabel('Account (Nextcloud user id)').fill('nuqloud-ai');
      const server = editor.getByRole('checkbox', { name: 'Tool server: Dictionary' });
      await server.waitFor({ state: 'attached' });
      await editor.getByText('Files', { exact: true }).click();
      await editor.getByText('Tool server: Dictionary', { exact: true }).click();
      assert.equal(await server.isChecked(), true);
      assert.equal(await editor.getByRole('checkbox', { name: 'Files', exact: true }).isChecked(), false);
      assert.deepEqual(await seriousViolations(admin.page), [], 'axe: the profile editor with a tool server');
      mkdirSync(artifacts, { recursive: true });
      await editor
        .locator('fieldset')
        .first()
        .screenshot({ path: join(artifacts, 'admin-profile-tool-server.png') });
      await editor.getByRole('button', { name: 'Create agent profile' }).click();
      const item = admin.page.locator('[data-test="agent-profiles"] li', { hasText: 'Dictionary AI' });
      await item.getByText(/Tools: Tool server: Dictionary ·/).waitFor();
      const listed = await api('admin', 'GET', '/api/v1/admin/agent-profiles');
      const stored = listed.json.profiles.find((p: { label: string }) => p.label === 'Dictionary AI');
      assert.deepEqual(stored.toolFamilies, [`mcp:${serverId}`]);
      dictionaryProfile = stored.id;

      // Granted to alice's bot without a scope limit (a tool server takes none).
      await admin.page.getByRole('button', { name: 'Grants of Dictionary AI' }).click();
      const grants = admin.page.locator(`[data-test="grants-${dictionaryProfile}"]`);
      await choose(admin.page, grants.getByLabel('Bot', { exact: true }), 'Word Helper (@words, owner alice)');
      await grants.getByText('Only these folders').click();
      await grants.getByRole('button', { name: 'Add grant' }).click();
      await grants
        .getByRole('row', { name: /Word Helper/ })
        .getByText('Folders: any · Calendars: any · Deck boards: any · Collectives: any')
        .waitFor();

      // Editing the profile shows the server checked, by its name.
      await item.getByRole('button', { name: 'Edit Dictionary AI' }).click();
      assert.equal(await admin.page.locator('[data-test="profile-editor"]').getByRole('checkbox', { name: 'Tool server: Dictionary' }).isChecked(), true);
      assert.deepEqual(await seriousViolations(admin.page), [], 'axe: profiles with a tool server');
    } finally {
      await admin.context.close();
    }

    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'Edit Word Helper' }).click();
      const picker = page.locator('[data-test="tool-picker"]');
      await picker.getByRole('heading', { name: 'Tool server: Dictionary' }).waitFor();
      const tool = picker.locator('[data-tool="lookup_word"]');
      const runAs = tool.getByLabel('Run as');
      await runAs.waitFor();
      assert.deepEqual(await optionTexts(page, runAs), ['The person who writes (default)', 'Service account: Dictionary AI']);
      assert.equal(await tool.getByLabel('Confirmation').count(), 0, 'a tool server asks as it declares and the admin set');
      assert.equal(await tool.locator('textarea').count(), 0, 'no scope for a tool server');
      // The profile covers the companion only: the files tool of the same bot does not offer it.
      assert.equal(await picker.locator('[data-tool="files_list"]').getByLabel('Run as').count(), 0);

      // Keyboard: from the tool's checkbox, Tab reaches Run as.
      await tool.locator('input[type="checkbox"]').first().focus();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement && document.activeElement.closest("[data-field]")?.getAttribute("data-field")'), 'agentProfile');
      await choose(page, runAs, 'Service account: Dictionary AI');
      await tool.getByText('acts as the Nextcloud account nuqloud-ai').waitFor();
      assert.deepEqual(await seriousViolations(page), [], 'axe: Run as for a tool server');
      await picker
        .locator('section', { has: page.getByRole('heading', { name: 'Tool server: Dictionary' }) })
        .screenshot({ path: join(artifacts, 'bot-editor-run-as-tool-server.png') });
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Word Helper was saved.').waitFor();

      const stored = await api('alice', 'GET', `/api/v1/bots/${wordBot}`);
      assert.equal(stored.status, 200, stored.text);
      const byName = Object.fromEntries(stored.json.bot.tools.map((t: { name: string; config: unknown }) => [t.name, t.config]));
      assert.deepEqual(byName, { lookup_word: { agentProfile: dictionaryProfile }, files_list: {} });
    } finally {
      await context.close();
    }
  });

  it('logged no errors in the browser', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
