import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { McpServerStore, McpServerValidationError, toPublic } from '../../lib/mcp/mcp-server-store.ts';
import { MASK, Vault } from '../../lib/vault/vault.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

const HEADER_VALUE = 'Bearer store-test-header-value-9f8e7d';

async function fieldsOf(promise: Promise<unknown>): Promise<Record<string, string>> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof McpServerValidationError, String(error));
    return error.fields;
  }
  assert.fail('expected a validation error');
}

for (const dialect of DIALECTS) {
  describe(`MCP server store on ${dialect}`, () => {
    async function setup() {
      const tdb = await createTestDatabase(dialect);
      const vault = new Vault(tdb.db, new Uint8Array(32).fill(3));
      let t = 1_700_000_000_000;
      return { tdb, vault, store: new McpServerStore(tdb.db, vault, () => ++t) };
    }

    it('validates input: http(s) only, no credentials in the URL, name up to 100 characters, unique', async () => {
      const { tdb, store } = await setup();
      try {
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'ftp://example.org/mcp' })))['url']);
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'file:///etc/passwd' })))['url']);
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'https://user:pw@example.org/mcp' })))['url']);
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'not a url' })))['url']);
        assert.ok((await fieldsOf(store.create({ name: 'n'.repeat(101), url: 'https://example.org/mcp' })))['name']);
        assert.ok((await fieldsOf(store.create({ name: '', url: 'https://example.org/mcp' })))['name']);
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'https://example.org/mcp', kind: 'plugin' as never })))['kind']);
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'https://example.org/mcp', headers: { Host: 'evil' } })))['headers.Host']);
        assert.ok((await fieldsOf(store.create({ name: 'x', url: 'https://example.org/mcp', headers: { 'X-Key': 'a\r\nb' } })))['headers.X-Key']);
        assert.ok(
          (await fieldsOf(store.create({ name: 'x', url: 'https://example.org/mcp', toolPolicies: { t: { policy: 'maybe' as never } } })))[
            'toolPolicies.t.policy'
          ],
        );

        const { server } = await store.create({ name: 'n'.repeat(100), url: 'http://127.0.0.1:9/mcp' });
        assert.equal(server.name.length, 100);
        assert.equal(server.kind, 'mcp');
        assert.equal(server.enabled, true);
        assert.deepEqual(server.toolPolicies, {});
        assert.equal(server.approvedToolsHash, null);
        assert.equal(
          (await fieldsOf(store.create({ name: 'N'.repeat(100), url: 'https://example.org/mcp' })))['name'],
          'Another tool server already has this name',
        );
      } finally {
        await tdb.drop();
      }
    });

    it('keeps header values in the vault and never returns them', async () => {
      const { tdb, vault, store } = await setup();
      try {
        const { server, contextKey } = await store.create({
          name: 'Catalogue',
          url: 'https://catalogue.example/mcp',
          headers: { Authorization: HEADER_VALUE },
        });
        assert.equal(contextKey, null);
        const pub = toPublic(server);
        assert.deepEqual(pub.headers, { Authorization: MASK });
        assert.equal(JSON.stringify(pub).includes(HEADER_VALUE), false);
        assert.equal(JSON.stringify(await store.list()).includes(HEADER_VALUE), false);
        assert.equal(JSON.stringify(server).includes(HEADER_VALUE), false);

        const row = await tdb.db
          .selectFrom('secrets' as never)
          .selectAll()
          .execute();
        assert.equal(JSON.stringify(row).includes(HEADER_VALUE), false, 'stored encrypted');
        assert.deepEqual(await store.headers(server.id), { Authorization: HEADER_VALUE });

        // The mask keeps the stored value; a new header is added.
        await store.update(server.id, { headers: { Authorization: MASK, 'X-Tenant': 'educ' } });
        assert.deepEqual(await store.headers(server.id), { Authorization: HEADER_VALUE, 'X-Tenant': 'educ' });
        assert.deepEqual(toPublic((await store.get(server.id))!).headers, { Authorization: MASK, 'X-Tenant': MASK });

        await store.update(server.id, { headers: null });
        assert.deepEqual(await store.headers(server.id), {});
        assert.equal(await vault.has(`mcp.${server.id}.headers`), false);
      } finally {
        await tdb.drop();
      }
    });

    it('issues a companion key once, rotates it, and drops secrets on delete', async () => {
      const { tdb, vault, store } = await setup();
      try {
        const { server, contextKey } = await store.create({
          name: 'Courses',
          url: 'https://courses.example/mcp',
          kind: 'companion',
          headers: { 'X-Api': 'value-123456' },
        });
        assert.ok(contextKey);
        assert.deepEqual(await store.contextKey(server.id), new Uint8Array(Buffer.from(contextKey, 'base64url')));
        assert.equal(JSON.stringify(toPublic(server)).includes(contextKey), false);
        const rotated = await store.rotateContextKey(server.id);
        assert.ok(rotated && rotated !== contextKey);
        assert.deepEqual(await store.contextKey(server.id), new Uint8Array(Buffer.from(rotated, 'base64url')));
        assert.ok((await fieldsOf(store.update(server.id, { kind: 'mcp' })))['kind']);

        assert.equal(await store.delete(server.id), true);
        assert.equal(await store.get(server.id), null);
        assert.equal(await vault.has(`mcp.${server.id}.context-key`), false);
        assert.equal(await vault.has(`mcp.${server.id}.headers`), false);
      } finally {
        await tdb.drop();
      }
    });

    it('pins approvals, and a new URL drops them', async () => {
      const { tdb, store } = await setup();
      try {
        const { server } = await store.create({ name: 'Catalogue', url: 'https://catalogue.example/mcp' });
        const hash = 'a'.repeat(64);
        const approved = await store.approve(server.id, {
          approvedTools: { search_courses: 'b'.repeat(64) },
          approvedToolsHash: hash,
          toolPolicies: { search_courses: { policy: 'read' } },
        });
        assert.equal(approved?.approvedToolsHash, hash);
        assert.deepEqual(approved?.toolPolicies, { search_courses: { policy: 'read' } });
        await assert.rejects(() => store.approve(server.id, { approvedTools: {}, approvedToolsHash: 'nope', toolPolicies: {} }), McpServerValidationError);

        const renamed = await store.update(server.id, { name: 'Course catalogue', enabled: false });
        assert.equal(renamed?.approvedToolsHash, hash, 'a rename keeps the approval');
        assert.equal(renamed?.enabled, false);
        const moved = await store.update(server.id, { url: 'https://elsewhere.example/mcp' });
        assert.equal(moved?.approvedToolsHash, null);
        assert.deepEqual(moved?.approvedTools, {});
        assert.equal(await store.update('missing', { name: 'x' }), null);
      } finally {
        await tdb.drop();
      }
    });
  });
}
