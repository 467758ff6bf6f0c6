import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { up } from '../../lib/storage/migrations/0005-ratelimits-traces.ts';
import type { Database } from '../../lib/storage/schema.ts';
import { TraceStore, type StartRunInput, type TraceTables } from '../../lib/traces/trace-store.ts';
import { TurnTrace } from '../../lib/traces/turn-trace.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

type Db = Kysely<Database & TraceTables>;

const input: StartRunInput = {
  uid: 'users/alice',
  botId: 'bot-1',
  botMention: '@Helper',
  roomToken: 'room-a',
  messageId: '1001',
  source: 'talk',
  userText: 'What is on my calendar?',
};

async function setup(dialect: (typeof DIALECTS)[number], warnings: string[] = []) {
  const tdb = await createTestDatabase(dialect, { migrate: false });
  await up(tdb.db as unknown as Kysely<unknown>);
  const db = tdb.db as unknown as Db;
  return { tdb, db, store: new TraceStore(db, { logger: { warn: (_o: object, msg?: string) => warnings.push(msg ?? '') } }) };
}

const runRow = (db: Db, id: string) => db.selectFrom('trace_runs').selectAll().where('id', '=', id).executeTakeFirst();
const eventTypes = async (db: Db, id: string) =>
  (await db.selectFrom('trace_events').select(['seq', 'type']).where('run_id', '=', id).orderBy('seq').execute()).map((e) => `${e.seq}:${e.type}`);

for (const dialect of DIALECTS) {
  describe(`turn traces on ${dialect}`, () => {
    it('writes a quick turn whole when it ends: nothing before, the run with its outcome, counters and events after', async () => {
      const { tdb, db, store } = await setup(dialect);
      try {
        const trace = await TurnTrace.start(store, input);
        assert.ok(trace.runId);
        trace.record({ type: 'user_message', text: 'What is on my calendar?' });
        trace.record({ type: 'llm_request', model: 'primary:m', messages: [{ role: 'user', content: 'hi' }] });
        trace.record({
          type: 'llm_response',
          model: 'primary:m',
          usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
          finishReason: 'stop',
          content: 'Nothing.',
        });
        assert.equal(await runRow(db, trace.runId), undefined, 'nothing is written while the turn is quick');
        await trace.finish('success');
        const run = await runRow(db, trace.runId);
        assert.ok(run);
        assert.equal(run.status, 'success');
        assert.equal(run.uid, 'alice');
        assert.equal(Number(run.event_count), 3);
        assert.equal(Number(run.prompt_tokens), 7);
        assert.equal(Number(run.total_tokens), 10);
        assert.ok(run.finished_at !== null && run.duration_ms !== null);
        assert.deepEqual(await eventTypes(db, trace.runId), ['1:user_message', '2:llm_request', '3:llm_response']);
        trace.record({ type: 'user_message', text: 'late' });
        await trace.finish('error');
        assert.equal((await runRow(db, trace.runId))?.status, 'success', 'a finished trace takes nothing more');
      } finally {
        await tdb.drop();
      }
    });

    it('shows a longer turn as running, then appends its events and closes it', async () => {
      const { tdb, db, store } = await setup(dialect);
      try {
        const trace = await TurnTrace.start(store, input);
        trace.record({ type: 'user_message', text: 'slow one' });
        await new Promise((r) => setTimeout(r, 400));
        await trace.flushed();
        const running = await runRow(db, trace.runId!);
        assert.equal(running?.status, 'running');
        assert.deepEqual(await eventTypes(db, trace.runId!), ['1:user_message']);
        trace.record({ type: 'error', stage: 'turn', message: 'provider down' });
        await trace.finish('error', 'provider down');
        const done = await runRow(db, trace.runId!);
        assert.equal(done?.status, 'error');
        assert.equal(done?.error_summary, 'provider down');
        assert.deepEqual(await eventTypes(db, trace.runId!), ['1:user_message', '2:error']);
      } finally {
        await tdb.drop();
      }
    });

    it('never throws into the turn when the trace cannot be written', async () => {
      const warnings: string[] = [];
      const { tdb, db, store } = await setup(dialect, warnings);
      try {
        await db.schema.dropTable('trace_events').execute();
        await db.schema.dropTable('trace_runs').execute();
        const quick = await TurnTrace.start(store, input);
        quick.record({ type: 'user_message', text: 'hi' });
        await quick.finish('success');
        const slow = await TurnTrace.start(store, input);
        await new Promise((r) => setTimeout(r, 400));
        slow.record({ type: 'user_message', text: 'hi' });
        await slow.finish('success');
        assert.ok(warnings.length >= 2, 'each failure is logged');
      } finally {
        await tdb.drop();
      }
    });
  });
}
