// The OpenAPI document against the WHOLE app as bootstrap wires it: every /api/v1 route the express app
// serves is documented, and every documented route is served (issue 6).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { packageVersion, storedOpenApiPath } from '../../lib/cli/write-openapi.ts';
import { apiDocument } from '../../lib/server/api-specs.ts';
import { documentedRoutes, serializeOpenApi, servedRoutes } from '../../lib/server/openapi.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

describe('OpenAPI document of the whole app', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ dialect: 'sqlite' });
  });
  after(async () => h.close());

  it('lists exactly the /api/v1 routes the composed app serves', async () => {
    const served = await h.fetch('/api/v1/openapi.json', { headers: h.browserHeaders('alice') });
    assert.equal(served.status, 200, served.text);
    const routes = servedRoutes(h.application.app, '/api/');
    assert.ok(routes.length > 50, `the walk found the routers (${routes.length} routes)`);
    assert.ok(
      routes.every((r) => / \/api\/v1\//.test(r)),
      'every API route is under /api/v1',
    );
    const documented = documentedRoutes(served.json);
    assert.deepEqual(
      routes.filter((r) => !documented.includes(r)),
      [],
      'every served route is documented',
    );
    assert.deepEqual(
      documented.filter((r) => !routes.includes(r)),
      [],
      'every documented route is served',
    );
  });

  it('documents each operation with its errors, access level and schemas', async () => {
    const doc = (await h.fetch('/api/v1/openapi.json', { headers: h.browserHeaders('alice') })).json;
    const ids = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        assert.ok(!ids.has(op.operationId), `${op.operationId} is unique`);
        ids.add(op.operationId);
        assert.ok(op.responses['401'], `${method} ${path} documents 401`);
        if (op['x-access'] === 'admin') assert.ok(op.responses['403'], `${method} ${path} documents 403`);
        for (const param of path.match(/\{[^}]+\}/g) ?? []) {
          assert.ok(
            op.parameters.some((p: { in: string; name: string }) => p.in === 'path' && `{${p.name}}` === param),
            `${method} ${path} describes ${param}`,
          );
        }
        for (const content of [op.requestBody?.content, ...Object.values(op.responses).map((r: any) => r.content)]) {
          const ref: string | undefined = content?.['application/json']?.schema?.$ref;
          if (ref) assert.ok(doc.components.schemas[ref.split('/').at(-1) ?? ''], `${ref} exists`);
        }
      }
    }
    assert.deepEqual(doc.components.schemas.McpServerTest.anyOf[1].properties.status.enum.includes('blocked'), true);
    assert.deepEqual(doc.components.schemas.EgressSettingsUpdate.required, ['allowList']);
  });

  it('is stored current in docs/openapi.json', () => {
    assert.equal(readFileSync(storedOpenApiPath(), 'utf8'), serializeOpenApi(apiDocument(packageVersion())), 'run node lib/cli/write-openapi.ts');
  });
});
