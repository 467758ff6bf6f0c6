import assert from 'node:assert/strict';
import type { Bot, BotInput } from '../../lib/bots/bot-store.ts';
import type { Dialect } from '../../lib/storage/database.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import type { FakeChatMessage } from '../fakes/nextcloud/talk.ts';
import { startHarness, waitFor, type Harness, type HarnessOptions } from './harness.ts';

export const LLM_KEY = 'sk-test-provider-key-0123456789';

export interface TalkScenario {
  h: Harness;
  llm: FakeOpenAI;
  /** Posts a message in Talk as `uid` and delivers its webhook like AppAPI; returns Talk's message. */
  say(token: string, uid: string, text: string, opts?: { parameters?: object; replyTo?: number }): Promise<FakeChatMessage>;
  /** Delivers a raw body to the webhook as AppAPI does (empty user). */
  deliver(body: string, headers?: Record<string, string>): Promise<{ status: number; json: any }>;
  createBot(input: Partial<BotInput> & { mention: string }, owner?: string): Promise<Bot>;
  /** A group room with alice (owner), bob (user), and the shared Talk bot enabled. */
  groupRoom(name?: string): string;
  /** Goes through onboarding for `bot` in `token` choosing `mode`. */
  onboard(token: string, bot: Bot, mode: 'A' | 'B', uid?: string): Promise<void>;
  idle(): Promise<void>;
  bot(token: string): Array<{ message: string; replyTo: number | null }>;
  close(): Promise<void>;
}

export async function startTalkScenario(options: HarnessOptions & { dialect: Dialect }): Promise<TalkScenario> {
  const llm = await FakeOpenAI.start({ models: ['fake-model', 'fallback-model'], apiKey: LLM_KEY });
  const h = await startHarness({ ...options, build: { worker: { pollMs: 50 }, ...options.build } });
  const enabled = await h.fetch('/enabled?enabled=1', { method: 'PUT', headers: h.headers('') });
  assert.deepEqual(enabled.json, { error: '' });
  const saved = await h.fetch('/api/v1/admin/settings', {
    method: 'PUT',
    headers: h.browserHeaders('admin'),
    body: { primaryEndpoint: llm.url, primaryKey: LLM_KEY, defaultModel: 'primary:fake-model' },
  });
  assert.equal(saved.status, 200, saved.text);
  let rooms = 0;

  const deliver = async (body: string, headers: Record<string, string> = h.headers('')) => {
    const r = await h.fetch('/talk_bot', { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body });
    return { status: r.status, json: r.json };
  };
  const scenario: TalkScenario = {
    h,
    llm,
    deliver,
    async say(token, uid, text, opts = {}) {
      const msg = h.nc.postMessage(token, { actorType: 'users', actorId: uid }, text, opts);
      const r = await deliver(h.nc.webhookBodyFor(msg));
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return msg;
    },
    async createBot(input, owner = 'alice') {
      // A published global bot, so everyone in the test rooms may use it.
      const bot = await h.application.bots.create(
        { displayName: input.mention, systemPrompt: `You are ${input.mention}.`, visibility: 'global', ...input },
        owner,
        { approvalStatus: 'approved' },
      );
      await h.application.index.refresh();
      return bot;
    },
    groupRoom(name = `Room ${++rooms}`) {
      const room = h.nc.createRoom({
        name,
        type: 2,
        participants: [
          { actorId: 'alice', participantType: 1 },
          { actorId: 'bob', participantType: 3 },
        ],
      });
      h.nc.enableBotInRoom(room.token, 'talk_bot');
      return room.token;
    },
    async onboard(token, bot, mode, uid = 'alice') {
      const before = scenario.bot(token).length;
      await scenario.say(token, uid, `@${bot.mention}`);
      await scenario.idle();
      assert.match(scenario.bot(token)[before]?.message ?? '', /\bA\b[\s\S]*\bB\b/);
      await scenario.say(token, uid, mode);
      await scenario.idle();
    },
    idle: () => h.application.processing.idle(),
    bot: (token) => h.nc.botMessages.filter((m) => m.token === token && m.status === 201).map((m) => ({ message: m.message, replyTo: m.replyTo })),
    async close() {
      await h.close();
      await llm.close();
    },
  };
  return scenario;
}

export { waitFor };

/** The confirmation code the server posted (S7), found by `pattern`'s first group. */
export function codeIn(text: string, pattern: RegExp = /\b(\d{4,8})\b/): string {
  const m = pattern.exec(text);
  assert.ok(m?.[1], `a confirmation code in: ${text}`);
  return m[1];
}
