// The built app page in real headless Chromium (Debian's, driven by playwright-core),
// inside a mimic of Nextcloud's embedded page, against the real ExApp and the fake Nextcloud.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { startMimicNextcloud, type MimicNextcloud } from './mimic-nextcloud.ts';

const repoRoot = new URL('../..', import.meta.url).pathname;
const artifacts = join(repoRoot, 'test-artifacts', 'ui');
/** `EDUCAI_SCREENSHOTS=docs` also refreshes the README's screenshots in docs/screenshots/. */
const screenshotDirs = [artifacts, ...(process.env['EDUCAI_SCREENSHOTS'] === 'docs' ? [join(repoRoot, 'docs', 'screenshots')] : [])];
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The frontend is built by `make test`; a run of this file alone builds it when it is missing. */
function ensureFrontendBuilt(): void {
  if (existsSync(join(repoRoot, 'ex_app', 'js', 'educai-manifest.json'))) return;
  execFileSync('npm', ['run', 'build:frontend'], { cwd: repoRoot, stdio: 'inherit' });
}

async function screenshot(page: Page, name: string): Promise<void> {
  for (const dir of screenshotDirs) {
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, name), fullPage: false });
  }
}

describe('the app page in Chromium', () => {
  let h: Harness;
  let nc: MimicNextcloud;
  let browser: Browser;
  const consoleErrors: string[] = [];

  before(async () => {
    ensureFrontendBuilt();
    h = await startHarness({ dialect: 'sqlite' });
    const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
    assert.deepEqual(enabled.json, { error: '' });
    nc = await startMimicNextcloud(h, { alice: { displayName: 'Alice', admin: false }, admin: { displayName: 'admin', admin: true } });
    // playwright starts Chromium with a fresh temporary --user-data-dir of its own on every launch.
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await h?.close();
  });

  async function open(uid: string): Promise<{ context: BrowserContext; page: Page }> {
    // bypassCSP only so that axe can be injected (trap 4); the app itself runs under the page's CSP in
    // the first test, which opens its own context without it.
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    await context.addCookies([{ name: 'mimic_user', value: uid, url: nc.url }]);
    const page = await context.newPage();
    page.on('console', (m) => {
      // A 400 answer is the server's field validation, which the page shows at the fields.
      if (m.type() === 'error' && !/status of 400/.test(m.text())) consoleErrors.push(`${uid}: ${m.text()}`);
    });
    page.on('pageerror', (e) => consoleErrors.push(`${uid}: ${e.message}`));
    await page.goto(nc.pageUrl);
    return { context, page };
  }

  it('renders for alice under Nextcloud’s CSP, through the proxy, with the request token', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addCookies([{ name: 'mimic_user', value: 'alice', url: nc.url }]);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    try {
      await page.goto(nc.pageUrl);
      await page.getByRole('heading', { name: 'Bots', exact: true }).waitFor();
      await page.getByRole('heading', { name: 'My bots' }).waitFor();
      assert.deepEqual(errors, []);
      const meCall = nc.proxied.find((p) => p.path === '/api/v1/me' && p.uid === 'alice');
      assert.ok(meCall, 'the page asked /api/v1/me through the proxy');
      const token = await page.locator('head').getAttribute('data-requesttoken');
      assert.ok(token);
      assert.ok(nc.proxied.filter((p) => p.path.startsWith('/api/')).every((p) => p.requesttoken === token), 'every API call carries the request token');
    } finally {
      await context.close();
    }
  });

  it('lets alice create a bot, shows the server’s field error for a bad mention, and lists the bot in the catalogue', async () => {
    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'New bot' }).click();
      await page.getByLabel('Display name').fill('Math Tutor');
      await page.getByLabel('Mention (used as @mention in Talk)').fill('math tutor!');
      await page.getByLabel('Description').fill('Explains fractions step by step');
      await page.getByLabel('Instructions (system prompt)').fill('You are a patient math tutor.');
      await page.getByRole('button', { name: 'Create bot' }).click();

      await page.getByText('Please correct the marked fields.').waitFor();
      await screenshot(page, 'bot-editor.png');
      const mention = page.getByLabel('Mention (used as @mention in Talk)');
      assert.equal(await mention.getAttribute('aria-invalid'), 'true');
      const describedBy = ((await mention.getAttribute('aria-describedby')) ?? '').split(/\s+/).filter(Boolean);
      const described = (await Promise.all(describedBy.map((id) => page.locator(`[id="${id}"]`).innerText()))).join(' ');
      assert.match(described, /letters|digits|mention|invalid/i, `the field's own message: ${described}`);
      assert.equal(await page.getByLabel('Display name').inputValue(), 'Math Tutor', 'the form keeps what was typed');

      await mention.fill('mathtutor');
      await page.getByRole('button', { name: 'Create bot' }).click();
      await page.getByText('Math Tutor was saved.').waitFor();

      const catalog = page.locator('[data-test="catalog"]');
      await catalog.getByText('Math Tutor').waitFor();
      assert.match(await catalog.innerText(), /@mathtutor[\s\S]*Explains fractions step by step[\s\S]*Your bot/);
      const mine = page.locator('[data-test="my-bots"]');
      assert.match(await mine.innerText(), /Math Tutor[\s\S]*Personal/);

      await page.getByLabel('Search bots').fill('no such bot');
      await page.getByText('No bot matches your search').waitFor();
      await page.getByLabel('Search bots').fill('fractions');
      await catalog.getByText('Math Tutor').waitFor();

      const stored = await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') });
      assert.deepEqual(
        stored.json.bots.map((b: { mention: string; displayName: string; systemPrompt: string }) => [b.mention, b.displayName, b.systemPrompt]),
        [['mathtutor', 'Math Tutor', 'You are a patient math tutor.']],
      );
      await screenshot(page, 'bots.png');
    } finally {
      await context.close();
    }
  });

  it('shows Administration to an admin and not to alice', async () => {
    const alice = await open('alice');
    const admin = await open('admin');
    try {
      await alice.page.getByRole('link', { name: 'Activity' }).waitFor();
      assert.equal(await alice.page.getByRole('link', { name: 'Administration' }).count(), 0);
      await admin.page.getByRole('link', { name: 'Administration' }).click();
      await admin.page.getByRole('heading', { name: 'Administration', exact: true }).waitFor();
    } finally {
      await alice.context.close();
      await admin.context.close();
    }
  });

  it('lets alice submit a bot for her group, and the admin approve it in Approvals', async () => {
    const alice = await open('alice');
    try {
      await alice.page.getByRole('button', { name: 'New bot' }).click();
      await alice.page.getByLabel('Display name').fill('Quiz Master');
      await alice.page.getByLabel('Mention (used as @mention in Talk)').fill('quizmaster');
      await alice.page.getByLabel('Visibility').selectOption('groups');
      await alice.page.getByLabel('Groups (comma-separated)').fill('educai-students');
      await alice.page.getByRole('button', { name: 'Create bot' }).click();
      await alice.page.getByText('Quiz Master was saved.').waitFor();
      const mine = alice.page.locator('[data-test="my-bots"]');
      await mine.getByText('Draft').waitFor();

      await alice.page.getByRole('button', { name: 'Submit Quiz Master for approval' }).click();
      const dialog = alice.page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Submit' }).click();
      // The server requires a reason; its message is shown at the field and nothing is lost.
      await dialog.locator('textarea[aria-invalid="true"]').waitFor();
      await dialog.getByLabel('Why should this bot be shared?').fill('Weekly quizzes for all classes');
      await dialog.getByRole('button', { name: 'Submit' }).click();
      await alice.page.getByText('Quiz Master is waiting for review.').waitFor();
      await mine.getByText('Waiting for review').waitFor();
    } finally {
      await alice.context.close();
    }

    const admin = await open('admin');
    try {
      await admin.page.getByRole('link', { name: 'Approvals' }).click();
      const list = admin.page.locator('[data-test="approvals"]');
      await list.getByText('Quiz Master', { exact: true }).waitFor();
      await screenshot(admin.page, 'approvals.png');
      await admin.page.getByRole('button', { name: 'Approve Quiz Master' }).click();
      await admin.page.getByText('Quiz Master is approved.').waitFor();
      await admin.page.getByText('Nothing to review').waitFor();
    } finally {
      await admin.context.close();
    }
    const stored = await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') });
    const quiz = stored.json.bots.find((b: { mention: string }) => b.mention === 'quizmaster');
    assert.equal(quiz.approvalStatus, 'approved');
    assert.equal(quiz.approvedBy, 'admin');
  });

  it('has no serious accessibility violations on the Bots view (axe-core)', async () => {
    const { context, page } = await open('alice');
    try {
      await page.getByRole('heading', { name: 'My bots' }).waitFor();
      await page.getByRole('button', { name: 'Speak in Talk' }).first().waitFor();
      await page.addScriptTag({ content: AXE_SOURCE });
      // A string, evaluated in the page: the backend's type check has no DOM library.
      const violations = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
        r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => JSON.stringify(n.target)).slice(0, 3) })))`)) as Array<{
        id: string;
        impact: string;
        targets: string[];
      }>;
      const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      assert.deepEqual(serious, [], JSON.stringify(violations, null, 2));
    } finally {
      await context.close();
    }
  });

  it('logged no errors in the browser console', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
