// What every browser test needs: the built bundle, Debian's Chromium, a signed-in page in the mimic of
// Nextcloud's embedded page, axe-core's serious findings, and screenshots.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import type { MimicNextcloud } from './mimic-nextcloud.ts';

export const repoRoot = new URL('../..', import.meta.url).pathname;
export const artifacts = join(repoRoot, 'test-artifacts', 'ui');
const docsScreenshots = join(repoRoot, 'docs', 'screenshots');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The frontend is built by `make test`; a run of one file alone builds it when it is missing. */
export function ensureFrontendBuilt(): void {
  if (existsSync(join(repoRoot, 'ex_app', 'js', 'educai-manifest.json'))) return;
  execFileSync('npm', ['run', 'build:frontend'], { cwd: repoRoot, stdio: 'inherit' });
}

/** Debian's Chromium; playwright gives every launch a fresh temporary --user-data-dir. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    // Without the background-networking flags Chromium keeps dialling out, which this network refuses.
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
}

export interface OpenOptions {
  colorScheme?: 'light' | 'dark';
  /** Appended to the page URL (`#admin/models`). */
  hash?: string;
  height?: number;
  /** Where console errors and page errors go (a test asserts it stays empty). */
  errors: string[];
}

/**
 * A page of the app as `uid`. bypassCSP only so that axe can be injected; a test that checks the app
 * under Nextcloud's CSP opens its own context without it.
 */
export async function openAs(browser: Browser, nc: MimicNextcloud, uid: string, options: OpenOptions): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    bypassCSP: true,
    viewport: { width: 1280, height: options.height ?? 800 },
    colorScheme: options.colorScheme ?? 'light',
  });
  await context.addCookies([{ name: 'mimic_user', value: uid, url: nc.url }]);
  const page = await context.newPage();
  page.on('console', (m) => {
    // A 400 answer is the server's field validation, which the page shows at the fields.
    if (m.type() === 'error' && !/status of 400/.test(m.text())) options.errors.push(`${uid}: ${m.text()}`);
  });
  page.on('pageerror', (e) => options.errors.push(`${uid}: ${e.message}`));
  await page.goto(nc.pageUrl + (options.hash ? `#${options.hash}` : ''));
  return { context, page };
}

export interface Violation {
  id: string;
  impact: string;
  targets: string[];
}

/** axe-core's serious and critical findings (contrast included) on the page as it is now. */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate('typeof axe !== "undefined"'))) await page.addScriptTag({ content: AXE_SOURCE });
  // A string, evaluated in the page: the backend's type check has no DOM library.
  const violations = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => JSON.stringify(n.target)).slice(0, 3) })))`)) as Violation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * Into test-artifacts/ui/ (gitignored); with `toDocs` and `EDUCAI_SCREENSHOTS=docs` also into
 * docs/screenshots/, which the README shows.
 */
export async function screenshot(page: Page, name: string, toDocs = false): Promise<void> {
  const dirs = [artifacts, ...(toDocs && process.env['EDUCAI_SCREENSHOTS'] === 'docs' ? [docsScreenshots] : [])];
  for (const dir of dirs) {
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, name), fullPage: false });
  }
}

/** The NcSelect (vue-select) around a combobox found by its label. */
function selectAround(combobox: Locator): Locator {
  return combobox.locator('xpath=ancestor::div[contains(concat(" ", normalize-space(@class), " "), " v-select ")][1]');
}

/** The listbox a combobox controls; NcSelect renders it in <body> while it is open. */
async function listboxOf(page: Page, combobox: Locator): Promise<Locator> {
  return page.locator(`[id="${(await combobox.getAttribute('aria-controls')) ?? ''}"]`);
}

/** Their texts as a user reads them: NcSelect splits a long option's text in two for its middle ellipsis. */
function textsOf(list: Locator): Promise<string[]> {
  return list.evaluateAll((els) => els.map((el) => (el.textContent ?? '').replace(/\s+/g, ' ').trim()));
}

/** Picks an option of an NcSelect as a user does: opens it and clicks the option by its text. */
export async function choose(page: Page, combobox: Locator, option: string): Promise<void> {
  await combobox.click();
  const options = (await listboxOf(page, combobox)).getByRole('option');
  await options.first().waitFor();
  const texts = await textsOf(options);
  const index = texts.indexOf(option);
  if (index < 0) throw new Error(`no option "${option}" among ${JSON.stringify(texts)}`);
  await options.nth(index).click();
}

/** The text of the option an NcSelect shows as chosen ('' when none). */
export async function chosen(combobox: Locator): Promise<string> {
  const selected = selectAround(combobox).locator('.vs__selected');
  return (await selected.count()) === 0 ? '' : (await textsOf(selected)).join(' ');
}

/** The texts of an NcSelect's options, read by opening it; closed again with Escape. */
export async function optionTexts(page: Page, combobox: Locator): Promise<string[]> {
  await combobox.click();
  const options = (await listboxOf(page, combobox)).getByRole('option');
  await options.first().waitFor();
  const texts = await textsOf(options);
  await page.keyboard.press('Escape');
  return texts;
}

/**
 * Controls that are not Nextcloud's on the page as it is now: any <select>, and checkboxes or radio buttons
 * outside NcCheckboxRadioSwitch (issue 20: the pages use @nextcloud/vue's controls throughout).
 */
export async function foreignControls(page: Page): Promise<string[]> {
  return (await page.evaluate(`[...document.querySelectorAll('select, input[type="checkbox"], input[type="radio"]')]
    .filter((el) => el.tagName === 'SELECT' || !el.closest('.checkbox-radio-switch'))
    .map((el) => el.outerHTML.slice(0, 160))`)) as string[];
}
