import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';

async function sse(url: string, body: unknown): Promise<unknown[]> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const text = await res.text();
  const frames = text.split('\n\n').filter((f) => f !== '');
  assert.ok(
    frames.every((f) => f.startsWith('data: ')),
    'every frame is a data line',
  );
  assert.equal(frames.at(-1), 'data: [DONE]');
  return frames.slice(0, -1).map((f) => JSON.parse(f.slice('data: '.length)) as unknown);
}

describe('fake OpenAI server', () => {
  it('answers from the scenario queue, then from the default responder, and records requests', async () => {
    const fake = await FakeOpenAI.start({ models: ['m1'], responder: () => ({ text: ['default'] }) });
    try {
      fake.enqueue({ text: ['one'] });
      const a = (await (
        await fetch(`${fake.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
          body: JSON.stringify({ model: 'm1', messages: [] }),
        })
      ).json()) as { choices: Array<{ message: { content: string } }> };
      assert.equal(a.choices[0]?.message.content, 'one');
      const chunks = (await sse(`${fake.url}/chat/completions`, {
        model: 'm1',
        stream: true,
        stream_options: { include_usage: true },
        messages: [],
      })) as Array<{ choices: unknown[]; usage?: unknown }>;
      const last = chunks.at(-1);
      assert.deepEqual(last?.choices, [], 'usage chunk has no choices');
      assert.ok(last?.usage);
      assert.equal(fake.chatRequests().length, 2);
      assert.equal(fake.chatRequests()[0]?.headers.authorization, 'Bearer k');
      assert.deepEqual(fake.lastChatBody().stream_options, { include_usage: true });
    } finally {
      await fake.close();
    }
  });

  it('runs in its own process for benchmarks and prints its port', async () => {
    const child = spawn(process.execPath, [new URL('../fakes/openai/fake-openai-process.ts', import.meta.url).pathname], {
      env: { ...process.env, PORT: '0', TOKENS_PER_SECOND: '0', REPLY_TOKENS: '5' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: child.stdout });
      const [line] = (await once(lines, 'line')) as [string];
      const match = /^listening (\d+)$/.exec(line);
      assert.ok(match, line);
      const base = `http://127.0.0.1:${match[1]}/v1`;
      const models = (await (await fetch(`${base}/models`)).json()) as { data: Array<{ id: string }> };
      assert.ok(models.data.length > 0);
      const chunks = (await sse(`${base}/chat/completions`, { model: 'fake-model', stream: true, messages: [] })) as Array<{
        choices: Array<{ delta: { content?: string } }>;
      }>;
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      assert.equal(text, 'token token token token token');
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});
