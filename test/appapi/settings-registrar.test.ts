// The "Talk AI" sections in Nextcloud's settings (AppAPI declarative settings, capture 86): the forms
// are checked against the shape core accepts before registration (trap 2), registered on enable and
// removed on disable, and the admin form's values reach the app's settings (app config, capture 88).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_FORM_SEEN_KEY } from '../../lib/appapi/admin-form-sync.ts';
import { settingsRegistrar } from '../../lib/appapi/settings-registrar.ts';
import {
  ADMIN_FIELDS,
  ADMIN_FORM_ID,
  adminForm,
  assertValidForm,
  InvalidSettingsFormError,
  PERSONAL_FORM_ID,
  personalForm,
  TOOL_FAMILIES_KEY,
  type DeclarativeForm,
} from '../../lib/appapi/settings-forms.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { loadRateLimitSettings } from '../../lib/ratelimit/rate-limit-settings.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { readFixture } from '../helpers/fixtures.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

type Step = { request: { body: string | null }; response: { body: string } };
const fixture = readFixture('86-appapi-declarative-settings.json') as Record<string, Step>;
const sentScheme = (step: string) => (JSON.parse(fixture[step]!.request.body!) as { formScheme: Record<string, unknown> }).formScheme;
const storedForm = (step: string) => (JSON.parse(fixture[step]!.response.body) as { ocs: { data: Record<string, unknown> } }).ocs.data;

describe('declarative settings forms (capture 86)', () => {
  it('accepts the forms core rendered in the capture, and refuses the one that broke every settings page', () => {
    assertValidForm(sentScheme('registerAdminForm'));
    assertValidForm(sentScheme('registerPersonalForm'));
    const broken = sentScheme('registerFormWithoutSectionType');
    assert.equal(JSON.parse(fixture['aliceGetsFormsWhileBrokenFormRegistered']!.response.body).ocs.meta.statuscode, 500);
    assert.throws(
      () => assertValidForm(broken),
      (e: unknown) => e instanceof InvalidSettingsFormError && /section_type/.test(e.message),
    );
  });

  it('refuses the other shapes core rejects', () => {
    const base = (): Record<string, unknown> => structuredClone(sentScheme('registerPersonalForm'));
    const cases: Array<[string, (f: Record<string, unknown>) => void, RegExp]> = [
      ['bad section type', (f) => (f['section_type'] = 'global'), /section_type/],
      ['no section id', (f) => delete f['section_id'], /section_id/],
      ['no title', (f) => delete f['title'], /title/],
      ['internal storage', (f) => (f['storage_type'] = 'internal'), /storage_type/],
      ['fields not a list', (f) => (f['fields'] = {}), /fields/],
      ['field without type', (f) => delete (f['fields'] as Array<Record<string, unknown>>)[0]!['type'], /fields\.0\.type/],
      ['unknown field type', (f) => ((f['fields'] as Array<Record<string, unknown>>)[0]!['type'] = 'date'), /fields\.0\.type/],
      ['radio without options', (f) => delete (f['fields'] as Array<Record<string, unknown>>)[0]!['options'], /options/],
      ['sensitive field (unreadable by us)', (f) => ((f['fields'] as Array<Record<string, unknown>>)[2]!['sensitive'] = true), /sensitive/],
      ['duplicate field ids', (f) => ((f['fields'] as Array<Record<string, unknown>>)[1]!['id'] = 'educai_language'), /unique/],
    ];
    for (const [what, mutate, pattern] of cases) {
      const form = base();
      mutate(form);
      assert.throws(() => assertValidForm(form), pattern, what);
    }
  });

  it('builds our forms in the captured shapes, with a link to the full administration page', () => {
    for (const [ours, captured] of [
      [adminForm('https://cloud.example/index.php'), sentScheme('registerAdminForm')],
      [personalForm(), sentScheme('registerPersonalForm')],
    ] as const) {
      assertValidForm(ours);
      assert.deepEqual(
        Object.keys(ours).filter((k) => !(k in captured)),
        [],
        'no form key the capture does not show',
      );
      const capturedFieldKeys = new Set(
        Object.values(sentScheme('registerAdminForm')['fields'] as object[])
          .concat(sentScheme('registerPersonalForm')['fields'] as object[])
          .flatMap((f) => Object.keys(f)),
      );
      for (const f of ours.fields)
        assert.deepEqual(
          Object.keys(f).filter((k) => !capturedFieldKeys.has(k)),
          [],
          `field ${f.id}`,
        );
    }
    assert.equal(adminForm('https://cloud.example/index.php').doc_url, 'https://cloud.example/index.php/apps/app_api/embedded/educai/educai-main#admin');
    assert.equal(adminForm('https://cloud.example/').section_type, 'admin');
    const families = personalForm().fields.find((f) => f.id === TOOL_FAMILIES_KEY)!;
    assert.equal(families.type, 'multi-checkbox');
    assert.deepEqual(families.default, { files: true, sharing: true, calendar: true, deck: true, collectives: true });
  });
});

for (const dialect of DIALECTS) {
  describe(`settings forms through AppAPI on ${dialect}`, () => {
    let h: Harness;
    const enable = (on: boolean) => h.fetch(`/enabled?enabled=${on ? 1 : 0}`, { method: 'PUT', headers: h.headers('') });
    const config = (key: string) => h.nc.appConfig.get(key);

    before(async () => {
      h = await startHarness({ dialect });
    });
    after(async () => {
      await h.close();
    });

    it('registers both forms on enable, stored as AppAPI stores them, and writes the current values for the admin form', async () => {
      assert.deepEqual((await enable(true)).json, { error: '' });
      assert.deepEqual([...h.nc.ui.settingsForms.keys()].sort(), [ADMIN_FORM_ID, PERSONAL_FORM_ID]);
      const stored = h.nc.ui.settingsForms.get(ADMIN_FORM_ID) as Record<string, unknown>;
      assert.deepEqual(Object.keys(stored).sort(), Object.keys(storedForm('getAdminForm')).sort());
      assert.equal(stored['storage_type'], 'external');
      assert.equal((h.nc.ui.settingsForms.get(PERSONAL_FORM_ID) as { section_type: string }).section_type, 'personal');
      // Nextcloud's form shows what the app uses (the defaults here).
      await waitFor(() => config(ADMIN_FIELDS.memoryTokens) === '8000', 'admin form values written');
      assert.equal(config(ADMIN_FIELDS.defaultModel), '');
      assert.equal(config(ADMIN_FIELDS.userRequestsPerHour), '0');
      assert.deepEqual(h.nc.headerViolations, []);
    });

    it('applies what the admin saved in Nextcloud’s form, and refuses a value the app cannot use', async () => {
      // AppAPI stores an admin form's values as the ExApp's app config, as strings (capture 88).
      h.nc.appConfig.set(ADMIN_FIELDS.defaultModel, 'gpt-4o-mini');
      h.nc.appConfig.set(ADMIN_FIELDS.memoryTokens, '12000');
      h.nc.appConfig.set(ADMIN_FIELDS.userRequestsPerHour, '25');
      await enable(true);
      const llm = await h.application.llmSettings.get();
      assert.equal(llm.defaultModel, 'gpt-4o-mini');
      assert.equal(llm.conversationMemoryTokens, 12000);
      assert.equal((await loadRateLimitSettings(h.application.settings)).chat.user.hour, 25);

      h.nc.appConfig.set(ADMIN_FIELDS.memoryTokens, '12');
      await enable(true);
      assert.equal((await h.application.llmSettings.get()).conversationMemoryTokens, 12000, 'below the minimum: not applied');
      assert.equal(config(ADMIN_FIELDS.memoryTokens), '12000', 'the form shows the value in use again');
    });

    it('writes a change made on the app page back to Nextcloud’s form', async () => {
      const put = await h.fetch('/api/v1/admin/settings', { method: 'PUT', headers: h.browserHeaders('admin'), body: { conversationMemoryTokens: 16000 } });
      assert.equal(put.status, 200, put.text);
      await waitFor(() => config(ADMIN_FIELDS.memoryTokens) === '16000', 'the form follows the app page');
      // The sync records what it wrote right after writing it.
      await waitFor(
        async () => (await h.application.settings.get<Record<string, string>>(ADMIN_FORM_SEEN_KEY))?.[ADMIN_FIELDS.memoryTokens] === '16000',
        'the written value to be recorded as seen',
      );
      // Unchanged in Nextcloud since: the next reconciliation keeps the app page's value.
      await enable(true);
      assert.equal((await h.application.llmSettings.get()).conversationMemoryTokens, 16000);
    });

    it('removes both forms on disable, and a second disable is fine', async () => {
      assert.deepEqual((await enable(false)).json, { error: '' });
      assert.equal(h.nc.ui.settingsForms.size, 0);
      assert.deepEqual((await enable(false)).json, { error: '' });
    });

    it('registers nothing when a form would break the settings pages', async () => {
      const broken = { ...personalForm(), section_type: undefined } as unknown as DeclarativeForm;
      const registrar = settingsRegistrar({
        nextcloud: h.application.nextcloud,
        forms: () => [adminForm(h.nc.url), broken],
        logger: createLogger({ level: 'silent' }),
      });
      await assert.rejects(registrar.register(), (e: unknown) => e instanceof InvalidSettingsFormError && /section_type/.test(e.message));
      assert.equal(h.nc.ui.settingsForms.size, 0, 'not even the valid form: nothing half-registered');
    });
  });
}
