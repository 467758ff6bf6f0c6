import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AGENT_DEFAULTS,
  AGENT_SETTINGS_KEY,
  forcedSearchPhraseList,
  loadAgentSettings,
  parseAgentSettings,
  saveAgentSettings,
} from '../../lib/agent/agent-settings.ts';
import { requiresConfirmation, TurnTaint } from '../../lib/tools/confirmation-gate.ts';
import { asksForSearch, initialToolChoice, searchCandidates, type ToolChoiceInput } from '../../lib/agent/tool-choice.ts';
import { RateGate, RateLimitedError, rateKeyFor } from '../../lib/ratelimit/rate-gate.ts';
import type { AcquireResult, RateLimiter } from '../../lib/ratelimit/rate-limiter.ts';
import { SettingsStore } from '../../lib/storage/settings-store.ts';
import { analyzePolicy, destructivePolicy, readPolicy, searchPolicy, transcribePolicy, unknownPolicy, writePolicy } from '../../lib/tools/tool-policy.ts';
import type { JsonSchema, ToolDefinition } from '../../lib/tools/tool-provider.ts';
import { createTestDatabase } from '../helpers/databases.ts';

const schema = (props: Record<string, unknown>): JsonSchema => ({ type: 'object', properties: props }) as JsonSchema;
const tool = (name: string, policy: ToolDefinition['policy'], props: Record<string, unknown> = {}, description = name): ToolDefinition => ({
  name,
  description,
  schema: schema(props),
  policy,
});

const TOOLS = [
  tool('web_search', searchPolicy(), { query: { type: 'string' } }, 'Search the web'),
  tool('kb_lookup', searchPolicy(), { query: { type: 'string' } }, 'Knowledge base'),
  tool('attachment_transcribe_audio', transcribePolicy(), { attachment_name: { type: 'string' } }),
  tool('attachment_analyze_image', analyzePolicy(), { question: { type: 'string' } }),
  tool('post_update', writePolicy(), { query: { type: 'string' } }, 'Search and post an update'),
];

function input(patch: Partial<ToolChoiceInput>): ToolChoiceInput {
  return {
    tools: TOOLS,
    configOf: () => ({}),
    attachments: [],
    attachmentOnly: false,
    text: '',
    forcedSearchPhrases: forcedSearchPhraseList(AGENT_DEFAULTS),
    ...patch,
  };
}

describe('initial tool choice', () => {
  it('sends a voice-only message to transcription and an image-only message to image analysis', () => {
    const voice = initialToolChoice(input({ attachments: [{ kind: 'audio', name: 'memo.ogg' }], attachmentOnly: true }));
    assert.deepEqual(voice, {
      reason: 'voice',
      toolChoice: { type: 'function', function: { name: 'attachment_transcribe_audio' } },
      fabricate: { name: 'attachment_transcribe_audio', args: { attachment_name: 'memo.ogg' } },
    });
    const image = initialToolChoice(input({ attachments: [{ kind: 'image', name: 'board.png' }], attachmentOnly: true }));
    assert.equal(image?.reason, 'image');
    assert.deepEqual(image?.fabricate, { name: 'attachment_analyze_image', args: {} });
  });

  it('does not force attachment tools when the message has text, several attachments, or the bot lacks the tool', () => {
    assert.equal(initialToolChoice(input({ attachments: [{ kind: 'audio', name: 'a.ogg' }], attachmentOnly: false })), null);
    assert.equal(
      initialToolChoice(
        input({
          attachments: [
            { kind: 'audio', name: 'a.ogg' },
            { kind: 'image', name: 'b.png' },
          ],
          attachmentOnly: true,
        }),
      ),
      null,
    );
    assert.equal(initialToolChoice(input({ tools: TOOLS.slice(0, 2), attachments: [{ kind: 'image', name: 'b.png' }], attachmentOnly: true })), null);
  });

  it('matches the admin phrases of six languages by default, case- and space-insensitively', () => {
    const phrases = forcedSearchPhraseList(AGENT_DEFAULTS);
    for (const text of [
      'Please SEARCH THE  WEB for x',
      'Kannst du im Internet suchen?',
      'recherche sur le web la météo',
      'busca en internet el tiempo',
      'cerca sul web il meteo',
      'zoek op internet het weer',
    ]) {
      assert.equal(asksForSearch(text, phrases), true, text);
    }
    assert.equal(asksForSearch('What is two plus two?', phrases), false);
    assert.deepEqual(Object.keys(AGENT_DEFAULTS.forcedSearchPhrases).sort(), ['de', 'en', 'es', 'fr', 'it', 'nl']);
  });

  it('forces only read-only search tools with a query, the best-scored first', () => {
    assert.deepEqual(
      searchCandidates(TOOLS).map((t) => t.name),
      ['web_search', 'kb_lookup'],
    );
    const plan = initialToolChoice(input({ text: 'search the web for the weather' }));
    assert.deepEqual(plan, {
      reason: 'search',
      toolChoice: { type: 'function', function: { name: 'web_search' } },
      fabricate: { name: 'web_search', args: { query: 'search the web for the weather' } },
    });
    const onlyWrite = initialToolChoice(input({ tools: [TOOLS[4]!], text: 'search the web please' }));
    assert.equal(onlyWrite, null);
  });

  it('honours `force` in an assignment config without ever fabricating a call', () => {
    const one = initialToolChoice(input({ configOf: (n) => (n === 'kb_lookup' ? { force: true } : {}) }));
    assert.deepEqual(one, { reason: 'config', toolChoice: { type: 'function', function: { name: 'kb_lookup' } }, fabricate: null });
    const two = initialToolChoice(input({ configOf: () => ({ force: true }) }));
    assert.deepEqual(two, { reason: 'config', toolChoice: 'required', fabricate: null });
  });
});

describe('agent settings', () => {
  it('stores validated phrase lists per language and keeps the cap at 50 or below', async () => {
    const tdb = await createTestDatabase('sqlite');
    try {
      const store = new SettingsStore(tdb.db);
      assert.deepEqual(await loadAgentSettings(store), AGENT_DEFAULTS);
      const saved = await saveAgentSettings(store, {
        maxIterations: 12,
        forcedSearchPhrases: { pt: ['Pesquise na  web ', 'pesquise na web'], en: ['look it up'] },
      });
      assert.ok(saved.ok);
      assert.deepEqual(saved.settings.forcedSearchPhrases, { pt: ['pesquise na web'], en: ['look it up'] });
      assert.equal((await loadAgentSettings(store)).maxIterations, 12);
      const bad = parseAgentSettings({ maxIterations: 51, forcedSearchPhrases: { 'not a code': ['x'] } });
      assert.equal(bad.ok, false);
      if (!bad.ok) assert.deepEqual(Object.keys(bad.errors).sort(), ['forcedSearchPhrases.not a code', 'maxIterations']);
      // A stored value that no longer validates falls back to the defaults.
      await store.set(AGENT_SETTINGS_KEY, { maxIterations: 'many' });
      assert.deepEqual(await loadAgentSettings(store), AGENT_DEFAULTS);
    } finally {
      await tdb.drop();
    }
  });
});

describe('S6 confirmation hook', () => {
  it('holds tools that can change things once the turn is tainted, and nothing read-only', () => {
    const clean = new TurnTaint();
    const tainted = new TurnTaint();
    tainted.add('tool-result');
    const call = { name: 'x', args: {} };
    assert.equal(requiresConfirmation(call, writePolicy(), clean).required, false);
    for (const p of [writePolicy(), destructivePolicy(), unknownPolicy(), { ...readPolicy(), destructive: true }]) {
      assert.equal(requiresConfirmation(call, p, tainted).required, true);
    }
    assert.equal(requiresConfirmation(call, readPolicy(), tainted).required, false);
    assert.equal(requiresConfirmation(call, searchPolicy(), tainted).required, false);
  });
});

describe('rate gate', () => {
  function fakeLimiter(answers: AcquireResult[]): { limiter: RateLimiter; asked: number } {
    const state = { asked: 0 };
    const limiter = {
      async tryAcquire() {
        state.asked++;
        return answers.shift() ?? { ok: true };
      },
    } as unknown as RateLimiter;
    return Object.defineProperty({ limiter, asked: 0 }, 'asked', { get: () => state.asked });
  }
  const refusal = (retryAfterMs: number): AcquireResult => ({ ok: false, retryAfterMs, window: 'minute', level: 'user', source: 'limit' });

  it('keys users by uid and everyone else by room (S4)', () => {
    assert.deepEqual(rateKeyFor({ uid: 'alice', roomToken: 'r1' }), { scope: 'chat', uid: 'alice', guestRoom: null });
    assert.deepEqual(rateKeyFor({ uid: null, roomToken: 'r1' }), { scope: 'chat', uid: null, guestRoom: 'r1' });
  });

  it('spends the unit taken up front on the first call, waits out short refusals, and gives up on long ones', async () => {
    const slept: number[] = [];
    const f = fakeLimiter([{ ok: true }, refusal(500), { ok: true }, refusal(60_000)]);
    const gate = new RateGate(f.limiter, rateKeyFor({ uid: 'a', roomToken: 'r' }), { maxWaitMs: 1000, sleep: async (ms) => void slept.push(ms) });
    assert.equal((await gate.first()).ok, true);
    await gate.acquire();
    assert.equal(f.asked, 1, 'the first call used the unit asked for up front');
    await gate.acquire();
    assert.deepEqual(slept, [500]);
    await assert.rejects(gate.acquire(), (err: unknown) => err instanceof RateLimitedError && err.retryAfterMs === 60_000);
    assert.equal(gate.calls, 2);
  });
});
