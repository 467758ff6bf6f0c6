import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConversationMemory, estimateTokens, MEMORY_ROW_LIMIT, type MemoryEntry, type MemoryScope } from '../../lib/conversation/memory.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const DAY = 86_400_000;
let roomCounter = 0;
// Each test works in rooms of its own, so one database serves the whole suite.
const freshRoom = (): string => `room${++roomCounter}`;

function entry(scope: MemoryScope, role: 'user' | 'assistant', content: string, extra: Partial<MemoryEntry> = {}): MemoryEntry {
  return { ...scope, role, content, authorUid: role === 'user' ? 'alice' : 'bot:tutor', messageId: null, ...extra };
}

describe('estimateTokens', () => {
  it('rounds a quarter of the characters up', () => {
    assert.equal(estimateTokens(''), 0);
    assert.equal(estimateTokens('a'), 1);
    assert.equal(estimateTokens('abcd'), 1);
    assert.equal(estimateTokens('abcde'), 2);
  });
});

for (const dialect of DIALECTS) {
  describe(`ConversationMemory on ${dialect}`, () => {
    let tdb: TestDatabase;
    const now = 1_700_000_000_000;
    let memory: ConversationMemory;

    before(async () => {
      tdb = await createTestDatabase(dialect);
      memory = new ConversationMemory(tdb.db, () => now);
    });
    after(async () => {
      await tdb.drop();
    });

    it('stores a user message and its answer together, in order, and only within one scope', async () => {
      const scope: MemoryScope = { botId: 'b1', roomToken: freshRoom(), threadId: '7', invokerUid: 'alice' };
      await memory.append(entry(scope, 'user', 'earlier'));
      await memory.appendExchange(entry(scope, 'user', 'question', { messageId: '901' }), entry(scope, 'assistant', 'answer', { messageId: '901' }));
      const rows = await memory.load(scope);
      assert.deepEqual(
        rows.map((r) => [r.role, r.content, r.messageId]),
        [
          ['user', 'earlier', null],
          ['user', 'question', '901'],
          ['assistant', 'answer', '901'],
        ],
      );
      assert.equal(await memory.forgetMessage(scope.roomToken, '901'), 2, 'deleting the message forgets the answer too');
      await assert.rejects(memory.appendExchange(entry(scope, 'assistant', 'a'), entry(scope, 'user', 'q')), RangeError);
      await assert.rejects(memory.appendExchange(entry(scope, 'user', 'q'), entry({ ...scope, invokerUid: 'bob' }, 'assistant', 'a')), RangeError);
      await assert.rejects(memory.appendExchange(entry(scope, 'user', 'q'), entry({ ...scope, botId: 'x'.repeat(37) }, 'assistant', 'a')), RangeError);
      assert.equal((await memory.load(scope)).length, 1, 'a refused exchange stores nothing');
    });

    it('returns only rows of exactly the requested scope, in chronological order', async () => {
      const room = freshRoom();
      const main: MemoryScope = { botId: 'b1', roomToken: room, threadId: null, invokerUid: null };
      const scopes: MemoryScope[] = [
        main,
        { ...main, threadId: '42' },
        { ...main, invokerUid: 'alice' },
        { ...main, invokerUid: 'bob' },
        { ...main, threadId: '42', invokerUid: 'alice' },
        { ...main, botId: 'b2' },
        { ...main, roomToken: freshRoom() },
      ];
      for (const [i, scope] of scopes.entries()) {
        await memory.append(entry(scope, 'user', `question ${i}`));
        await memory.append(entry(scope, 'assistant', `answer ${i}`));
        await memory.append(entry(scope, 'user', `follow-up ${i}`));
      }
      for (const [i, scope] of scopes.entries()) {
        assert.deepEqual(
          (await memory.load(scope)).map((m) => m.content),
          [`question ${i}`, `answer ${i}`, `follow-up ${i}`],
          JSON.stringify(scope),
        );
      }
      assert.deepEqual(await memory.load({ ...main, threadId: '43' }), []);
      const loaded = await memory.load(main);
      assert.deepEqual(loaded[1], { role: 'assistant', content: 'answer 0', authorUid: 'bot:tutor', messageId: null });
    });

    it('treats a null thread as the main conversation and a null invoker as the shared memory', async () => {
      const room = freshRoom();
      await memory.append(entry({ botId: 'b1', roomToken: room, threadId: null, invokerUid: null }, 'user', 'hello'));
      const row = await tdb.db.selectFrom('conversation_messages').selectAll().where('room_token', '=', room).executeTakeFirstOrThrow();
      assert.equal(row.thread_id, '');
      assert.equal(row.invoker_uid, '');
      assert.deepEqual(
        (await memory.load({ botId: 'b1', roomToken: room, threadId: '', invokerUid: '' })).map((m) => m.content),
        ['hello'],
      );
    });

    it('loads at most the 50 newest rows', async () => {
      const scope: MemoryScope = { botId: 'b1', roomToken: freshRoom(), threadId: null, invokerUid: null };
      const total = MEMORY_ROW_LIMIT + 10;
      for (let i = 0; i < total; i += 1) await memory.append(entry(scope, i % 2 === 0 ? 'user' : 'assistant', `m${i}`));
      const loaded = await memory.load(scope, 1_000_000);
      assert.equal(loaded.length, MEMORY_ROW_LIMIT);
      assert.deepEqual(
        loaded.map((m) => m.content),
        Array.from({ length: MEMORY_ROW_LIMIT }, (_, k) => `m${total - MEMORY_ROW_LIMIT + k}`),
      );
    });

    it('trims to the budget newest first and stops at the first row that does not fit', async () => {
      const scope: MemoryScope = { botId: 'b1', roomToken: freshRoom(), threadId: null, invokerUid: null };
      await memory.append(entry(scope, 'user', 'old'.padEnd(8, '.'))); // 2 tokens, would fit but lies behind the stop
      await memory.append(entry(scope, 'assistant', 'x'.repeat(400))); // 100 tokens
      await memory.append(entry(scope, 'user', 'y'.repeat(40))); // 10 tokens
      await memory.append(entry(scope, 'assistant', 'z'.repeat(40))); // 10 tokens
      await memory.append(entry(scope, 'user', 'now'.repeat(10))); // 8 tokens
      const within = await memory.load(scope, 50);
      assert.deepEqual(
        within.map((m) => m.content),
        ['y'.repeat(40), 'z'.repeat(40), 'now'.repeat(10)],
      );
      const all = await memory.load(scope, 130);
      assert.equal(all.length, 5);
      const exact = await memory.load(scope, 8 + 10 + 10 + 100);
      assert.equal(exact.length, 4, 'a row that exactly fills the budget is kept');
    });

    it('always keeps the newest user message, even when it alone exceeds the budget', async () => {
      const scope: MemoryScope = { botId: 'b1', roomToken: freshRoom(), threadId: null, invokerUid: null };
      await memory.append(entry(scope, 'assistant', 'short'));
      await memory.append(entry(scope, 'user', 'q'.repeat(4000)));
      assert.deepEqual(
        (await memory.load(scope, 100)).map((m) => m.content),
        ['q'.repeat(4000)],
      );
      assert.deepEqual(
        (await memory.load(scope, 0)).map((m) => m.content),
        ['q'.repeat(4000)],
      );
      // An answer newer than the user message is still subject to the budget.
      await memory.append(entry(scope, 'assistant', 'a'.repeat(400)));
      assert.deepEqual(
        (await memory.load(scope, 1000)).map((m) => m.role),
        ['user'],
      );
      assert.deepEqual(
        (await memory.load(scope, 1102)).map((m) => m.role),
        ['assistant', 'user', 'assistant'],
      );
    });

    it('forgets a deleted Talk message in every bot, thread and invoker of that room only', async () => {
      const room = freshRoom();
      const other = freshRoom();
      const base: MemoryScope = { botId: 'b1', roomToken: room, threadId: null, invokerUid: null };
      await memory.append(entry(base, 'user', 'secret', { messageId: '100' }));
      await memory.append(entry(base, 'assistant', 'answer to secret', { messageId: '100' }));
      await memory.append(entry({ ...base, botId: 'b2', threadId: '9', invokerUid: 'alice' }, 'user', 'secret', { messageId: '100' }));
      await memory.append(entry(base, 'user', 'keep', { messageId: '101' }));
      await memory.append(entry({ ...base, roomToken: other }, 'user', 'same id elsewhere', { messageId: '100' }));
      assert.equal(await memory.forgetMessage(room, '100'), 3);
      assert.deepEqual(
        (await memory.load(base)).map((m) => m.content),
        ['keep'],
      );
      assert.deepEqual(await memory.load({ ...base, botId: 'b2', threadId: '9', invokerUid: 'alice' }), []);
      assert.deepEqual(
        (await memory.load({ ...base, roomToken: other })).map((m) => m.content),
        ['same id elsewhere'],
      );
      assert.equal(await memory.forgetMessage(room, '100'), 0);
    });

    it('forgets a bot in a room across all threads and invokers', async () => {
      const room = freshRoom();
      const base: MemoryScope = { botId: 'b1', roomToken: room, threadId: null, invokerUid: null };
      await memory.append(entry(base, 'user', 'a'));
      await memory.append(entry({ ...base, threadId: '5' }, 'user', 'b'));
      await memory.append(entry({ ...base, invokerUid: 'bob' }, 'user', 'c'));
      await memory.append(entry({ ...base, botId: 'b2' }, 'user', 'other bot'));
      assert.equal(await memory.forgetRoom('b1', room), 3);
      assert.deepEqual(await memory.load(base), []);
      assert.deepEqual(
        (await memory.load({ ...base, botId: 'b2' })).map((m) => m.content),
        ['other bot'],
      );
    });

    it('prunes rows older than the retention with the injected clock', async () => {
      let clock = 1_800_000_000_000;
      const aged = new ConversationMemory(tdb.db, () => clock);
      // Rows from the other tests are far older; clear them away first.
      await aged.pruneOlderThan(1);
      const scope: MemoryScope = { botId: 'b1', roomToken: freshRoom(), threadId: null, invokerUid: null };
      await aged.append(entry(scope, 'user', 'forty days ago'));
      clock += 10 * DAY;
      await aged.append(entry(scope, 'user', 'thirty days ago'));
      clock += 1;
      await aged.append(entry(scope, 'user', 'just under thirty days ago'));
      clock += 30 * DAY - 1;
      assert.equal(await aged.pruneOlderThan(30), 1, 'only the row strictly older than 30 days goes');
      assert.deepEqual(
        (await aged.load(scope)).map((m) => m.content),
        ['thirty days ago', 'just under thirty days ago'],
      );
      clock += 1;
      assert.equal(await aged.pruneOlderThan(30), 1);
      assert.equal(await aged.pruneOlderThan(30), 0);
      assert.deepEqual(
        (await aged.load(scope)).map((m) => m.content),
        ['just under thirty days ago'],
      );
      await assert.rejects(aged.pruneOlderThan(-1), RangeError);
    });

    it('forgets a user: their messages, the answers to them and their per-invoker memory', async () => {
      const room = freshRoom();
      const shared: MemoryScope = { botId: 'b1', roomToken: room, threadId: null, invokerUid: null };
      const personal: MemoryScope = { ...shared, invokerUid: 'carol' };
      await memory.append(entry(shared, 'user', 'from carol', { authorUid: 'carol', messageId: '1' }));
      await memory.append(entry(shared, 'assistant', 'answer to carol', { messageId: '1' }));
      await memory.append(entry(shared, 'user', 'from dave', { authorUid: 'dave', messageId: '2' }));
      await memory.append(entry(shared, 'assistant', 'answer to dave', { messageId: '2' }));
      await memory.append(entry(personal, 'user', 'private', { authorUid: 'carol', messageId: '3' }));
      await memory.append(entry(personal, 'assistant', 'private answer', { messageId: null }));
      await memory.append(entry({ ...shared, roomToken: freshRoom() }, 'user', 'elsewhere', { authorUid: 'dave', messageId: '1' }));
      assert.equal(await memory.forgetUser('carol'), 4);
      assert.deepEqual(
        (await memory.load(shared)).map((m) => m.content),
        ['from dave', 'answer to dave'],
      );
      assert.deepEqual(await memory.load(personal), []);
      assert.equal(await memory.forgetUser(''), 0, 'the empty uid is the shared scope, not a user');
      assert.deepEqual((await memory.load(shared)).length, 2);
    });

    it('refuses values longer than their columns on every dialect', async () => {
      const scope: MemoryScope = { botId: 'b1', roomToken: freshRoom(), threadId: null, invokerUid: null };
      await assert.rejects(memory.append(entry({ ...scope, threadId: '1'.repeat(33) }, 'user', 'x')), RangeError);
      await assert.rejects(memory.append(entry(scope, 'user', 'x', { messageId: '1'.repeat(33) })), RangeError);
      await assert.rejects(memory.append(entry({ ...scope, invokerUid: 'u'.repeat(65) }, 'user', 'x')), RangeError);
      assert.deepEqual(await memory.load(scope), []);
    });
  });
}
