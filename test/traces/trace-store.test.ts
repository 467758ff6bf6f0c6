import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { registerSecret } from '../../lib/log/redact.ts';
import { up } from '../../lib/storage/migrations/0005-ratelimits-traces.ts';
import type { Database } from '../../lib/storage/schema.ts';
import { TraceStore, type StartRunInput, type TraceTables } from '../../lib/traces/trace-store.ts';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

type Db = Kysely<Database & TraceTables>;
const T0 = Date.UTC(2025, 4, 20, 12, 0, 0);
const DAY = 86_400_000;

const PROVIDER_KEY = 'sk-proj-Z9y8X7w6V5u4T3s2R1q0';
const APP_SECRET = 'registered-app-secret-9f8e7d6c5b4a';
const BEARER = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl';
const SYSTEM_PROMPT = 'You are the internal helpdesk bot. Never reveal ticket 4711-CONFIDENTIAL.';
registerSecret(APP_SECRET);

class Clock {
  t = T0;
  now = () => this.t;
}

async function setup(dialect: (typeof DIALECTS)[number], clock: Clock, logger?: { warn(obj: object, msg?: string): void }) {
  const tdb: TestDatabase = await createTestDatabase(dialect, { migrate: false });
  await up(tdb.db as unknown as Kysely<unknown>);
  const db = tdb.db as unknown as Db;
  return { tdb, db, store: new TraceStore(db, { now: clock.now, ...(logger ? { logger } : {}) }) };
}

function start(overrides: Partial<StartRunInput> = {}): StartRunInput {
  return {
    uid: 'alice',
    botId: 'bot-1',
    botMention: '@Helper',
    roomToken: 'room-a',
    messageId: '1001',
    source: 'talk',
    userText: 'What is on my calendar?',
    ...overrides,
  };
}

async function dump(db: Db): Promise<string> {
  const runs = await db.selectFrom('trace_runs').selectAll().execute();
  const events = await db.selectFrom('trace_events').selectAll().execute();
  return JSON.stringify({ runs, events });
}

for (const dialect of DIALECTS) {
  describe(`trace store on ${dialect}`, () => {
    it('never stores an API key, Authorization value or registered secret, wherever it appears', async () => {
      const clock = new Clock();
      const { tdb, db, store } = await setup(dialect, clock);
      try {
        const id = await store.startRun(start({ userText: `my key is ${PROVIDER_KEY}, please check`, storeToolContent: true }));
        assert.ok(id);
        await store.recordEvent(id, { type: 'user_message', text: `Authorization: Bearer ${BEARER}` });
        await store.recordEvent(id, {
          type: 'tool_call',
          toolName: 'http_get',
          args: {
            url: `https://example.org/?api_key=${PROVIDER_KEY}`,
            headers: { Authorization: `Basic ${Buffer.from(`alice:${APP_SECRET}`).toString('base64')}` },
          },
        });
        await store.recordEvent(id, {
          type: 'tool_result',
          toolName: 'http_get',
          result: { status: 200, echo: `authorization=${BEARER}`, config: { apiKey: PROVIDER_KEY, note: `secret ${APP_SECRET}` } },
        });
        await store.recordEvent(id, { type: 'error', stage: 'llm', message: `401 for key ${PROVIDER_KEY} with "Authorization": "Bearer ${BEARER}"` });
        await store.recordEvent(id, { type: 'assistant_response', text: `Your header was x-api-key: ${PROVIDER_KEY}` });
        await store.finishRun(id, 'partial', `failed with ${PROVIDER_KEY}`);
        const text = await dump(db);
        for (const secret of [PROVIDER_KEY, BEARER, APP_SECRET, Buffer.from(`alice:${APP_SECRET}`).toString('base64')]) {
          assert.ok(!text.includes(secret), `${secret.slice(0, 12)}… must not be stored`);
        }
        const trace = await store.getForUser('alice', id);
        assert.ok(trace?.run.preview.startsWith('my key is '), 'the rest of the text survives');
        assert.equal(trace?.events.find((e) => e.type === 'tool_result')?.toolName, 'http_get');
      } finally {
        await tdb.drop();
      }
    });

    it('keeps counts, sizes and tool names of model requests, never the system prompt', async () => {
      const clock = new Clock();
      const { tdb, db, store } = await setup(dialect, clock);
      try {
        const id = await store.startRun(start());
        const messages = [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: 'What is on my calendar?' },
          { role: 'assistant', content: null },
          { role: 'tool', content: 'RAG chunk: quarterly numbers' },
        ];
        await store.recordEvent(id, {
          type: 'llm_request',
          model: 'primary:llama',
          messages,
          tools: [{ type: 'function', function: { name: 'calendar_list', description: 'secret tool docs' } }, { name: 'wiki_read' }],
        });
        await store.recordEvent(id, {
          type: 'llm_response',
          model: 'primary:llama',
          usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
          finishReason: 'tool_calls',
          content: 'thinking about the RAG chunk',
          toolCalls: [{ name: 'calendar_list' }],
        });
        const text = await dump(db);
        assert.ok(!text.includes('4711-CONFIDENTIAL'));
        assert.ok(!text.includes('quarterly numbers'));
        assert.ok(!text.includes('secret tool docs'));
        const trace = await store.getForUser('alice', id ?? '');
        const request = trace?.events.find((e) => e.type === 'llm_request')?.payload as Record<string, any>;
        assert.equal(request.messageCount, 4);
        assert.deepEqual(request.byRole.system, { count: 1, chars: SYSTEM_PROMPT.length });
        assert.equal(request.totalChars, SYSTEM_PROMPT.length + 'What is on my calendar?'.length + 'RAG chunk: quarterly numbers'.length);
        assert.deepEqual(request.tools, ['calendar_list', 'wiki_read']);
        const response = trace?.events.find((e) => e.type === 'llm_response')?.payload as Record<string, any>;
        assert.deepEqual(response.usage, { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 }, 'token fields are not redacted');
        assert.deepEqual(response.toolCalls, ['calendar_list']);
      } finally {
        await tdb.drop();
      }
    });

    it('stores tool results as size and hash unless the user opted in', async () => {
      const clock = new Clock();
      const { tdb, db, store } = await setup(dialect, clock);
      try {
        const result = { files: ['Budget 2025.xlsx', 'Salaries.ods'], total: 2 };
        const json = JSON.stringify(result);
        const hidden = await store.startRun(start());
        await store.recordEvent(hidden, { type: 'tool_call', toolName: 'files_search', args: { query: 'salaries' } });
        await store.recordEvent(hidden, { type: 'tool_result', toolName: 'files_search', result, durationMs: 42 });
        const text = await dump(db);
        assert.ok(!text.includes('Salaries.ods'));
        assert.ok(!text.includes('"salaries"'), 'arguments are kept as names, size and hash too');
        const events = (await store.getForUser('alice', hidden ?? ''))?.events ?? [];
        const res = events.find((e) => e.type === 'tool_result');
        assert.deepEqual(res?.payload, { size: Buffer.byteLength(json), sha256: createHash('sha256').update(json).digest('hex'), isError: false });
        assert.equal(res?.preview, null);
        assert.equal(res?.durationMs, 42);
        assert.equal(res?.status, 'ok');
        assert.deepEqual((events.find((e) => e.type === 'tool_call')?.payload as { argumentNames: string[] }).argumentNames, ['query']);

        const shown = await store.startRun(start({ storeToolContent: true }));
        await store.recordEvent(shown, { type: 'tool_call', toolName: 'files_search', args: { query: 'salaries' } });
        await store.recordEvent(shown, { type: 'tool_result', toolName: 'files_search', result, isError: false });
        const opted = (await store.getForUser('alice', shown ?? ''))?.events ?? [];
        const full = opted.find((e) => e.type === 'tool_result');
        assert.equal((full?.payload as { content: string }).content, json);
        assert.equal(full?.preview, json);
        assert.deepEqual((opted.find((e) => e.type === 'tool_call')?.payload as { arguments: unknown }).arguments, { query: 'salaries' });
        assert.equal((await store.getForUser('alice', shown ?? ''))?.run.storeToolContent, true);
      } finally {
        await tdb.drop();
      }
    });

    it('caps the run preview at 500 and event previews at 1000 characters', async () => {
      const clock = new Clock();
      const { tdb, store } = await setup(dialect, clock);
      try {
        const long = 'ä'.repeat(3000);
        const id = await store.startRun(start({ userText: long, storeToolContent: true }));
        await store.recordEvent(id, { type: 'user_message', text: long });
        await store.recordEvent(id, { type: 'assistant_response', text: '😀'.repeat(800) });
        await store.recordEvent(id, { type: 'tool_result', toolName: 't', result: 'x'.repeat(5000) });
        const trace = await store.getForUser('alice', id ?? '');
        assert.equal(trace?.run.preview, long.slice(0, 500));
        for (const e of trace?.events ?? []) assert.ok((e.preview ?? '').length <= 1000, `${e.type} preview`);
        const emoji = trace?.events.find((e) => e.type === 'assistant_response')?.preview ?? '';
        assert.ok(!/[\ud800-\udbff]$/.test(emoji), 'no half surrogate pair at the cut');
        assert.deepEqual(trace?.events.find((e) => e.type === 'user_message')?.payload, { length: long.length });
      } finally {
        await tdb.drop();
      }
    });

    it('numbers events, sums tokens, counts tool calls and records the outcome', async () => {
      const clock = new Clock();
      const { tdb, store } = await setup(dialect, clock);
      try {
        const id = await store.startRun(start());
        await store.recordEvent(id, { type: 'user_message', text: 'hi' });
        await store.recordEvent(id, { type: 'llm_response', usage: { prompt_tokens: 100, completion_tokens: 20 } });
        await store.recordEvent(id, { type: 'tool_call', toolName: 'a', args: {} });
        await store.recordEvent(id, { type: 'tool_result', toolName: 'a', result: 'ok' });
        await store.recordEvent(id, { type: 'tool_call', toolName: 'b', args: {} });
        await store.recordEvent(id, { type: 'tool_result', toolName: 'b', result: 'boom', isError: true });
        await store.recordEvent(id, { type: 'llm_response', usage: { prompt_tokens: 300, completion_tokens: 50, total_tokens: 350 } });
        await store.recordEvent(id, { type: 'assistant_response', text: 'done' });
        clock.t = T0 + 2_500;
        await store.finishRun(id, 'success');
        const trace = await store.getForUser('alice', id ?? '');
        assert.deepEqual(
          trace?.events.map((e) => e.seq),
          [1, 2, 3, 4, 5, 6, 7, 8],
        );
        assert.equal(trace?.events[5]?.status, 'error');
        const run = trace?.run;
        assert.equal(run?.status, 'success');
        assert.equal(run?.eventCount, 8);
        assert.equal(run?.toolCallCount, 2);
        assert.equal(run?.promptTokens, 400);
        assert.equal(run?.completionTokens, 70);
        assert.equal(run?.totalTokens, 120 + 350);
        assert.equal(run?.durationMs, 2_500);
        assert.equal(run?.finishedAt, T0 + 2_500);
        assert.equal(run?.botMention, 'helper');
      } finally {
        await tdb.drop();
      }
    });

    it('shows users only their own runs', async () => {
      const clock = new Clock();
      const { tdb, store } = await setup(dialect, clock);
      try {
        const alice = await store.startRun(start({ uid: 'users/alice' }));
        const bob = await store.startRun(start({ uid: 'bob', userText: 'bob private' }));
        assert.ok(alice && bob);
        assert.equal((await store.getForUser('alice', alice))?.run.uid, 'alice', "'users/alice' is alice");
        assert.equal(await store.getForUser('alice', bob), null);
        assert.equal(await store.getForUser('users/bob', alice), null);
        const list = await store.listForUser('alice');
        assert.deepEqual(
          list.traces.map((t) => t.id),
          [alice],
        );
        assert.equal(list.total, 1);
        assert.equal(await store.deleteForUser('alice', bob), false);
        assert.ok(await store.getForUser('bob', bob), 'bob’s run survives alice’s delete attempt');
        assert.equal(await store.deleteForUser('bob', bob), true);
        assert.equal(await store.getForUser('bob', bob), null);
      } finally {
        await tdb.drop();
      }
    });

    it('filters by text, status, bot, time, errors and tools, with clamped pagination', async () => {
      const clock = new Clock();
      const { tdb, store } = await setup(dialect, clock);
      try {
        const ids: string[] = [];
        const make = async (i: number, o: Partial<StartRunInput>, status: 'success' | 'error' | 'partial', tools = 0, error?: string) => {
          clock.t = T0 + i * 60_000;
          const id = await store.startRun(start(o));
          assert.ok(id);
          for (let k = 0; k < tools; k++) await store.recordEvent(id, { type: 'tool_call', toolName: 'x', args: {} });
          if (error) await store.recordEvent(id, { type: 'error', stage: 'tool', message: error });
          await store.finishRun(id, status);
          ids.push(id);
          return id;
        };
        const r0 = await make(0, { userText: 'Budget report for 100% of Q1', botId: 'bot-1', botMention: 'finance' }, 'success', 2);
        const r1 = await make(1, { userText: 'weather tomorrow', botId: 'bot-2', botMention: 'weather' }, 'error', 0, 'provider timeout');
        const r2 = await make(2, { userText: 'budget_2025 file', botId: 'bot-1', botMention: 'finance' }, 'partial', 1, 'send failed');
        const r3 = await make(3, { userText: 'hello', botId: 'bot-2', botMention: 'weather' }, 'success');
        await make(4, { uid: 'bob', userText: 'budget of bob' }, 'success', 3);

        const ids_ = async (f: Parameters<TraceStore['listForUser']>[1]) => (await store.listForUser('alice', f)).traces.map((t) => t.id);
        assert.deepEqual(await ids_({}), [r3, r2, r1, r0], 'newest first');
        assert.deepEqual(await ids_({ q: 'BUDGET' }), [r2, r0], 'case-insensitive text search');
        assert.deepEqual(await ids_({ q: '100%' }), [r0], '% is literal');
        assert.deepEqual(await ids_({ q: 'budget_' }), [r2], '_ is literal');
        assert.deepEqual(await ids_({ q: 'timeout' }), [r1], 'matches the error summary');
        assert.deepEqual(await ids_({ q: 'weather' }), [r3, r1], 'matches the mention');
        assert.deepEqual(await ids_({ status: 'success' }), [r3, r0]);
        assert.deepEqual(await ids_({ botId: 'bot-1' }), [r2, r0]);
        assert.deepEqual(await ids_({ botMention: '@Finance' }), [r2, r0]);
        assert.deepEqual(await ids_({ from: T0 + 60_000, to: T0 + 2 * 60_000 }), [r2, r1], 'inclusive bounds');
        assert.deepEqual(await ids_({ onlyErrors: true }), [r2, r1]);
        assert.deepEqual(await ids_({ onlyWithTools: true }), [r2, r0]);
        assert.deepEqual(await ids_({ onlyWithTools: true, status: 'partial' }), [r2]);

        const page = await store.listForUser('alice', { limit: 2, offset: 1 });
        assert.deepEqual(
          page.traces.map((t) => t.id),
          [r2, r1],
        );
        assert.equal(page.total, 4, 'total ignores pagination');
        assert.equal((await store.listForUser('alice', { limit: 0 })).traces.length, 1, 'limit is at least 1');
        for (let i = 0; i < 110; i++) await store.startRun(start({ userText: `bulk ${i}` }));
        const capped = await store.listForUser('alice', { limit: 1000 });
        assert.equal(capped.traces.length, 100, 'limit is at most 100');
        assert.equal((await store.listForUser('alice')).traces.length, 25, 'default page of 25');
        assert.equal(capped.total, 114);
      } finally {
        await tdb.drop();
      }
    });

    it('gives admins metadata only, and audits every content read', async () => {
      const clock = new Clock();
      const { tdb, store } = await setup(dialect, clock);
      try {
        const id = await store.startRun(start({ userText: 'private question' }));
        await store.recordEvent(id, { type: 'error', stage: 'llm', message: 'private failure detail' });
        await store.finishRun(id, 'error');
        await store.startRun(start({ uid: 'bob' }));
        const all = await store.listAll({});
        assert.equal(all.total, 2);
        const text = JSON.stringify(all);
        assert.ok(!text.includes('private question') && !text.includes('private failure detail'));
        assert.ok(!('preview' in (all.traces[0] ?? {})) && !('errorSummary' in (all.traces[0] ?? {})));
        assert.deepEqual(
          (await store.listAll({ uid: 'alice' })).traces.map((t) => t.id),
          [id],
        );
        assert.equal((await store.listAll({ q: 'private' })).total, 0, 'admin search never looks into content');
        assert.equal((await store.listAll({ onlyErrors: true })).total, 1);

        assert.deepEqual(await store.auditLog(), []);
        clock.t = T0 + 5_000;
        const read = await store.readContentAsAdmin('users/admin', id ?? '');
        assert.equal(read?.run.preview, 'private question');
        assert.equal(read?.events.length, 1);
        const audit = await store.auditLog();
        assert.equal(audit.length, 1);
        assert.deepEqual({ ...audit[0], id: undefined }, { id: undefined, adminUid: 'admin', runId: id, ownerUid: 'alice', at: T0 + 5_000 });
        assert.equal(await store.readContentAsAdmin('admin', 'no-such-run'), null);
        assert.equal((await store.auditLog()).length, 1, 'nothing read, nothing audited');
        assert.equal((await store.auditLog({ ownerUid: 'bob' })).length, 0);
        assert.equal((await store.auditLog({ runId: id ?? '' })).length, 1);
      } finally {
        await tdb.drop();
      }
    });

    it('prunes runs older than 30 days with their events, keeping the audit trail', async () => {
      const clock = new Clock();
      const { tdb, db, store } = await setup(dialect, clock);
      try {
        const old = await store.startRun(start({ userText: 'old' }));
        await store.recordEvent(old, { type: 'user_message', text: 'old' });
        await store.readContentAsAdmin('admin', old ?? '');
        clock.t = T0 + 2 * DAY;
        const recent = await store.startRun(start({ userText: 'recent' }));
        await store.recordEvent(recent, { type: 'user_message', text: 'recent' });
        clock.t = T0 + 30 * DAY;
        assert.deepEqual(await store.prune(), { runs: 0, events: 0 }, 'exactly 30 days is kept');
        clock.t = T0 + 30 * DAY + 1;
        assert.deepEqual(await store.prune(), { runs: 1, events: 1 });
        assert.deepEqual(
          (await store.listForUser('alice')).traces.map((t) => t.id),
          [recent],
        );
        const left = await db.selectFrom('trace_events').select('run_id').execute();
        assert.deepEqual(
          left.map((e) => e.run_id),
          [recent],
        );
        assert.equal((await store.auditLog()).length, 1);
        assert.deepEqual(await store.prune(1), { runs: 1, events: 1 }, 'retention is configurable');
      } finally {
        await tdb.drop();
      }
    });

    it('anonymises a removed bot’s runs and clears a user’s history with counts', async () => {
      const clock = new Clock();
      const { tdb, store } = await setup(dialect, clock);
      try {
        const a = await store.startRun(start({ botId: 'bot-gone' }));
        await store.recordEvent(a, { type: 'tool_call', toolName: 'x', args: {} });
        await store.recordEvent(a, { type: 'llm_response', usage: { total_tokens: 9 } });
        await store.startRun(start({ botId: 'bot-kept' }));
        await store.startRun(start({ uid: 'bob', botId: 'bot-gone' }));
        assert.equal(await store.removeBot('bot-gone'), 2);
        const run = (await store.getForUser('alice', a ?? ''))?.run;
        assert.equal(run?.botId, null);
        assert.equal(run?.toolCallCount, 1);
        assert.equal(run?.totalTokens, 9);
        assert.equal(run?.eventCount, 2);
        assert.deepEqual(await store.clearForUser('users/alice'), { runs: 2, events: 2 });
        assert.equal((await store.listForUser('alice')).total, 0);
        assert.equal((await store.listForUser('bob')).total, 1);
      } finally {
        await tdb.drop();
      }
    });

    it('never throws into the turn when a write fails', async () => {
      const clock = new Clock();
      const warnings: string[] = [];
      const logger = { warn: (obj: object) => void warnings.push(JSON.stringify(obj)) };
      const tdb = await createTestDatabase(dialect, { migrate: false });
      try {
        // No trace tables at all: every write fails.
        const store = new TraceStore(tdb.db as unknown as Db, { now: clock.now, logger });
        const id = await store.startRun(start());
        assert.equal(id, null);
        await store.recordEvent(null, { type: 'user_message', text: 'x' });
        await store.recordEvent('missing-run', { type: 'user_message', text: 'x' });
        await store.finishRun('missing-run', 'error', 'x');
        assert.deepEqual(
          warnings.map((w) => (JSON.parse(w) as { op: string }).op),
          ['startRun', 'recordEvent', 'finishRun'],
        );
      } finally {
        await tdb.drop();
      }
    });

    it('ignores an event for an unknown run without throwing', async () => {
      const clock = new Clock();
      const warnings: object[] = [];
      const { tdb, db, store } = await setup(dialect, clock, { warn: (obj) => void warnings.push(obj) });
      try {
        await store.recordEvent('not-a-run', { type: 'assistant_response', text: 'x' });
        assert.equal(warnings.length, 1);
        assert.equal((await db.selectFrom('trace_events').selectAll().execute()).length, 0);
      } finally {
        await tdb.drop();
      }
    });
  });
}
