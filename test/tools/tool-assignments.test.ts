import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../lib/log/logger.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { readPolicy } from '../../lib/tools/tool-policy.ts';
import { ToolAssignmentError, ToolAssignmentStore } from '../../lib/tools/tool-assignments.ts';
import { createInvocationContext, textResult, type ToolProvider } from '../../lib/tools/tool-provider.ts';
import { ToolRegistry } from '../../lib/tools/tool-registry.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

for (const dialect of DIALECTS) {
  describe(`tool assignments on ${dialect}`, () => {
    async function setup() {
      const tdb = await createTestDatabase(dialect);
      return { tdb, store: new ToolAssignmentStore(tdb.db, () => 1_700_000_000_000) };
    }

    it('stores assignments by name, in order, deduplicated, with their config', async () => {
      const { tdb, store } = await setup();
      try {
        const saved = await store.replace('bot-1', [
          { name: 'wiki_search', config: {} },
          { name: 'course_search', config: { campus: 'north', force: true } },
          { name: 'wiki_search', config: { ignored: true } },
        ]);
        assert.deepEqual(
          saved.map((a) => a.name),
          ['wiki_search', 'course_search'],
        );
        assert.deepEqual(await store.list('bot-1'), [
          { name: 'wiki_search', config: {} },
          { name: 'course_search', config: { campus: 'north', force: true } },
        ]);
        assert.deepEqual(await store.list('bot-2'), []);
      } finally {
        await tdb.drop();
      }
    });

    it('replaces all assignments in one transaction and leaves them untouched on invalid input', async () => {
      const { tdb, store } = await setup();
      try {
        await store.replace('bot-1', [
          { name: 'a_tool', config: {} },
          { name: 'b_tool', config: {} },
        ]);
        await store.replace('bot-1', [{ name: 'c_tool', config: { n: 1 } }]);
        assert.deepEqual(await store.list('bot-1'), [{ name: 'c_tool', config: { n: 1 } }]);
        await assert.rejects(
          () =>
            store.replace('bot-1', [
              { name: 'ok_tool', config: {} },
              { name: 'bad name!', config: {} },
            ]),
          ToolAssignmentError,
        );
        await assert.rejects(() => store.replace('bot-1', [{ name: 'ok_tool', config: [] as never }]), ToolAssignmentError);
        assert.deepEqual(await store.list('bot-1'), [{ name: 'c_tool', config: { n: 1 } }]);
        await store.replace('bot-1', []);
        assert.deepEqual(await store.list('bot-1'), []);
      } finally {
        await tdb.drop();
      }
    });

    it("keeps names no provider offers, and removes a bot's assignments", async () => {
      const { tdb, store } = await setup();
      try {
        await store.replace('bot-1', [{ name: 'tool_of_a_removed_app', config: {} }]);
        await store.replace('bot-2', [{ name: 'wiki_search', config: {} }]);
        assert.deepEqual(await store.list('bot-1'), [{ name: 'tool_of_a_removed_app', config: {} }]);
        await store.removeBot('bot-1');
        assert.deepEqual(await store.list('bot-1'), []);
        assert.deepEqual(await store.list('bot-2'), [{ name: 'wiki_search', config: {} }]);
      } finally {
        await tdb.drop();
      }
    });

    it("keeps a removed provider's assignment stored and inert in the loadout", async () => {
      const { tdb, store } = await setup();
      try {
        const companion: ToolProvider = {
          id: 'companion',
          getTools: () => [{ name: 'course_search', description: 'Search courses', schema: {}, policy: readPolicy() }],
          providesTool: (name) => name === 'course_search',
          executeTool: async () => textResult('ok'),
          getToolMetadata: () => ({ course_search: { label: 'Course search', summary: '' } }),
        };
        const registry = new ToolRegistry({ logger: createLogger({ level: 'silent' }) });
        registry.register(companion, 'external');
        await store.replace('bot-1', [{ name: 'course_search', config: {} }]);
        const ctx = createInvocationContext({ user: issueFromConfirmedTalkAuthor('alice'), actorKind: 'user', botId: 'bot-1' });
        assert.deepEqual(
          (await registry.loadout(ctx, await store.list('bot-1'))).tools.map((t) => t.name),
          ['course_search'],
        );

        registry.unregister('companion');
        const loadout = await registry.loadout(ctx, await store.list('bot-1'));
        assert.deepEqual(loadout.tools, []);
        assert.deepEqual(loadout.inert, ['course_search']);
        assert.deepEqual(await store.list('bot-1'), [{ name: 'course_search', config: {} }], 'still stored');

        registry.register(companion, 'external');
        assert.deepEqual(
          (await registry.loadout(ctx, await store.list('bot-1'))).tools.map((t) => t.name),
          ['course_search'],
          'works again when the provider returns',
        );
      } finally {
        await tdb.drop();
      }
    });
  });
}
