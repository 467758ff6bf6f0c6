// Runs FakeOpenAI in its own process, so a benchmark does not measure the fake's CPU.
// Env: PORT (default 0 = any), TOKENS_PER_SECOND (default 0 = as fast as possible),
// REPLY_TOKENS (default 200), TTFT_MS (default 0: the wait before the first token). Prints `listening <port>` once ready.
import { FakeOpenAI } from './fake-openai.ts';

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
}

const port = intEnv('PORT', 0);
const tokensPerSecond = intEnv('TOKENS_PER_SECOND', 0);
const ttftMs = intEnv('TTFT_MS', 0);
const replyTokens = Math.max(1, Math.floor(intEnv('REPLY_TOKENS', 200)));
const text = Array.from({ length: replyTokens }, (_, i) => (i === 0 ? 'token' : ' token'));

const fake = await FakeOpenAI.start({
  port,
  models: ['fake-model', 'fake-model-large'],
  responder: () => ({ text, ...(tokensPerSecond > 0 ? { tokensPerSecond } : {}), ...(ttftMs > 0 ? { delayMs: ttftMs } : {}) }),
});
// The benchmark reads this line; nothing is recorded, so memory stays flat.
fake.recordRequests = false;
process.stdout.write(`listening ${fake.port}\n`);

const stop = () => {
  void fake.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
