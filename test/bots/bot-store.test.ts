import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { BotStore, BotValidationError, normalizeMention, type BotInput } from '../../lib/bots/bot-store.ts';
import { ConversationMemory } from '../../lib/conversation/memory.ts';
import { OnboardingService, type QuestionTree } from '../../lib/router/onboarding.ts';
import type { Database } from '../../lib/storage/schema.ts';
import type { Kysely } from 'kysely';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.ts';

const T0 = 1_700_000_000_000;

const TREE: QuestionTree = { start: 'level', questions: [{ id: 'level', text: 'Your level?', answers: [{ id: 'beginner', text: 'Beginner', next: null }] }] };

async function withDb(dialect: (typeof DIALECTS)[number], fn: (tdb: TestDatabase) => Promise<void>): Promise<void> {
  const tdb = await createTestDatabase(dialect);
  try {
    await fn(tdb);
  } finally {
    await tdb.drop();
  }
}

async function countBots(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('bots')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function expectFieldErrors(promise: Promise<unknown>, keys: string[]): Promise<BotValidationError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof BotValidationError, `expected BotValidationError, got ${String(caught)}`);
  for (const key of keys) assert.equal(typeof caught.fields[key], 'string', `field error for ${key} in ${JSON.stringify(caught.fields)}`);
  return caught;
}

// Inserts a competing bot with the same mention right after the store's uniqueness check ran.
class RacePlugin implements KyselyPlugin {
  /** The competitor runs after this many more query results; 0 = disarmed. */
  afterResults = 0;
  readonly #compete: () => Promise<void>;
  constructor(compete: () => Promise<void>) {
    this.#compete = compete;
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.afterResults > 0 && --this.afterResults === 0) await this.#compete();
    return args.result;
  }
}

describe('normalizeMention', () => {
  it('lowercases and strips exactly one leading @', () => {
    assert.equal(normalizeMention('@Tutor'), 'tutor');
    assert.equal(normalizeMention(' MATH-bot '), 'math-bot');
    assert.equal(normalizeMention('@@x'), '@x');
  });
});

for (const dialect of DIALECTS) {
  describe(`BotStore on ${dialect}`, () => {
    it('creates a bot with normalised fields and finds it by id and mention', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db, () => T0);
        const bot = await store.create(
          { displayName: '  Math Tutor ', mention: '@Math_Tutor', systemPrompt: 'Be kind.', model: '', temperature: 0.456, onboardingQuestions: TREE },
          'alice',
        );
        assert.match(bot.id, /^[0-9a-f-]{36}$/);
        assert.equal(bot.displayName, 'Math Tutor');
        assert.equal(bot.mention, 'math_tutor');
        assert.equal(bot.model, null, 'an empty model means the default');
        assert.equal(bot.temperature, 0.46);
        assert.equal(bot.active, true);
        assert.equal(bot.description, '');
        assert.equal(bot.ownerUid, 'alice');
        assert.equal(bot.createdAt, T0);
        assert.deepEqual(bot.onboardingQuestions, TREE);
        assert.deepEqual(await store.get(bot.id), bot);
        assert.deepEqual(await store.getByMention('MATH_TUTOR'), bot);
        assert.deepEqual(await store.getByMention('@math_tutor'), bot);
        assert.equal(await store.getByMention('nobody'), null);
        assert.equal(await store.getByMention('not a mention'), null);
        assert.equal(await store.get('missing'), null);
      });
    });

    it('keeps temperature null (inherit) and rounds valid values to two decimals', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db);
        assert.equal((await store.create({ displayName: 'A', mention: 'a' }, 'u')).temperature, null);
        const b = await store.create({ displayName: 'B', mention: 'b', temperature: 0.35 }, 'u');
        assert.equal((await store.get(b.id))?.temperature, 0.35);
        const c = await store.create({ displayName: 'C', mention: 'c', temperature: 1 }, 'u');
        assert.equal((await store.get(c.id))?.temperature, 1);
        const d = await store.create({ displayName: 'D', mention: 'd', temperature: 0.004 }, 'u');
        assert.equal((await store.get(d.id))?.temperature, 0);
      });
    });

    it('reports each invalid field and writes nothing', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db);
        const valid: BotInput = { displayName: 'Tutor', mention: 'tutor' };
        const cases: Array<[string, Record<string, unknown>]> = [
          ['displayName', { displayName: '   ' }],
          ['displayName', { displayName: 'x'.repeat(201) }],
          ['displayName', { displayName: 42 }],
          ['mention', { mention: 'has space' }],
          ['mention', { mention: '' }],
          ['mention', { mention: '@' }],
          ['mention', { mention: '@@tutor' }],
          ['mention', { mention: 'a'.repeat(101) }],
          ['mention', { mention: 'tütor' }],
          ['systemPrompt', { systemPrompt: 'x'.repeat(20001) }],
          ['model', { model: 'm'.repeat(256) }],
          ['model', { model: 7 }],
          ['temperature', { temperature: 1.01 }],
          ['temperature', { temperature: -0.1 }],
          ['temperature', { temperature: '0.5' }],
          ['temperature', { temperature: Number.NaN }],
          ['active', { active: 'yes' }],
          ['onboardingQuestions', { onboardingQuestions: { start: 'missing', questions: TREE.questions } }],
          ['onboardingQuestions', { onboardingQuestions: 'not a tree' }],
        ];
        for (const [field, override] of cases) {
          const error = await expectFieldErrors(store.create({ ...valid, ...override } as BotInput, 'alice'), [field]);
          assert.deepEqual(
            Object.keys(error.fields).filter((k) => k !== field && !k.startsWith(`${field}.`)),
            [],
            `only ${field} is reported for ${JSON.stringify(override).slice(0, 80)}`,
          );
        }
        await expectFieldErrors(store.create(valid, ''), ['ownerUid']);
        assert.equal(await countBots(db), 0);
      });
    });

    it('reports several invalid fields together and points into the question tree', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db);
        const error = await expectFieldErrors(
          store.create(
            {
              displayName: '',
              mention: 'bad mention',
              temperature: 3,
              onboardingQuestions: { start: 'q', questions: [{ id: 'q', text: 'Q?', answers: [{ id: 'a', text: 'A', next: 'nowhere' }] }] },
            },
            'alice',
          ),
          ['displayName', 'mention', 'temperature', 'onboardingQuestions', 'onboardingQuestions.questions.0.answers.0.next'],
        );
        assert.match(error.message, /displayName/);
        assert.equal(await countBots(db), 0);
      });
    });

    it('refuses a duplicate mention in any case as a field error', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db);
        const first = await store.create({ displayName: 'Tutor', mention: 'tutor' }, 'alice');
        await expectFieldErrors(store.create({ displayName: 'Other', mention: '@Tutor' }, 'bob'), ['mention']);
        await expectFieldErrors(store.create({ displayName: 'Other', mention: 'TUTOR' }, 'bob'), ['mention']);
        const both = await expectFieldErrors(store.create({ displayName: '', mention: 'tutor' }, 'bob'), ['displayName', 'mention']);
        assert.match(both.fields.mention ?? '', /already used/);
        assert.equal(await countBots(db), 1);
        const second = await store.create({ displayName: 'Other', mention: 'other' }, 'bob');
        await expectFieldErrors(store.update(second.id, { mention: '@TuToR' }), ['mention']);
        assert.equal((await store.get(second.id))?.mention, 'other');
        const same = await store.update(first.id, { mention: 'Tutor', displayName: 'Tutor 2' });
        assert.equal(same?.displayName, 'Tutor 2', 'keeping its own mention is not a conflict');
      });
    });

    it('turns a unique violation from a concurrent insert into a field error', async () => {
      await withDb(dialect, async (tdb) => {
        const other = tdb.reopen();
        try {
          const plugin = new RacePlugin(async () => {
            await new BotStore(other.db).create({ displayName: 'Fast', mention: 'race' }, 'mallory');
          });
          const store = new BotStore(tdb.db.withPlugin(plugin));
          // create() first checks the mention; the competitor lands right after that check.
          plugin.afterResults = 1;
          const error = await expectFieldErrors(store.create({ displayName: 'Slow', mention: 'Race' }, 'alice'), ['mention']);
          assert.deepEqual(Object.keys(error.fields), ['mention']);
          assert.equal(plugin.afterResults, 0, 'the competing insert ran between check and insert');
          const winner = await store.getByMention('race');
          assert.equal(winner?.ownerUid, 'mallory');

          const target = await store.create({ displayName: 'Target', mention: 'target' }, 'alice');
          const racer = new RacePlugin(async () => {
            await new BotStore(other.db).create({ displayName: 'Fast', mention: 'wanted' }, 'mallory');
          });
          const updating = new BotStore(tdb.db.withPlugin(racer));
          // update() looks the bot up, then checks the mention; the competitor lands after the check.
          racer.afterResults = 2;
          await expectFieldErrors(updating.update(target.id, { mention: 'wanted' }), ['mention']);
          assert.equal(racer.afterResults, 0);
          assert.equal((await store.get(target.id))?.mention, 'target');
        } finally {
          await other.close();
        }
      });
    });

    it('gives exactly one of two simultaneous creates the mention', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db);
        const results = await Promise.allSettled([
          store.create({ displayName: 'One', mention: 'twin' }, 'alice'),
          store.create({ displayName: 'Two', mention: 'TWIN' }, 'bob'),
        ]);
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
        const rejected = results.find((r) => r.status === 'rejected');
        assert.ok(rejected?.status === 'rejected' && rejected.reason instanceof BotValidationError);
        assert.equal(await countBots(db), 1);
      });
    });

    it('updates only the given fields, validates the patch and stamps updatedAt', async () => {
      await withDb(dialect, async ({ db }) => {
        let now = T0;
        const store = new BotStore(db, () => now);
        const bot = await store.create({ displayName: 'Tutor', mention: 'tutor', systemPrompt: 'P', temperature: 0.2, onboardingQuestions: TREE }, 'alice');
        now = T0 + 1000;
        const updated = await store.update(bot.id, { systemPrompt: 'Q', temperature: null, model: 'primary:llama' });
        assert.deepEqual(updated, { ...bot, systemPrompt: 'Q', temperature: null, model: 'primary:llama', updatedAt: T0 + 1000 });
        await expectFieldErrors(store.update(bot.id, { systemPrompt: 'x'.repeat(20001), displayName: 'New' }), ['systemPrompt']);
        await expectFieldErrors(store.update(bot.id, { onboardingQuestions: { start: 'a', questions: [] } as unknown as QuestionTree }), [
          'onboardingQuestions',
        ]);
        assert.deepEqual(await store.get(bot.id), updated, 'a failed update changes nothing');
        assert.deepEqual(await store.update(bot.id, { onboardingQuestions: undefined }), { ...updated, updatedAt: now }, 'undefined leaves a field as it is');
        const cleared = await store.update(bot.id, { onboardingQuestions: null });
        assert.equal(cleared?.onboardingQuestions, null);
        assert.equal(await store.update('missing', { displayName: 'X' }), null);
      });
    });

    it('lists active bots, bots by owner and the active mentions', async () => {
      await withDb(dialect, async ({ db }) => {
        let now = T0;
        const store = new BotStore(db, () => (now += 1));
        const zeta = await store.create({ displayName: 'Zeta', mention: 'zeta' }, 'alice');
        const alpha = await store.create({ displayName: 'Alpha', mention: 'alpha' }, 'bob');
        const off = await store.create({ displayName: 'Off', mention: 'off', active: false }, 'alice');
        assert.deepEqual(
          (await store.listActive()).map((b) => b.id),
          [alpha.id, zeta.id],
        );
        assert.deepEqual(
          (await store.listByOwner('alice')).map((b) => b.id),
          [zeta.id, off.id],
        );
        assert.deepEqual(await store.listByOwner('nobody'), []);
        assert.deepEqual(
          await store.activeMentions(),
          new Map([
            ['zeta', zeta.id],
            ['alpha', alpha.id],
          ]),
        );
        await store.update(zeta.id, { active: false });
        await store.update(off.id, { active: true });
        assert.deepEqual(
          await store.activeMentions(),
          new Map([
            ['alpha', alpha.id],
            ['off', off.id],
          ]),
        );
      });
    });

    it('deletes a bot with its room states and memory, leaving other bots alone', async () => {
      await withDb(dialect, async ({ db }) => {
        const store = new BotStore(db);
        const onboarding = new OnboardingService(db);
        const memory = new ConversationMemory(db);
        const gone = await store.create({ displayName: 'Gone', mention: 'gone' }, 'alice');
        const kept = await store.create({ displayName: 'Kept', mention: 'kept' }, 'alice');
        for (const bot of [gone, kept]) {
          for (const room of ['r1', 'r2']) {
            await onboarding.start(bot, room, 'alice', null);
            for (const threadId of [null, '7']) {
              await memory.append({
                botId: bot.id,
                roomToken: room,
                threadId,
                invokerUid: null,
                role: 'user',
                authorUid: 'alice',
                messageId: '1',
                content: 'hi',
              });
            }
          }
        }
        assert.equal(await store.delete(gone.id), true);
        assert.equal(await store.get(gone.id), null);
        const states = await db.selectFrom('room_states').select('bot_id').execute();
        assert.deepEqual(new Set(states.map((s) => s.bot_id)), new Set([kept.id]));
        assert.equal(states.length, 2);
        const rows = await db.selectFrom('conversation_messages').select('bot_id').execute();
        assert.deepEqual(new Set(rows.map((r) => r.bot_id)), new Set([kept.id]));
        assert.equal(rows.length, 4);
        assert.equal(await store.delete(gone.id), false);
        assert.ok(await store.get(kept.id));
      });
    });
  });
}
