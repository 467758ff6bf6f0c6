import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { AdminCheck } from '../../lib/appapi/admin-check.ts';
import { LlmSettingsService } from '../../lib/llm/llm-settings.ts';
import { ModelCatalog } from '../../lib/llm/model-catalog.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { createApp } from '../../lib/server/app.ts';
import { adminSettingsRoutes } from '../../lib/server/routes/admin-settings.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { MASK, Vault } from '../../lib/vault/vault.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const APP_ID = 'educai';
const APP_SECRET = 'admin-settings-test-secret-0123456789abcdef';
const PROVIDER_KEY = 'sk-route-test-provider-key-7f6e5d4c3b2a';
const SECOND_KEY = 'sk-route-test-second-key-0a1b2c3d4e5f';

function appApiHeaders(uid: string): Record<string, string> {
  return {
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${APP_SECRET}`).toString('base64'),
    'X-Origin-IP': '198.51.100.7',
  };
}

const CSRF = { requesttoken: 'token-from-the-page' };

for (const dialect of DIALECTS) {
  describe(`admin settings routes on ${dialect}`, () => {
    let tdb: TestDatabase;
    let nc: FakeNextcloud;
    let llm: FakeOpenAI;
    let app: Express;
    let llmSettings: LlmSettingsService;
    const logLines: string[] = [];

    before(async () => {
      tdb = await createTestDatabase(dialect);
      nc = await FakeNextcloud.start({
        appId: APP_ID,
        appSecret: APP_SECRET,
        users: [
          { id: 'admin', displayName: 'Admin', groups: ['admin'] },
          { id: 'alice', displayName: 'Alice', groups: ['educai-students'] },
        ],
      });
      llm = await FakeOpenAI.start({ models: ['llama', 'qwen', 'mistral'], apiKey: PROVIDER_KEY });
      const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void logLines.push(line) } });
      const nextcloud = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
      llmSettings = new LlmSettingsService(new SettingsStore(tdb.db), new Vault(tdb.db, new Uint8Array(32).fill(7)));
      const catalog = new ModelCatalog({ settings: llmSettings });
      app = createApp({
        appId: APP_ID,
        appSecret: APP_SECRET,
        logger,
        routers: [adminSettingsRoutes({ llmSettings, catalog, adminCheck: new AdminCheck(nextcloud), logger })],
      });
    });
    after(async () => {
      await llm.close();
      await nc.close();
      await tdb.drop();
    });
    beforeEach(() => {
      llm.modelsStatus = null;
    });

    it('refuses non-admins, anonymous users and requests without the CSRF header', async () => {
      for (const path of ['/api/v1/admin/settings', '/api/v1/admin/models']) {
        const res = await request(app).get(path).set(appApiHeaders('alice'));
        assert.equal(res.status, 403, path);
        assert.equal(res.body.error.code, 'admin_required');
        const anon = await request(app).get(path).set(appApiHeaders(''));
        assert.equal(anon.status, 401, path);
      }
      const put = await request(app).put('/api/v1/admin/settings').set(appApiHeaders('alice')).set(CSRF).send({ primaryKey: PROVIDER_KEY });
      assert.equal(put.status, 403);

      const noCsrf = await request(app).put('/api/v1/admin/settings').set(appApiHeaders('admin')).send({ primaryEndpoint: llm.url, primaryKey: PROVIDER_KEY });
      assert.equal(noCsrf.status, 403);
      assert.equal(noCsrf.body.error.code, 'csrf');
      assert.equal((await llmSettings.get()).primaryKeySet, false, 'nothing stored by refused requests');
      assert.equal((await llmSettings.get()).primaryEndpoint, null);
    });

    it('saves the settings and shows the key only as masked', async () => {
      const put = await request(app)
        .put('/api/v1/admin/settings')
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({ primaryEndpoint: `${llm.url}/chat/completions`, primaryKey: PROVIDER_KEY, defaultModel: 'llama', allowedModels: ['qwen'] });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.headers['cache-control'], 'no-store');
      assert.equal(put.headers['x-content-type-options'], 'nosniff');
      assert.deepEqual(put.body.settings.primaryKey, { set: true, masked: MASK });
      assert.deepEqual(put.body.settings.secondaryKey, { set: false, masked: '' });
      assert.equal(put.body.settings.defaultModel, 'llama');
      assert.ok(!put.text.includes(PROVIDER_KEY));

      const get = await request(app).get('/api/v1/admin/settings').set(appApiHeaders('admin'));
      assert.equal(get.status, 200);
      assert.deepEqual(get.body.settings.primaryKey, { set: true, masked: MASK });
      assert.equal(get.body.settings.streamTimeoutSeconds, 240);
      assert.ok(!get.text.includes(PROVIDER_KEY));
      assert.ok(!get.text.includes(PROVIDER_KEY.slice(-8)), 'no tail of the key either');

      // A blank key keeps the stored one.
      const keep = await request(app).put('/api/v1/admin/settings').set(appApiHeaders('admin')).set(CSRF).send({ primaryKey: '', maxTokens: 1500 });
      assert.equal(keep.status, 200);
      assert.equal(await llmSettings.getKey('primary'), PROVIDER_KEY);
      assert.equal(keep.body.settings.maxTokens, 1500);

      const all = logLines.join('\n');
      assert.ok(all.includes('model settings updated'), 'the update is logged');
      assert.ok(!all.includes(PROVIDER_KEY), 'the key never reaches the log');
    });

    it('answers a bad patch with field errors and writes nothing', async () => {
      const res = await request(app)
        .put('/api/v1/admin/settings')
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({ chatTimeoutSeconds: 2, secondaryKey: SECOND_KEY, defaultTemperature: 4 });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_settings');
      assert.match(res.body.error.details.chatTimeoutSeconds, /at least 5/);
      assert.match(res.body.error.details.defaultTemperature, /at most 1/);
      assert.equal(await llmSettings.getKey('secondary'), null);
      assert.ok(!res.text.includes(SECOND_KEY));

      const bad = await request(app)
        .put('/api/v1/admin/settings')
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .set('Content-Type', 'application/json')
        .send('{"broken');
      assert.equal(bad.status, 400);
      const big = await request(app)
        .put('/api/v1/admin/settings')
        .set(appApiHeaders('admin'))
        .set(CSRF)
        .send({ allowedModels: Array.from({ length: 3000 }, (_, i) => `model-with-a-long-name-${i}`) });
      assert.equal(big.status, 413);
    });

    it('lists live models for admins, with only a status on failure', async () => {
      const ok = await request(app).get('/api/v1/admin/models').set(appApiHeaders('admin'));
      assert.equal(ok.status, 200);
      assert.deepEqual(
        ok.body.models.map((m: { ref: string }) => m.ref),
        ['primary:llama', 'primary:qwen', 'primary:mistral'],
      );
      assert.deepEqual(ok.body.endpoints[0], { endpoint: 'primary', configured: true, ok: true, count: 3 });
      assert.deepEqual(ok.body.endpoints[1], { endpoint: 'secondary', configured: false, ok: false, count: 0 });
      assert.equal(llm.requests.at(-1)?.headers.authorization, `Bearer ${PROVIDER_KEY}`);

      llm.modelsStatus = 500;
      const failed = await request(app).get('/api/v1/admin/models').set(appApiHeaders('admin'));
      assert.equal(failed.status, 200);
      assert.deepEqual(failed.body.endpoints[0], { endpoint: 'primary', configured: true, ok: false, count: 0, status: 500, error: 'http_error' });
      assert.ok(!failed.text.includes('models failed'), 'no provider body');
      assert.ok(!failed.text.includes(llm.url), 'no endpoint URL');
      assert.ok(!failed.text.includes(PROVIDER_KEY));
    });

    it('offers users the default and the allowed models, without URLs or keys', async () => {
      const res = await request(app).get('/api/v1/models').set(appApiHeaders('alice'));
      assert.equal(res.status, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(res.body, {
        defaultModel: 'primary:llama',
        models: [
          { ref: 'primary:llama', endpoint: 'primary', id: 'llama', label: 'Primary · llama' },
          { ref: 'primary:qwen', endpoint: 'primary', id: 'qwen', label: 'Primary · qwen' },
        ],
      });
      assert.ok(!res.text.includes('127.0.0.1'));
      assert.ok(!res.text.includes(PROVIDER_KEY));
      const anon = await request(app).get('/api/v1/models').set(appApiHeaders(''));
      assert.equal(anon.status, 401);
    });
  });
}
