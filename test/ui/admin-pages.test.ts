// The administration pages and the personal settings view in real headless Chromium (Debian's, driven by
// playwright-core), inside the mimic of Nextcloud's embedded page, against the real ExApp, the fake
// Nextcloud, a fake model provider and a real MCP server. Screenshots of every page, light and dark.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TOOL_FAMILIES_KEY } from '../../lib/appapi/settings-forms.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { createInvocationContext } from '../../lib/tools/tool-provider.ts';
import { AGENT_ACCOUNT_USERS, DEFAULT_USERS } from '../fakes/nextcloud/users.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { startTestMcpServer, text, type TestMcpServer } from '../mcp/mcp-test-server.ts';
import { choose, ensureFrontendBuilt, foreignControls, launchChromium, openAs, screenshot, seriousViolations } from './browser.ts';
import { startMimicNextcloud, type MimicNextcloud } from './mimic-nextcloud.ts';

const KEY = 'sk-admin-pages-secret-0123456789';

const SECTIONS = [
  { id: 'models', tab: 'Models', heading: 'Model endpoints and keys' },
  { id: 'ratelimits', tab: 'Rate limits', heading: 'Rate limits' },
  { id: 'policies', tab: 'Memory and policies', heading: 'Conversation memory, search keywords and network' },
  { id: 'tools', tab: 'Tool servers', heading: 'MCP servers and companion tool providers' },
  { id: 'knowledge', tab: 'Knowledge', heading: 'Knowledge' },
  { id: 'bots', tab: 'All bots', heading: 'All bots' },
  { id: 'profiles', tab: 'Agent profiles', heading: 'Agent profiles' },
  { id: 'audit', tab: 'Tool audit', heading: 'Tool audit' },
] as const;
/** A profile credential; write-only, so it must never reach the page or an API answer. */
const BRIDGE_SECRET = 'bridge-token-ui-5a4b3c2d1e0f9988';

describe('administration pages in Chromium', () => {
  let h: Harness;
  let nc: MimicNextcloud;
  let browser: Browser;
  let llm: FakeOpenAI;
  let mcp: TestMcpServer;
  const consoleErrors: string[] = [];

  before(async () => {
    ensureFrontendBuilt();
    llm = await FakeOpenAI.start({ models: ['tutor-large', 'tutor-small'] });
    mcp = await startTestMcpServer([{ name: 'lookup_word', description: 'Looks a word up in the dictionary', handler: () => text('a word') }]);
    h = await startHarness({ dialect: 'sqlite', users: [...DEFAULT_USERS, ...AGENT_ACCOUNT_USERS] });
    assert.deepEqual((await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') })).json, { error: '' });
    nc = await startMimicNextcloud(h, { alice: { displayName: 'Alice', admin: false }, admin: { displayName: 'admin', admin: true } });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await h?.close();
    await mcp?.close();
    await llm?.close();
  });

  const open = (uid: string, hash: string, colorScheme: 'light' | 'dark' = 'light'): Promise<{ context: BrowserContext; page: Page }> =>
    openAs(browser, nc, uid, { hash, colorScheme, height: 900, errors: consoleErrors });

  it('lets the admin set an endpoint and key, lists the endpoint’s models, and shows the key only masked after a reload', async () => {
    const { context, page } = await open('admin', 'admin/models');
    try {
      await page.getByRole('heading', { name: 'Model endpoints and keys' }).waitFor();
      await page.getByLabel('Primary endpoint URL (OpenAI-compatible)').fill(llm.url);
      await page.getByLabel('Primary API key').fill(KEY);
      await page.getByRole('button', { name: 'Save model settings' }).click();
      await page.getByText('Model settings saved.').waitFor();
      assert.equal(await page.getByLabel('Primary API key').inputValue(), '', 'the form drops the key after saving');

      await page.getByRole('button', { name: 'Load models from the endpoints' }).click();
      await page.locator('[data-test="endpoint-status"]').getByText('2 models').waitFor();
      await choose(page, page.getByLabel('Default model'), 'Primary · tutor-large');
      await page.getByRole('button', { name: 'Save model settings' }).click();
      await page.getByText('Model settings saved.').first().waitFor();

      await page.reload();
      await page.getByRole('heading', { name: 'Model endpoints and keys' }).waitFor();
      await page
        .getByText(/A key is stored \(\S+\)/)
        .first()
        .waitFor();
      assert.equal(await page.getByLabel('Primary API key').inputValue(), '');
      assert.equal(await page.getByLabel('Primary endpoint URL (OpenAI-compatible)').inputValue(), llm.url);
      assert.ok(!(await page.content()).includes(KEY), 'the key is nowhere in the page');
      const answers = await h.fetch('/api/v1/admin/settings', { headers: h.browserHeaders('admin') });
      assert.ok(!answers.text.includes(KEY));
      assert.equal(answers.json.settings.primaryKey.set, true);
      assert.equal(answers.json.settings.defaultModel, 'primary:tutor-large');
      assert.equal(await h.application.llmSettings.getKey('primary'), KEY);

      // A bad value: the server's message at its field, nothing lost.
      await page.getByLabel('Answer timeout (seconds)').fill('1');
      await page.getByRole('button', { name: 'Save model settings' }).click();
      await page.getByText(/please correct the marked fields/).waitFor();
      await page.getByText(/at least 5 seconds/).waitFor();
      await screenshot(page, 'admin-models-error.png');
    } finally {
      await context.close();
    }
  });

  it('creates an MCP server, tests it and approves its tools', async () => {
    const { context, page } = await open('admin', 'admin/tools');
    try {
      await page.getByText('No tool servers yet').waitFor();
      await page.getByRole('button', { name: 'Add tool server' }).click();
      await page.getByLabel('Name', { exact: true }).fill('Dictionary');
      await page.getByLabel('Server URL (Streamable HTTP)').fill(mcp.url);
      await page.getByLabel('Header name (e.g. Authorization)').fill('X-Api-Key');
      await page.getByLabel('Header value').fill('dictionary-secret');
      await page.getByRole('button', { name: 'Create tool server' }).click();
      const list = page.locator('[data-test="mcp-servers"]');
      await list.getByText('Dictionary').waitFor();

      await page.getByRole('button', { name: 'Test Dictionary' }).click();
      await list.getByText('Connected: 1 tool listed.').waitFor();
      assert.ok(
        mcp.requestHeaders.some((hd) => hd['x-api-key'] === 'dictionary-secret'),
        'the stored header reached the server',
      );

      await page.getByRole('button', { name: 'Review tools of Dictionary' }).click();
      assert.deepEqual(await foreignControls(page), [], 'the policy of a reviewed tool is an NcSelect');
      await choose(page, page.getByLabel('Policy for lookup_word'), 'Reads only');
      await page.getByRole('button', { name: 'Approve these tools' }).click();
      await list.getByText('1 approved tool').waitFor();
      await screenshot(page, 'admin-tools.png', true);

      await page.getByRole('button', { name: 'Disable Dictionary' }).click();
      await list.getByText('Disabled', { exact: true }).waitFor();
      assert.ok(!(await page.content()).includes('dictionary-secret'), 'header values are write-only');
    } finally {
      await context.close();
    }
  });

  it('shows the live rate-limit status and processes the queue now', async () => {
    const { context, page } = await open('admin', 'admin/ratelimits');
    try {
      const status = page.locator('[data-test="ratelimit-status"]');
      await status.getByText('Rate limits are off').waitFor();
      await page.getByRole('button', { name: 'Process queue now' }).click();
      await page.locator('[data-test="queue-result"]').getByText('Processed 0, 0 still waiting.').waitFor();

      await page.getByText('Enforce rate limits').click();
      await page.locator('fieldset', { hasText: 'Chat requests, per user' }).getByLabel('Per hour').fill('40');
      await page.getByRole('button', { name: 'Save rate limits' }).click();
      await page.getByText('Rate limits saved.').waitFor();
      await status.getByText('Rate limits are on').waitFor();
      const stored = await h.fetch('/api/v1/admin/ratelimit', { headers: h.browserHeaders('admin') });
      assert.equal(stored.json.settings.enabled, true);
      assert.equal(stored.json.settings.chat.user.hour, 40);
      // Nextcloud's admin settings form follows (app config, capture 88).
      await page.waitForFunction(() => true);
      for (let i = 0; i < 50 && h.nc.appConfig.get('educai_user_requests_per_hour') !== '40'; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(h.nc.appConfig.get('educai_user_requests_per_hour'), '40');
    } finally {
      await context.close();
    }
  });

  it('lets alice choose her tool families on the app page, stored as her AppAPI preference', async () => {
    const { context, page } = await open('alice', 'settings');
    try {
      await page.getByRole('heading', { name: 'Personal settings' }).waitFor();
      const calendar = page.getByRole('checkbox', { name: /Calendar/ });
      assert.equal(await calendar.isChecked(), true);
      await page.getByText('Calendar (read and plan events)').click();
      await page.getByRole('button', { name: 'Save personal settings' }).click();
      await page.getByText('Personal settings saved.').waitFor();
      assert.equal(JSON.parse(h.nc.preferences.get('alice')!.get(TOOL_FAMILIES_KEY)!).calendar, false);
      assert.deepEqual(await seriousViolations(page), []);
      await screenshot(page, 'personal-settings.png', true);
      await page.reload();
      await page.getByRole('heading', { name: 'Personal settings' }).waitFor();
      await page.getByText('Calendar (read and plan events)').waitFor();
      assert.equal(await page.getByRole('checkbox', { name: /Calendar/ }).isChecked(), false);
      assert.equal(await page.getByRole('checkbox', { name: /Files/ }).isChecked(), true);
    } finally {
      await context.close();
    }
  });

  it('manages agent profiles: the account refusal at its field, a grant with a folder scope, the audit trail (axe clean, light and dark)', async () => {
    // alice's bot, and one real tool call of it through the app's tool registry (user mode), for the audit.
    const created = await h.fetch('/api/v1/bots', {
      method: 'POST',
      headers: h.browserHeaders('alice'),
      body: { displayName: 'Filer', mention: 'filer', description: 'Files reports' },
    });
    assert.equal(created.status, 201, created.text);
    const botId: string = created.json.bot.id;
    const ctx = createInvocationContext({ user: issueFromConfirmedTalkAuthor('alice'), actorKind: 'user', botId, roomToken: 'room-audit', messageId: '7' });
    const loadout = await h.application.registry.loadout(ctx, [{ name: 'files_list', config: {} }]);
    await loadout.execute('files_list', { path: '' }, ctx);

    const { context, page } = await open('admin', 'admin/profiles');
    try {
      await page.getByRole('heading', { name: 'Agent profiles', exact: true }).waitFor();
      await page.getByText('No agent profiles yet').waitFor();
      await page.getByRole('button', { name: 'Add agent profile' }).click();
      await page.getByLabel('Label', { exact: true }).fill('NuQloud AI');
      const account = page.getByLabel('Account (Nextcloud user id)');
      await account.fill('root-ai');
      await page.getByLabel('Scope description (what the account may be used for)').fill('The shared AI folder');
      const trigger = page.locator('#educai-profile-trigger');
      await trigger.click();
      await trigger.pressSequentially('students');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Escape');
      await page.locator('[data-test="groups-educai-profile-trigger"]').getByText('educai-students').waitFor();
      await page.getByRole('button', { name: 'Add credential' }).click();
      await page.getByLabel('Credential name').fill('bridge-token');
      await page.getByLabel('Credential value').fill(BRIDGE_SECRET);
      await page.getByRole('button', { name: 'Create agent profile' }).click();

      // S13: the server's refusal, next to the account field (its description), nothing saved.
      await page.getByText(/please correct the marked fields/).waitFor();
      const describedBy = (await account.getAttribute('aria-describedby')) ?? '';
      assert.ok(describedBy !== '', 'the account field is described');
      const description = (await Promise.all(describedBy.split(/\s+/).map((id) => page.locator(`[id="${id}"]`).textContent()))).join(' ');
      assert.match(description, /the account root-ai is an administrator; agent profiles need an unprivileged account/);
      assert.equal((await h.fetch('/api/v1/admin/agent-profiles', { headers: h.browserHeaders('admin') })).json.profiles.length, 0);
      assert.deepEqual(await seriousViolations(page), [], 'the editor with a field error');

      await account.fill('nuqloud-ai');
      await page.getByRole('button', { name: 'Create agent profile' }).click();
      const list = page.locator('[data-test="agent-profiles"]');
      await list.getByText('NuQloud AI', { exact: true }).waitFor();
      await list.getByText(/Credentials: bridge-token \(set\)/).waitFor();
      await list.getByText(/Triggered by: educai-students/).waitFor();
      const stored = await h.fetch('/api/v1/admin/agent-profiles', { headers: h.browserHeaders('admin') });
      const profile = stored.json.profiles[0];
      assert.deepEqual(
        {
          accountUid: profile.accountUid,
          toolFamilies: profile.toolFamilies,
          triggerGroups: profile.triggerGroups,
          credentials: profile.credentials,
          enabled: profile.enabled,
        },
        {
          accountUid: 'nuqloud-ai',
          toolFamilies: ['files'],
          triggerGroups: ['educai-students'],
          credentials: [{ name: 'bridge-token', set: true }],
          enabled: true,
        },
      );
      assert.ok(!stored.text.includes(BRIDGE_SECRET) && !(await page.content()).includes(BRIDGE_SECRET), 'the credential is write-only');

      // A grant to alice's bot with a folder scope.
      await page.getByRole('button', { name: 'Grants of NuQloud AI' }).click();
      const grants = page.locator(`[data-test="grants-${profile.id}"]`);
      await grants.getByText('No bot may use this profile yet.').waitFor();
      await choose(page, grants.getByLabel('Bot', { exact: true }), 'Filer (@filer, owner alice)');
      await grants.getByLabel('Folder paths (e.g. Shared/AI)').fill('Shared/AI');
      await grants.getByRole('button', { name: 'Add grant' }).click();
      await grants
        .getByRole('row', { name: /Bot Filer/ })
        .getByText('Folders: Shared/AI · Calendars: any · Deck boards: any · Collectives: any')
        .waitFor();
      const granted = await h.fetch(`/api/v1/admin/agent-profiles/${profile.id}/grants`, { headers: h.browserHeaders('admin') });
      assert.deepEqual(
        granted.json.grants.map((g: { botId: string; maxScope: unknown }) => [g.botId, g.maxScope]),
        [[botId, { folders: ['Shared/AI'] }]],
      );

      // Disabling and enabling keeps the stored credential.
      await page.getByRole('button', { name: 'Disable NuQloud AI' }).click();
      await list.getByText('Disabled', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Enable NuQloud AI' }).click();
      await list.getByText('Enabled', { exact: true }).waitFor();
      assert.deepEqual((await h.fetch(`/api/v1/admin/agent-profiles/${profile.id}`, { headers: h.browserHeaders('admin') })).json.profile.credentials, [
        { name: 'bridge-token', set: true },
      ]);
      assert.deepEqual(await seriousViolations(page), []);
      // No toasts over the screenshot (they also fade out by themselves).
      const closers = page.locator('.educai-toast__close');
      while ((await closers.count()) > 0)
        await closers
          .first()
          .click({ timeout: 2000 })
          .catch(() => undefined);
      await screenshot(page, 'admin-agent-profiles.png', true);

      // The audit trail: the tool call, filters, retention.
      await page.getByRole('link', { name: 'Tool audit', exact: true }).click();
      const table = page.locator('[data-test="audit-table"]');
      const row = table.getByRole('row', { name: /files_list/ });
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /Filer.*User.*alice.*alice.*room-audit/s);
      await choose(page, page.getByLabel('Mode', { exact: true }), 'Agent (service account)');
      await page.getByRole('button', { name: 'Show calls' }).click();
      await page.getByText('No recorded tool call matches these filters.').waitFor();
      await choose(page, page.getByLabel('Mode', { exact: true }), 'User');
      await page.getByLabel('User (triggered by or ran as)').fill('alice');
      await page.getByRole('button', { name: 'Show calls' }).click();
      await row.waitFor();
      assert.deepEqual(await seriousViolations(page), []);
      await page.getByLabel('Keep tool calls for (days)').fill('30');
      await page.getByRole('button', { name: 'Save retention' }).click();
      await page.getByText('Retention saved.').waitFor();
      assert.equal((await h.fetch('/api/v1/admin/audit/settings', { headers: h.browserHeaders('admin') })).json.retentionDays, 30);
    } finally {
      await context.close();
    }

    // The same pages in dark mode, with the grants open.
    const dark = await open('admin', 'admin/profiles', 'dark');
    try {
      await dark.page.getByRole('button', { name: 'Grants of NuQloud AI' }).click();
      await dark.page.getByRole('row', { name: /Bot Filer/ }).waitFor();
      assert.deepEqual(await seriousViolations(dark.page), [], 'profiles (dark)');
      await screenshot(dark.page, 'admin-agent-profiles-dark.png');
      await dark.page.getByRole('link', { name: 'Tool audit', exact: true }).click();
      await dark.page
        .locator('[data-test="audit-table"]')
        .getByRole('row', { name: /files_list/ })
        .waitFor();
      assert.deepEqual(await seriousViolations(dark.page), [], 'audit (dark)');
    } finally {
      await dark.context.close();
    }

    // Withdraw the grant, then delete the profile (after a confirmation).
    const last = await open('admin', 'admin/profiles');
    try {
      await last.page.getByRole('button', { name: 'Grants of NuQloud AI' }).click();
      await last.page.getByRole('button', { name: 'Withdraw the grant for Bot Filer' }).click();
      await last.page.getByText('No bot may use this profile yet.').waitFor();
      await last.page.getByRole('button', { name: 'Delete NuQloud AI' }).click();
      await last.page.getByRole('dialog').getByRole('button', { name: 'Delete agent profile' }).click();
      await last.page.getByText('No agent profiles yet').waitFor();
      assert.deepEqual((await h.fetch('/api/v1/admin/agent-profiles', { headers: h.browserHeaders('admin') })).json.profiles, []);
    } finally {
      await last.context.close();
    }
  });

  it('has no serious accessibility violations on any administration page, and screenshots each in light and dark', async () => {
    // Something to list on the bots page.
    await h.fetch('/api/v1/bots', {
      method: 'POST',
      headers: h.browserHeaders('alice'),
      body: { displayName: 'Math Tutor', mention: 'mathtutor', description: 'Fractions' },
    });
    for (const scheme of ['light', 'dark'] as const) {
      const { context, page } = await open('admin', 'admin/models', scheme);
      try {
        for (const s of SECTIONS) {
          await page.getByRole('link', { name: s.tab, exact: true }).click();
          await page.getByRole('heading', { name: s.heading, exact: true }).waitFor();
          await page
            .locator('.educai-admin-section .loading-icon, .educai-admin-section [role="img"][aria-label^="Loading"]')
            .first()
            .waitFor({ state: 'detached', timeout: 5000 })
            .catch(() => undefined);
          if (s.id === 'bots') await page.locator('[data-test="all-bots"]').getByText('Math Tutor').waitFor();
          if (scheme === 'light') assert.deepEqual(await seriousViolations(page), [], `${s.id}: ${JSON.stringify(await seriousViolations(page), null, 2)}`);
          await screenshot(page, `admin-${s.id}-${scheme}.png`, s.id === 'models' || (s.id === 'ratelimits' && scheme === 'dark'));
        }
        if (scheme === 'dark') {
          const bg = await page.evaluate('getComputedStyle(document.querySelector(".educai-fieldset, .educai-table")).color');
          assert.notEqual(bg, 'rgb(34, 34, 34)', 'dark theme variables apply');
        }
      } finally {
        await context.close();
      }
    }
  });

  it('offers Personal settings to everyone and Administration only to admins', async () => {
    const { context, page } = await open('alice', 'admin/models');
    try {
      await page.getByRole('link', { name: 'Personal settings' }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Administration' }).count(), 0);
      assert.equal(await page.getByRole('heading', { name: 'Model endpoints and keys' }).count(), 0);
    } finally {
      await context.close();
    }
  });

  it('uses Nextcloud’s controls only: no <select>, every checkbox and radio button inside NcCheckboxRadioSwitch (bot editor, personal settings, every administration page)', async () => {
    const found: Record<string, string[]> = {};
    const created = await h.fetch('/api/v1/bots', {
      method: 'POST',
      headers: h.browserHeaders('alice'),
      body: {
        displayName: 'Control Check',
        mention: 'controlcheck',
        knowledgeEnabled: true,
        tools: [
          { name: 'files_list', config: {} },
          { name: 'wiki_search', config: {} },
        ],
      },
    });
    assert.equal(created.status, 201, created.text);
    const alice = await open('alice', '');
    try {
      const { page } = alice;
      await page.getByRole('button', { name: 'Edit Control Check' }).click();
      // Every kind of field the editor has: model, visibility, confirmation, the wiki's place, onboarding answers, knowledge sources.
      await page.locator('[data-tool="files_list"]').getByLabel('Confirmation').waitFor();
      await page.locator('[data-test="wiki-options"]').getByLabel('Where the wiki lives').waitFor();
      await page.locator('[data-test="knowledge-sources"]').getByLabel('Kind of source').waitFor();
      await page.locator('[data-test="onboarding-editor"]').getByText('Ask onboarding questions after the A/B choice').click();
      await page.getByLabel('After answer A to question 1').waitFor();
      await choose(page, page.getByLabel('Visibility'), 'Everyone');
      await page.getByText('Guests and federated users may use it too').waitFor();
      found['bot editor'] = await foreignControls(page);
      assert.deepEqual(await seriousViolations(page), [], 'axe: the bot editor with every field');
      await page.getByRole('link', { name: 'Personal settings' }).click();
      await page.getByRole('heading', { name: 'Personal settings' }).waitFor();
      await page.getByRole('checkbox', { name: /Calendar/ }).waitFor({ state: 'attached' });
      found['personal settings'] = await foreignControls(page);
      await page.getByRole('link', { name: 'Activity' }).click();
      await page.getByLabel('Status', { exact: true }).waitFor();
      found['activity'] = await foreignControls(page);
    } finally {
      await alice.context.close();
    }
    const admin = await open('admin', 'admin/models');
    try {
      const { page } = admin;
      for (const s of SECTIONS) {
        await page.getByRole('link', { name: s.tab, exact: true }).click();
        await page.getByRole('heading', { name: s.heading, exact: true }).waitFor();
        await page
          .locator('.educai-admin-section .loading-icon, .educai-admin-section [role="img"][aria-label^="Loading"]')
          .first()
          .waitFor({ state: 'detached', timeout: 5000 })
          .catch(() => undefined);
        if (s.id === 'tools') {
          await page.getByRole('button', { name: 'Add tool server' }).click();
          await page.getByLabel('Kind', { exact: true }).waitFor();
        }
        if (s.id === 'profiles') {
          await page.getByRole('button', { name: 'Add agent profile' }).click();
          await page.locator('[data-test="profile-editor"]').getByRole('checkbox').first().waitFor({ state: 'attached' });
        }
        if (s.id === 'audit') await page.getByLabel('Outcome', { exact: true }).waitFor();
        found[`admin ${s.id}`] = await foreignControls(page);
      }
    } finally {
      await admin.context.close();
    }
    assert.deepEqual(
      Object.entries(found).filter(([, list]) => list.length > 0),
      [],
    );
    assert.equal(Object.keys(found).length, 3 + SECTIONS.length, 'every page was looked at');
  });

  it('logged no errors in the browser console', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
