import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LLM_DEFAULTS, LLM_SETTINGS_KEY, LlmSettingsService, PRIMARY_KEY_NAME, SECONDARY_KEY_NAME, toPublic } from '../../lib/llm/llm-settings.ts';
import { HttpError } from '../../lib/errors/http-error.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { MASK, Vault } from '../../lib/vault/vault.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const KEY_A = 'sk-primary-test-key-0123456789abcdef';
const KEY_B = 'sk-secondary-test-key-fedcba9876543210';

async function expectInvalid(service: LlmSettingsService, patch: unknown, field: string, pattern: RegExp): Promise<void> {
  await assert.rejects(service.update(patch), (err: unknown) => {
    assert.ok(err instanceof HttpError, `expected HttpError for ${JSON.stringify(patch)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'invalid_settings');
    const details = err.details as Record<string, string>;
    assert.ok(details[field], `details name ${field}: ${JSON.stringify(details)}`);
    assert.match(details[field], pattern);
    return true;
  });
}

for (const dialect of DIALECTS) {
  describe(`llm settings on ${dialect}`, () => {
    let tdb: TestDatabase;
    let store: SettingsStore;
    let vault: Vault;
    let service: LlmSettingsService;

    before(async () => {
      tdb = await createTestDatabase(dialect);
      store = new SettingsStore(tdb.db);
      vault = new Vault(tdb.db, new Uint8Array(32).fill(9));
      service = new LlmSettingsService(store, vault);
    });
    after(async () => {
      await tdb.drop();
    });

    it('starts from the defaults with no key set', async () => {
      const s = await service.get();
      assert.deepEqual(s, { ...LLM_DEFAULTS, allowedModels: [], primaryKeySet: false, secondaryKeySet: false });
      assert.equal(s.chatTimeoutSeconds, 90);
      assert.equal(s.streamTimeoutSeconds, 240);
      assert.equal(s.modelsTimeoutSeconds, 20);
      assert.equal(s.defaultTemperature, 0.2);
      assert.equal(s.maxTokens, 2000);
      assert.equal(s.conversationMemoryTokens, 8000);
      assert.equal(s.conversationRetentionDays, 30);
      const pub = toPublic(s);
      assert.deepEqual(pub.primaryKey, { set: false, masked: '' });
    });

    it('reports each bad field and writes nothing', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{ primaryEndpoint: 'ftp://x/v1' }, 'primaryEndpoint', /http/],
        [{ primaryEndpoint: 'not a url' }, 'primaryEndpoint', /absolute/],
        [{ primaryEndpoint: 'https://user:pw@x/v1' }, 'primaryEndpoint', /password/],
        [{ primaryEndpoint: 'https://x/v1?api-version=1' }, 'primaryEndpoint', /query/],
        [{ primaryEndpoint: 42 }, 'primaryEndpoint', /URL/],
        [{ secondaryEndpoint: 'javascript:alert(1)' }, 'secondaryEndpoint', /http/],
        [{ primaryKey: 42 }, 'primaryKey', /key string/],
        [{ primaryKey: 'has space inside' }, 'primaryKey', /printable ASCII/],
        [{ secondaryKey: 'x'.repeat(5000) }, 'secondaryKey', /4096/],
        [{ defaultModel: 'bad model' }, 'defaultModel', /spaces/],
        [{ defaultModel: 'primary:' }, 'defaultModel', /model id/],
        [{ allowedModels: 'gpt-4o' }, 'allowedModels', /list/],
        [{ allowedModels: ['ok', 3] }, 'allowedModels', /model name/],
        [{ fallbackModel: 7 }, 'fallbackModel', /model name/],
        [{ chatTimeoutSeconds: 4 }, 'chatTimeoutSeconds', /at least 5/],
        [{ streamTimeoutSeconds: 901 }, 'streamTimeoutSeconds', /at most 900/],
        [{ modelsTimeoutSeconds: 10.5 }, 'modelsTimeoutSeconds', /whole number/],
        [{ modelsTimeoutSeconds: '20' }, 'modelsTimeoutSeconds', /number/],
        [{ defaultTemperature: 1.5 }, 'defaultTemperature', /at most 1/],
        [{ defaultTemperature: -0.1 }, 'defaultTemperature', /at least 0/],
        [{ maxTokens: 0 }, 'maxTokens', /at least/],
        [{ conversationMemoryTokens: 999 }, 'conversationMemoryTokens', /at least 1000/],
        [{ conversationRetentionDays: 0 }, 'conversationRetentionDays', /at least 1/],
        [{ apiKey: 'x' }, 'apiKey', /not a known setting/],
        [{ fallbackModel: 'secondary:m' }, 'fallbackModel', /secondary endpoint/],
        [{ allowedModels: ['primary:a', 'secondary:b'] }, 'allowedModels', /"secondary:b".*secondary endpoint/],
      ];
      for (const [patch, field, pattern] of cases) {
        // Valid fields beside the bad one must not be written either.
        await expectInvalid(
          service,
          { ...patch, defaultModel: patch.defaultModel ?? 'primary:ok', primaryKey: patch.primaryKey ?? KEY_A, maxTokens: patch.maxTokens ?? 1234 },
          field,
          pattern,
        );
      }
      await expectInvalid(service, ['not', 'an', 'object'], 'body', /JSON object/);
      await expectInvalid(service, null, 'body', /JSON object/);
      assert.equal(await store.get(LLM_SETTINGS_KEY), undefined, 'no settings row written');
      assert.equal(await vault.has(PRIMARY_KEY_NAME), false, 'no key written');
    });

    it('lists every bad field of one patch at once', async () => {
      await assert.rejects(service.update({ chatTimeoutSeconds: 1, defaultTemperature: 3, primaryEndpoint: 'nope' }), (err: unknown) => {
        assert.ok(err instanceof HttpError);
        assert.deepEqual(Object.keys(err.details as object).sort(), ['chatTimeoutSeconds', 'defaultTemperature', 'primaryEndpoint']);
        return true;
      });
    });

    it('stores valid settings, trims and dedupes, and keeps keys write-only', async () => {
      const s = await service.update({
        primaryEndpoint: ' https://llm.example.org/v1 ',
        primaryKey: KEY_A,
        secondaryEndpoint: 'https://other.example.org/v1/chat/completions',
        secondaryKey: KEY_B,
        defaultModel: 'primary:llama',
        allowedModels: ['primary:llama', ' secondary:qwen ', 'primary:llama', ''],
        fallbackModel: 'secondary:qwen',
        chatTimeoutSeconds: 60,
        defaultTemperature: 0.5,
      });
      assert.equal(s.primaryEndpoint, 'https://llm.example.org/v1');
      assert.deepEqual(s.allowedModels, ['primary:llama', 'secondary:qwen']);
      assert.equal(s.primaryKeySet, true);
      assert.equal(s.secondaryKeySet, true);
      assert.equal(s.streamTimeoutSeconds, 240, 'untouched fields keep their value');
      assert.equal(await service.getKey('primary'), KEY_A);
      assert.equal(await service.getKey('secondary'), KEY_B);

      const pub = service.toPublic(await service.get());
      assert.deepEqual(pub.primaryKey, { set: true, masked: MASK });
      assert.deepEqual(pub.secondaryKey, { set: true, masked: MASK });
      const text = JSON.stringify(pub);
      assert.ok(!text.includes(KEY_A) && !text.includes(KEY_B), 'no key in the public view');
      assert.ok(!text.includes(KEY_A.slice(0, 10)) && !text.includes(KEY_A.slice(-6)), 'no part of a key either');
      assert.ok(!JSON.stringify(await service.get()).includes(KEY_A));

      // The settings row holds no key.
      const row = await tdb.db.selectFrom('settings').select('value').where('key', '=', LLM_SETTINGS_KEY).executeTakeFirstOrThrow();
      assert.ok(!row.value.includes(KEY_A) && !row.value.includes(KEY_B));
      const secrets = await tdb.db.selectFrom('secrets').select(['name', 'ciphertext']).execute();
      assert.deepEqual(secrets.map((r) => r.name).sort(), [PRIMARY_KEY_NAME, SECONDARY_KEY_NAME]);
      assert.ok(secrets.every((r) => !r.ciphertext.includes(KEY_A) && !r.ciphertext.includes(KEY_B)));
    });

    it('keeps a key on "", absent or the echoed mask, replaces it on a new value, clears it on null', async () => {
      await service.update({ primaryKey: '' });
      assert.equal(await service.getKey('primary'), KEY_A);
      await service.update({ defaultTemperature: 0.3 });
      assert.equal(await service.getKey('primary'), KEY_A);
      await service.update({ primaryKey: MASK });
      assert.equal(await service.getKey('primary'), KEY_A);
      await service.update({ primaryKey: '   ' });
      assert.equal(await service.getKey('primary'), KEY_A);

      await service.update({ primaryKey: 'sk-rotated-key-000111222333' });
      assert.equal(await service.getKey('primary'), 'sk-rotated-key-000111222333');

      const cleared = await service.update({ secondaryKey: null });
      assert.equal(cleared.secondaryKeySet, false);
      assert.equal(await service.getKey('secondary'), null);
      assert.deepEqual(toPublic(cleared).secondaryKey, { set: false, masked: '' });
      assert.equal(await service.getKey('primary'), 'sk-rotated-key-000111222333', 'the other key is untouched');
    });

    it('clears an endpoint with null or "" and refuses to orphan secondary model references', async () => {
      await expectInvalid(service, { secondaryEndpoint: null }, 'allowedModels', /secondary endpoint/);
      assert.equal((await service.get()).secondaryEndpoint, 'https://other.example.org/v1/chat/completions', 'nothing written');
      const s = await service.update({ secondaryEndpoint: '', allowedModels: ['primary:llama'], fallbackModel: null });
      assert.equal(s.secondaryEndpoint, null);
      assert.equal(s.fallbackModel, null);
    });

    it('falls back to the default for a stored value that no longer validates', async () => {
      const stored = (await store.get<Record<string, unknown>>(LLM_SETTINGS_KEY)) ?? {};
      await store.set(LLM_SETTINGS_KEY, { ...stored, chatTimeoutSeconds: 'ninety', maxTokens: -5 });
      // Written behind the service's back, as another thread would; that thread's change notice:
      service.invalidate();
      const s = await service.get();
      assert.equal(s.chatTimeoutSeconds, 90);
      assert.equal(s.maxTokens, 2000);
      assert.equal(s.primaryEndpoint, 'https://llm.example.org/v1');
    });

    it('serialises concurrent updates so neither is lost', async () => {
      await Promise.all([service.update({ maxTokens: 3000 }), service.update({ conversationRetentionDays: 7 })]);
      const s = await service.get();
      assert.equal(s.maxTokens, 3000);
      assert.equal(s.conversationRetentionDays, 7);
    });
  });
}
