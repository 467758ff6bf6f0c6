// What every browser test needs: the built bundle, Debian's Chromium, a signed-in page in the mimic of
// Nextcloud's embedded page, axe-core's serious findings, and screenshots.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
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
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
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
  const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: options.height ?? 800 }, colorScheme: options.colorScheme ?? 'light' });
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
