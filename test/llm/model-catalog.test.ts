import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { LlmSettingsService } from '../../lib/llm/llm-settings.ts';
import { endpointBaseUrl, ModelCatalog, modelsUrl, parseModelList } from '../../lib/llm/model-catalog.ts';
import { LlmNotConfiguredError, modelRefProblem, ModelNotAllowedError, parseModelRef } from '../../lib/llm/model-ref.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

describe('model references', () => {
  it('splits only our two prefixes', () => {
    assert.deepEqual(parseModelRef('primary:gpt-4o'), { endpoint: 'primary', id: 'gpt-4o' });
    assert.deepEqual(parseModelRef('secondary:meta/llama:70b'), { endpoint: 'secondary', id: 'meta/llama:70b' });
    assert.deepEqual(parseModelRef('llama3:8b'), { endpoint: null, id: 'llama3:8b' });
    assert.deepEqual(parseModelRef('gpt-4o'), { endpoint: null, id: 'gpt-4o' });
  });

  it('names what is wrong with a reference', () => {
    assert.equal(modelRefProblem('primary:x'), null);
    assert.match(modelRefProblem('') ?? '', /empty/);
    assert.match(modelRefProblem('secondary:') ?? '', /model id/);
    assert.match(modelRefProblem('a b') ?? '', /spaces/);
    assert.match(modelRefProblem('a\u0000b') ?? '', /control/);
    assert.match(modelRefProblem('m'.repeat(300)) ?? '', /at most/);
  });
});

describe('endpoint URLs', () => {
  it('derives the API base from what an admin may enter', () => {
    assert.equal(endpointBaseUrl('https://x.example/v1'), 'https://x.example/v1');
    assert.equal(endpointBaseUrl('https://x.example/v1/'), 'https://x.example/v1');
    assert.equal(endpointBaseUrl('https://x.example/v1/chat/completions'), 'https://x.example/v1');
    assert.equal(endpointBaseUrl('https://x.example/api/openai/chat/completions/'), 'https://x.example/api/openai');
    assert.equal(endpointBaseUrl('https://x.example/v1/models'), 'https://x.example/v1');
    assert.equal(endpointBaseUrl('https://x.example'), 'https://x.example/v1');
    assert.equal(endpointBaseUrl('https://x.example/chat/completions'), 'https://x.example/v1');
    assert.equal(endpointBaseUrl('https://g.example/v1beta/openai'), 'https://g.example/v1beta/openai');
    assert.equal(modelsUrl('http://127.0.0.1:8080/v1/chat/completions'), 'http://127.0.0.1:8080/v1/models');
  });

  it('reads data[].id, data[].name and models[]', () => {
    assert.deepEqual(parseModelList({ data: [{ id: 'a' }, { name: 'b' }, { id: 'a' }, { foo: 1 }] }), ['a', 'b']);
    assert.deepEqual(parseModelList({ models: ['x', { id: 'y' }, { name: 'z' }, 5] }), ['x', 'y', 'z']);
    assert.equal(parseModelList({ error: 'nope' }), null);
    assert.equal(parseModelList('text'), null);
  });
});

for (const dialect of DIALECTS) {
  describe(`model catalog on ${dialect}`, () => {
    let tdb: TestDatabase;
    let settings: LlmSettingsService;
    let primary: FakeOpenAI;
    let secondary: FakeOpenAI;
    let clock = 1_000_000;
    let catalog: ModelCatalog;

    before(async () => {
      tdb = await createTestDatabase(dialect);
      settings = new LlmSettingsService(new SettingsStore(tdb.db), new Vault(tdb.db, new Uint8Array(32).fill(3)));
      primary = await FakeOpenAI.start({ models: ['shared', 'only-primary'], apiKey: 'sk-primary-catalog-key' });
      secondary = await FakeOpenAI.start({ models: ['shared', 'only-secondary'], modelsFormat: 'models' });
    });
    after(async () => {
      await primary.close();
      await secondary.close();
      await tdb.drop();
    });
    beforeEach(async () => {
      clock = 1_000_000;
      primary.models = ['shared', 'only-primary'];
      secondary.models = ['shared', 'only-secondary'];
      primary.modelsStatus = null;
      secondary.modelsStatus = null;
      primary.reset();
      secondary.reset();
      await settings.update({
        primaryEndpoint: `${primary.url}/chat/completions`,
        primaryKey: 'sk-primary-catalog-key',
        secondaryEndpoint: secondary.url,
        secondaryKey: null,
        defaultModel: null,
        allowedModels: [],
        fallbackModel: null,
      });
      catalog = new ModelCatalog({ settings, now: () => clock });
    });

    it('lists both endpoints with refs and labels, sending each endpoint its own key', async () => {
      const list = await catalog.list();
      assert.deepEqual(list, [
        { ref: 'primary:shared', endpoint: 'primary', id: 'shared', label: 'Primary · shared' },
        { ref: 'primary:only-primary', endpoint: 'primary', id: 'only-primary', label: 'Primary · only-primary' },
        { ref: 'secondary:shared', endpoint: 'secondary', id: 'shared', label: 'Secondary · shared' },
        { ref: 'secondary:only-secondary', endpoint: 'secondary', id: 'only-secondary', label: 'Secondary · only-secondary' },
      ]);
      assert.equal(primary.requests[0]?.path, '/v1/models');
      assert.equal(primary.requests[0]?.headers.authorization, 'Bearer sk-primary-catalog-key');
      assert.equal(secondary.requests[0]?.headers.authorization, undefined, 'no key, no Authorization header');
    });

    it('resolves bare ids: primary wins, secondary when only it lists the id, primary when unknown', async () => {
      assert.deepEqual(await catalog.resolve('shared'), { ref: 'primary:shared', endpoint: 'primary', id: 'shared' });
      assert.deepEqual(await catalog.resolve('only-secondary'), { ref: 'secondary:only-secondary', endpoint: 'secondary', id: 'only-secondary' });
      assert.deepEqual(await catalog.resolve('unknown-model'), { ref: 'primary:unknown-model', endpoint: 'primary', id: 'unknown-model' });
      assert.deepEqual(await catalog.resolve('secondary:shared'), { ref: 'secondary:shared', endpoint: 'secondary', id: 'shared' });
      assert.deepEqual(await catalog.resolve('primary:only-secondary'), { ref: 'primary:only-secondary', endpoint: 'primary', id: 'only-secondary' });
    });

    it('falls back to the primary endpoint when the lists cannot be read', async () => {
      primary.modelsStatus = 500;
      secondary.modelsStatus = 503;
      assert.equal((await catalog.resolve('only-secondary')).ref, 'primary:only-secondary');
    });

    it('caches the lists for 5 minutes of the injected clock', async () => {
      assert.equal((await catalog.resolve('newcomer')).ref, 'primary:newcomer');
      const calls = secondary.requests.length;
      secondary.models = ['newcomer'];
      clock += 5 * 60_000 - 1;
      assert.equal((await catalog.resolve('newcomer')).ref, 'primary:newcomer', 'still the cached list');
      assert.equal(secondary.requests.length, calls, 'no new listing inside the TTL');
      clock += 2;
      assert.equal((await catalog.resolve('newcomer')).ref, 'secondary:newcomer', 'list refreshed after the TTL');
      assert.equal(secondary.requests.length, calls + 1);
    });

    it('remembers a failed listing only briefly', async () => {
      secondary.modelsStatus = 500;
      assert.equal((await catalog.resolve('only-secondary')).ref, 'primary:only-secondary');
      secondary.modelsStatus = null;
      clock += 31_000;
      assert.equal((await catalog.resolve('only-secondary')).ref, 'secondary:only-secondary');
    });

    it('lists live with a status and no provider body on failure', async () => {
      primary.modelsStatus = 401;
      const live = await catalog.listLive();
      const p = live.endpoints.find((e) => e.endpoint === 'primary');
      assert.deepEqual(p, { endpoint: 'primary', configured: true, ok: false, error: 'http_error', status: 401, models: [] });
      assert.ok(!JSON.stringify(live).includes('models failed'), 'no provider text');
      assert.deepEqual(
        live.models.map((m) => m.ref),
        ['secondary:shared', 'secondary:only-secondary'],
      );
    });

    it('reports an unreachable endpoint without detail', async () => {
      await settings.update({ secondaryEndpoint: 'http://127.0.0.1:1/v1' });
      const live = await catalog.listLive();
      assert.deepEqual(
        live.endpoints.find((e) => e.endpoint === 'secondary'),
        { endpoint: 'secondary', configured: true, ok: false, error: 'unreachable', models: [] },
      );
    });

    it('enforces the allowed list on the server', async () => {
      await settings.update({ allowedModels: ['only-primary', 'secondary:shared'], defaultModel: 'primary:shared', fallbackModel: 'secondary:only-secondary' });
      assert.equal((await catalog.assertAllowed('primary:only-primary')).ref, 'primary:only-primary');
      assert.equal((await catalog.assertAllowed('only-primary')).ref, 'primary:only-primary');
      assert.equal((await catalog.assertAllowed('secondary:shared')).ref, 'secondary:shared');
      assert.equal((await catalog.assertAllowed('shared')).ref, 'primary:shared', 'the default model is always allowed');
      await assert.rejects(catalog.assertAllowed('primary:something-else'), ModelNotAllowedError);
      await assert.rejects(catalog.assertAllowed('secondary:only-primary'), ModelNotAllowedError);
      await assert.rejects(catalog.assertAllowed('secondary:only-secondary'), ModelNotAllowedError, 'bot owners cannot pin the fallback');
      assert.equal((await catalog.assertAllowed('secondary:only-secondary', { asFallback: true })).ref, 'secondary:only-secondary');
      await assert.rejects(catalog.assertAllowed('primary:x'), (err: unknown) => {
        assert.ok(err instanceof ModelNotAllowedError);
        assert.ok(!err.publicMessage.includes('http'));
        return true;
      });
    });

    it('with an empty allowed list, accepts listed models and refuses unlisted ones', async () => {
      assert.equal((await catalog.assertAllowed('only-secondary')).ref, 'secondary:only-secondary');
      await assert.rejects(catalog.assertAllowed('primary:not-listed'), ModelNotAllowedError);
      primary.modelsStatus = 502;
      catalog.invalidate();
      assert.equal((await catalog.assertAllowed('primary:not-listed')).ref, 'primary:not-listed', 'unverifiable while the list is down');
    });

    it('refuses a model of an endpoint that is not configured', async () => {
      await settings.update({ secondaryEndpoint: null });
      await assert.rejects(catalog.resolve('secondary:x'), LlmNotConfiguredError);
      await settings.update({ primaryEndpoint: null });
      await assert.rejects(catalog.assertAllowed('anything'), LlmNotConfiguredError);
    });

    it('offers bot owners the default model and the allowed list', async () => {
      await settings.update({ allowedModels: ['only-secondary', 'primary:shared'], defaultModel: 'primary:only-primary' });
      const offer = await catalog.allowed();
      assert.equal(offer.defaultModel, 'primary:only-primary');
      assert.deepEqual(
        offer.models.map((m) => m.ref),
        ['primary:only-primary', 'secondary:only-secondary', 'primary:shared'],
      );
      await settings.update({ allowedModels: [], defaultModel: null });
      assert.deepEqual(
        (await catalog.allowed()).models.map((m) => m.ref),
        (await catalog.list()).map((m) => m.ref),
      );
    });
  });
}
