// The built app page in real headless Chromium (Debian's, driven by playwright-core),
// inside a mimic of Nextcloud's embedded page, against the real ExApp and the fake Nextcloud.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { choose, ensureFrontendBuilt, launchChromium, openAs, screenshot, seriousViolations } from './browser.ts';
import { startMimicNextcloud, type MimicNextcloud } from './mimic-nextcloud.ts';

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
    nc = await startMimicNextcloud(h, {
      alice: { displayName: 'Alice', admin: false },
      admin: { displayName: 'admin', admin: true },
      bob: { displayName: 'Bob', admin: false, language: 'de' },
    });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await h?.close();
  });

  const open = (uid: string, colorScheme: 'light' | 'dark' = 'light'): Promise<{ context: BrowserContext; page: Page }> =>
    openAs(browser, nc, uid, { colorScheme, errors: consoleErrors });

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
      assert.ok(
        nc.proxied.filter((p) => p.path.startsWith('/api/')).every((p) => p.requesttoken === token),
        'every API call carries the request token',
      );
    } finally {
      await context.close();
    }
  });

  it('lets alice create a bot with tools and an onboarding question, shows the server’s field errors, and lists it in the catalogue', async () => {
    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'New bot' }).click();
      await page.getByLabel('Display name').fill('Math Tutor');
      await page.getByLabel('Mention (used as @mention in Talk)').fill('math tutor!');
      await page.getByLabel('Description').fill('Explains fractions step by step');
      await page.getByLabel('Instructions (system prompt)').fill('You are a patient math tutor.');

      // Tools, grouped by family, with labels and summaries from the tool metadata.
      const picker = page.locator('[data-test="tool-picker"]');
      await picker.getByRole('heading', { name: 'Files' }).waitFor();
      assert.match(await picker.locator('[data-tool="files_list"]').innerText(), /List files[\s\S]*List a folder in your files/);
      // A tool of a disabled provider still renders, greyed, with the reason, and cannot be chosen.
      const rag = picker.locator('[data-tool="rag_search_documents"]');
      assert.match(await rag.innerText(), /Document Search \(RAG\)[\s\S]*provider is disabled/);
      assert.equal(await rag.locator('input[type="checkbox"]').isDisabled(), true);
      await picker.locator('[data-tool="files_list"] input[type="checkbox"]').first().check({ force: true });
      await choose(page, picker.locator('[data-tool="files_list"]').getByLabel('Confirmation'), 'Always ask');

      // One onboarding question with two answers.
      const onboarding = page.locator('[data-test="onboarding-editor"]');
      await onboarding.getByText('Ask onboarding questions after the A/B choice').click();
      await page.getByLabel('Question 1', { exact: true }).fill('Which class do you teach?');
      await page.getByLabel('Answer A to question 1', { exact: true }).fill('Grade 7');
      await page.getByRole('button', { name: 'Add an answer to question 1' }).click();
      await page.getByLabel('Answer B to question 1', { exact: true }).fill('Grade 8');

      await page.getByRole('button', { name: 'Create bot' }).click();
      await page.getByText('Please correct the marked fields.').waitFor();
      const mention = page.getByLabel('Mention (used as @mention in Talk)');
      assert.equal(await mention.getAttribute('aria-invalid'), 'true');
      const describedBy = ((await mention.getAttribute('aria-describedby')) ?? '').split(/\s+/).filter(Boolean);
      const described = (await Promise.all(describedBy.map((id) => page.locator(`[id="${id}"]`).innerText()))).join(' ');
      assert.match(described, /letters|digits|mention|invalid/i, `the field's own message: ${described}`);
      assert.equal(await page.getByLabel('Display name').inputValue(), 'Math Tutor', 'the form keeps what was typed');
      assert.equal(await page.getByLabel('Answer B to question 1', { exact: true }).inputValue(), 'Grade 8');
      await screenshot(page, 'bot-editor.png', true);

      await mention.fill('mathtutor');
      await page.getByRole('button', { name: 'Create bot' }).click();
      await page.getByText('Math Tutor was saved.').waitFor();

      const catalog = page.locator('[data-test="catalog"]');
      await catalog.getByText('Math Tutor', { exact: true }).waitFor();
      assert.match(await catalog.innerText(), /@mathtutor[\s\S]*Explains fractions step by step[\s\S]*Your bot · 1 tool/);
      // Details of tools and knowledge, keyboard-reachable (<details>).
      await catalog.getByText('Details of Math Tutor').click();
      await catalog.getByText('List files').waitFor();
      assert.match(await catalog.innerText(), /No knowledge sources[\s\S]*Asks a few questions/);
      const mine = page.locator('[data-test="my-bots"]');
      assert.match(await mine.innerText(), /Math Tutor[\s\S]*Personal/);

      await page.getByLabel('Search bots').fill('no such bot');
      await page.getByText('No bot matches your search').waitFor();
      await page.getByLabel('Search bots').fill('fractions');
      await catalog.getByText('Math Tutor', { exact: true }).waitFor();
      await screenshot(page, 'bots.png', true);

      const stored = await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') });
      const bot = stored.json.bots.find((b: { mention: string }) => b.mention === 'mathtutor');
      assert.equal(bot.systemPrompt, 'You are a patient math tutor.');
      assert.deepEqual(bot.tools, [{ name: 'files_list', config: { confirmation: 'always' } }]);
      assert.deepEqual(
        bot.onboardingQuestions.questions.map((q: { text: string; answers: Array<{ text: string; next: string | null }> }) => [
          q.text,
          q.answers.map((a) => [a.text, a.next]),
        ]),
        [
          [
            'Which class do you teach?',
            [
              ['Grade 7', null],
              ['Grade 8', null],
            ],
          ],
        ],
      );
    } finally {
      await context.close();
    }
  });

  it('shows tools of a family turned off in the personal settings as "enable in personal settings", not selectable', async () => {
    const off = await h.fetch('/api/v1/me/settings', { method: 'PUT', headers: h.browserHeaders('alice'), body: { toolFamilies: { calendar: false } } });
    assert.equal(off.status, 200, off.text);
    const { context, page } = await open('alice');
    try {
      await page.getByRole('button', { name: 'New bot' }).click();
      const picker = page.locator('[data-test="tool-picker"]');
      await picker.getByText('Enable Calendar in your personal settings').waitFor();
      assert.equal(await picker.locator('[data-tool="calendar_list"] input[type="checkbox"]').isDisabled(), true);
      assert.equal(await picker.locator('[data-tool="files_list"] input[type="checkbox"]').isDisabled(), false);
    } finally {
      await context.close();
      await h.fetch('/api/v1/me/settings', { method: 'PUT', headers: h.browserHeaders('alice'), body: { toolFamilies: { calendar: true } } });
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

  it('lets alice share a bot with a group picked from the list; the admin approves it, then reviews her edit as a diff and approves that', async () => {
    const alice = await open('alice');
    try {
      await alice.page.getByRole('button', { name: 'New bot' }).click();
      await alice.page.getByLabel('Display name').fill('Quiz Master');
      await alice.page.getByLabel('Mention (used as @mention in Talk)').fill('quizmaster');
      await alice.page.getByLabel('Instructions (system prompt)').fill('Ask one question at a time.');
      await choose(alice.page, alice.page.getByLabel('Visibility'), 'Groups');
      // The searchable group picker (NcSelect) lists the groups from /api/v1/groups.
      const groupInput = alice.page.locator('#educai-audience-groups');
      await groupInput.click();
      await groupInput.pressSequentially('students');
      await alice.page.keyboard.press('Enter');
      await alice.page.keyboard.press('Escape');
      await alice.page.locator('[data-test="audience-groups"]').getByText('educai-students').waitFor();
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
      const item = admin.page.locator('[data-test="approvals"] [data-bot="quizmaster"]');
      await item.getByText('New bot by alice, for the groups educai-students').waitFor();
      assert.match(await item.innerText(), /Weekly quizzes for all classes/);
      assert.match(await item.locator('[data-test="config-diff"] [data-field="systemPrompt"]').innerText(), /Ask one question at a time\./);
      await admin.page.getByRole('button', { name: 'Approve Quiz Master' }).click();
      await admin.page.getByText('Quiz Master is approved.').waitFor();
      await admin.page.getByText('Nothing to review').waitFor();
    } finally {
      await admin.context.close();
    }

    // Alice edits the approved bot: the edit waits for review while the approved version serves.
    const again = await open('alice');
    try {
      await again.page.getByRole('button', { name: 'Edit Quiz Master' }).click();
      await again.page.getByLabel('Instructions (system prompt)').fill('Ask two questions at a time.');
      await again.page.locator('[data-tool="sharing_list"] input[type="checkbox"]').first().check({ force: true });
      await again.page.getByRole('button', { name: 'Save', exact: true }).click();
      await again.page.getByText('Quiz Master was saved.').waitFor();
      await again.page.locator('[data-test="my-bots"]').getByText('Waiting for review').waitFor();
    } finally {
      await again.context.close();
    }

    const reviewer = await open('admin');
    try {
      await reviewer.page.getByRole('link', { name: 'Approvals' }).click();
      const item = reviewer.page.locator('[data-test="approvals"] [data-bot="quizmaster"]');
      await item.getByText('Change to an approved bot by alice, for the groups educai-students').waitFor();
      const diff = item.locator('[data-test="config-diff"]');
      const prompt = diff.locator('[data-field="systemPrompt"]');
      assert.equal(await prompt.getAttribute('data-changed'), 'true');
      assert.match(await prompt.innerText(), /Ask one question at a time\.[\s\S]*Ask two questions at a time\./);
      assert.equal(await diff.locator('[data-field="tools"]').getAttribute('data-changed'), 'true');
      assert.match(await diff.locator('[data-field="tools"]').innerText(), /List shares/);
      assert.equal(await diff.locator('[data-field="displayName"]').getAttribute('data-changed'), 'false');
      await screenshot(reviewer.page, 'approvals.png', true);

      await reviewer.page.getByRole('button', { name: 'Test Quiz Master in Talk' }).click();
      await item.getByText('You can talk to the pending version').waitFor();
      await reviewer.page.getByRole('button', { name: 'Approve Quiz Master' }).click();
      await reviewer.page.getByText('Quiz Master is approved.').waitFor();
    } finally {
      await reviewer.context.close();
    }
    const stored = await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') });
    const quiz = stored.json.bots.find((b: { mention: string }) => b.mention === 'quizmaster');
    assert.equal(quiz.approvalStatus, 'approved');
    assert.equal(quiz.approvedBy, 'admin');
    assert.equal(quiz.systemPrompt, 'Ask two questions at a time.');
    assert.deepEqual(
      quiz.tools.map((t: { name: string }) => t.name),
      ['sharing_list'],
    );
  });

  it('lets a reviewer reject an edit with a reason, which the owner then sees', async () => {
    const edit = await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') });
    const quiz = edit.json.bots.find((b: { mention: string }) => b.mention === 'quizmaster');
    const put = await h.fetch(`/api/v1/bots/${quiz.id}`, { method: 'PUT', headers: h.browserHeaders('alice'), body: { description: 'Now with homework' } });
    assert.equal(put.status, 200, put.text);
    const admin = await open('admin');
    try {
      await admin.page.getByRole('link', { name: 'Approvals' }).click();
      await admin.page.getByRole('button', { name: 'Reject Quiz Master' }).click();
      const dialog = admin.page.getByRole('dialog');
      await dialog.getByLabel('Reason, shown to the owner').fill('Homework needs the teachers’ agreement first.');
      await dialog.getByRole('button', { name: 'Reject and return to the owner' }).click();
      await admin.page.getByText('Quiz Master was returned to its owner.').waitFor();
    } finally {
      await admin.context.close();
    }
    const alice = await open('alice');
    try {
      await alice.page.getByText('Returned by the reviewer: Homework needs the teachers’ agreement first.').waitFor();
    } finally {
      await alice.context.close();
    }
  });

  it('shows alice her activity: filters, a detail view, delete one and clear all', async () => {
    const traces = h.application.traces;
    const bots = (await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') })).json.bots as Array<{ id: string; mention: string }>;
    const math = bots.find((b) => b.mention === 'mathtutor')!;
    const quiz = bots.find((b) => b.mention === 'quizmaster')!;
    const run = async (bot: { id: string; mention: string }, text: string, status: 'success' | 'error') => {
      const id = await traces.startRun({
        uid: 'alice',
        botId: bot.id,
        botMention: bot.mention,
        roomToken: 'room1',
        messageId: null,
        source: 'talk',
        userText: text,
      });
      await traces.recordEvents(id, [
        { type: 'user_message', text },
        { type: 'tool_call', toolName: 'files_list', args: { path: '/' } },
        { type: 'tool_result', toolName: 'files_list', result: 'Documents/', durationMs: 120 },
        ...(status === 'error'
          ? [{ type: 'error' as const, stage: 'llm', message: 'The model did not answer' }]
          : [{ type: 'assistant_response' as const, text: 'Here you go' }]),
      ]);
      await traces.finishRun(id, status, status === 'error' ? 'llm: The model did not answer' : null);
    };
    await run(math, 'What is 1/2 + 1/4?', 'success');
    await run(math, 'Explain 3/4', 'error');
    await run(quiz, 'Quiz me', 'success');
    // Someone else's turn never shows.
    await traces.startRun({
      uid: 'bob',
      botId: quiz.id,
      botMention: quiz.mention,
      roomToken: 'room2',
      messageId: null,
      source: 'talk',
      userText: 'bob was here',
    });

    const { context, page } = await open('alice');
    try {
      await page.getByRole('link', { name: 'Activity' }).click();
      const table = page.locator('[data-test="activity"]');
      await table.waitFor();
      assert.equal(await table.locator('tbody tr').count(), 3);
      await page.getByText('3 turns').waitFor();
      await screenshot(page, 'activity.png', true);

      await choose(page, page.getByLabel('Status', { exact: true }), 'Failed');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByText('1 turn', { exact: true }).waitFor();
      assert.match(await table.locator('tbody').innerText(), /@mathtutor\s+Failed/);

      await choose(page, page.getByLabel('Status', { exact: true }), 'Any status');
      await choose(page, page.getByLabel('Bot', { exact: true }), 'Quiz Master (@quizmaster)');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByText('1 turn', { exact: true }).waitFor();
      assert.match(await table.locator('tbody').innerText(), /@quizmaster\s+Answered/);

      // A date range that ends before today finds nothing.
      await page.getByRole('button', { name: 'Reset' }).click();
      await page.getByText('3 turns').waitFor();
      await page.getByLabel('To', { exact: true }).fill('2020-01-31');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByText('No activity matches these filters').waitFor();
      await page.getByRole('button', { name: 'Reset' }).click();
      await page.getByText('3 turns').waitFor();

      // Detail of the failed turn, then delete it from there.
      const failedRow = table.locator('tbody tr', { hasText: 'Failed' });
      await failedRow.getByRole('button', { name: /^Details of the turn of/ }).click();
      const detail = page.locator('[data-test="trace-detail"]');
      await detail.waitFor();
      const text = await detail.innerText();
      assert.match(
        text,
        /Your message[\s\S]*Explain 3\/4[\s\S]*Tool call: files_list[\s\S]*Tool result: files_list[\s\S]*Error[\s\S]*The model did not answer/,
      );
      await screenshot(page, 'activity-detail.png');
      await detail.getByRole('button', { name: 'Delete this turn' }).click();
      await page.getByText('2 turns').waitFor();
      assert.equal(await table.locator('tbody tr', { hasText: 'Failed' }).count(), 0);

      await page.getByRole('button', { name: 'Clear all activity' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete everything' }).click();
      await page.getByText('No activity yet').waitFor();
    } finally {
      await context.close();
    }
    const left = await h.fetch('/api/v1/traces', { headers: h.browserHeaders('alice') });
    assert.equal(left.json.total, 0);
    const bobs = await h.fetch('/api/v1/traces', { headers: h.browserHeaders('bob') });
    assert.equal(bobs.json.total, 1, 'clearing alice’s activity leaves bob’s');
  });

  it('renders in the user’s language (German) from ex_app/l10n/de.json', async () => {
    const { context, page } = await open('bob');
    try {
      await page.getByRole('heading', { name: 'Meine Bots' }).waitFor();
      await page.getByRole('link', { name: 'Aktivität' }).waitFor();
      await page.getByRole('button', { name: 'Neuer Bot' }).click();
      await page.getByLabel('Anzeigename').waitFor();
      await page.locator('[data-test="tool-picker"]').getByRole('heading', { name: 'Dateien' }).waitFor();
      await screenshot(page, 'bot-editor-de.png', true);
      assert.ok(
        nc.proxied.some((p) => p.uid === 'bob' && p.path === '/l10n/de.json'),
        'the translations came through the proxy',
      );
    } finally {
      await context.close();
    }
  });

  for (const scheme of ['light', 'dark'] as const) {
    it(`has no serious accessibility violations on each page in the ${scheme} theme (axe-core, contrast included)`, async () => {
      const problems: string[] = [];
      const check = async (page: Page, name: string) => {
        // No hover or focus transition in progress (Nextcloud's --animation-slow is 300 ms).
        await page.mouse.move(0, 0);
        await page.waitForTimeout(400);
        const serious = await seriousViolations(page);
        if (serious.length) problems.push(`${name}: ${JSON.stringify(serious, null, 2)}`);
        await screenshot(page, `${name}-${scheme}.png`, name === 'approvals' && scheme === 'dark');
      };
      const alice = await open('alice', scheme);
      try {
        const { page } = alice;
        await page.getByRole('heading', { name: 'My bots' }).waitFor();
        await page
          .getByRole('button', { name: /^Speak in Talk with/ })
          .first()
          .waitFor();
        await page.locator('[data-test="catalog"] summary').first().click();
        await check(page, 'bots');
        await page.getByRole('button', { name: 'Edit Math Tutor' }).click();
        await page.locator('[data-test="tool-picker"]').getByRole('heading', { name: 'Files' }).waitFor();
        await page.locator('[data-test="onboarding-editor"]').getByLabel('Question 1', { exact: true }).waitFor();
        await check(page, 'bot-editor');
        await page.getByRole('link', { name: 'Activity' }).click();
        await page.locator('[data-test="activity"]').or(page.getByText('No activity yet')).first().waitFor();
        await check(page, 'activity');
      } finally {
        await alice.context.close();
      }
      // A pending edit, so that Approvals shows a diff.
      const mine = (await h.fetch('/api/v1/bots', { headers: h.browserHeaders('alice') })).json.bots as Array<{ id: string; mention: string }>;
      const quiz = mine.find((b) => b.mention === 'quizmaster')!;
      const edit = await h.fetch(`/api/v1/bots/${quiz.id}`, {
        method: 'PUT',
        headers: h.browserHeaders('alice'),
        body: { description: `Checked in the ${scheme} theme` },
      });
      assert.equal(edit.status, 200, edit.text);
      const admin = await open('admin', scheme);
      try {
        await admin.page.getByRole('link', { name: 'Approvals' }).click();
        await admin.page.getByRole('heading', { name: 'Approvals', exact: true }).waitFor();
        await admin.page.locator('[data-test="config-diff"]').first().waitFor();
        await check(admin.page, 'approvals');
      } finally {
        await admin.context.close();
      }
      assert.deepEqual(problems, []);
    });
  }

  it('logged no errors in the browser console', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
