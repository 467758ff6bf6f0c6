import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EmbeddingsClient, EmbeddingError, planBatches, type EmbeddingConfig } from '../../lib/knowledge/embeddings.ts';
import { RateLimiter, type RateLimitSettings } from '../../lib/ratelimit/rate-limiter.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { FakeKnowledgeEndpoints, fakeEmbedding } from '../fakes/openai/fake-knowledge-endpoints.ts';

describe('embeddings client', () => {
  let fake: FakeKnowledgeEndpoints;
  const slept: number[] = [];
  const sleep = async (ms: number) => void slept.push(ms);
  const config =
    (over: Partial<EmbeddingConfig> = {}): (() => Promise<EmbeddingConfig>) =>
    async () => ({ endpoint: fake.url, key: 'k-1', model: 'm', batchSize: 3, concurrency: 2, timeoutMs: 10_000, ...over });

  before(async () => {
    fake = await FakeKnowledgeEndpoints.start({ dimensions: 16, apiKey: 'k-1' });
  });
  after(() => fake.close());

  test('batches inputs, keeps their order and returns unit vectors', async () => {
    const client = new EmbeddingsClient({ config: config(), fetch, sleep });
    const before = fake.embeddingCalls.length;
    const texts = Array.from({ length: 8 }, (_, i) => `text number ${i}`);
    const r = await client.embed(texts);
    const calls = fake.embeddingCalls.slice(before);
    assert.deepEqual(calls.map((c) => c.inputs.length).sort(), [2, 3, 3]);
    assert.equal(r.dimensions, 16);
    r.vectors.forEach((v, i) => {
      const expected = fakeEmbedding(texts[i]!, 16);
      expected.forEach((x, j) => assert.ok(Math.abs(x - v[j]!) < 1e-6));
    });
    assert.deepEqual(planBatches(['aaaa', 'bbbb', 'cc', 'd'], 10, 6), [
      { start: 0, end: 1 },
      { start: 1, end: 3 },
      { start: 3, end: 4 },
    ]);
  });

  test('retries 429 and 5xx with backoff, honours Retry-After, and gives up with a status', async () => {
    slept.length = 0;
    const client = new EmbeddingsClient({ config: config({ batchSize: 10 }), fetch, sleep, random: () => 1, maxRetries: 2 });
    fake.failNextEmbeddings({ status: 429, headers: { 'retry-after': '2' } }, { status: 503 });
    const ok = await client.embed(['x']);
    assert.equal(ok.vectors.length, 1);
    assert.deepEqual(slept, [2000, 1000]);
    fake.failNextEmbeddings({ status: 500 }, { status: 500 }, { status: 500 });
    await assert.rejects(
      client.embed(['y']),
      (e: unknown) => e instanceof EmbeddingError && e.status === 500 && e.retryable && !/must not leak/.test(e.message),
    );
    fake.failNextEmbeddings({ status: 401 });
    await assert.rejects(client.embed(['z']), (e: unknown) => e instanceof EmbeddingError && e.status === 401 && !e.retryable);
  });

  test('falls back to float lists when an endpoint refuses base64', async () => {
    const client = new EmbeddingsClient({ config: config(), fetch, sleep });
    fake.failNextEmbeddings({ status: 400 });
    const r = await client.embed(['plain floats']);
    assert.equal(r.vectors[0]!.length, 16);
  });

  test('uses its own rate-limit scope and waits for capacity', async () => {
    const tdb = await createTestDatabase('sqlite');
    try {
      let now = 1_000_000;
      const limits: RateLimitSettings = { enabled: true, chat: { instance: {}, user: {} }, embeddings: { instance: { minute: 2 }, user: {} } };
      const limiter = new RateLimiter(
        tdb.db,
        async () => limits,
        () => now,
      );
      const waits: number[] = [];
      const client = new EmbeddingsClient({
        config: config({ batchSize: 1, concurrency: 1 }),
        fetch,
        limiter,
        sleep: async (ms) => {
          waits.push(ms);
          now += ms;
        },
      });
      await client.embed(['a', 'b', 'c']);
      assert.equal(waits.length, 1, 'the third request waited for the next minute');
      const status = await limiter.status();
      assert.equal(status.chat.instance.find((w) => w.window === 'minute')?.used ?? 0, 0, 'chat counters untouched');
    } finally {
      await tdb.drop();
    }
  });
});
