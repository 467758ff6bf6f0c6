// The streaming request of the egress module (model streams): the same S18 checks as its fetch,
// against real local servers, and the chat stream reading it.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createEgressFetch, EgressError } from '../../lib/egress/egress-fetch.ts';
import { chunkBatches, postChatStream, ProviderHttpError } from '../../lib/llm/chat-stream.ts';

describe('egress streaming request', () => {
  let server: http.Server;
  let port = 0;
  const hits: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url} ${req.headers['user-agent'] ?? ''}`);
      req.resume();
      if (req.url === '/v1/chat/completions') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-ratelimit-remaining-requests': '7' });
        res.write('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n');
        setTimeout(() => res.end('data: {"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'), 20);
      } else if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
      } else if (req.url === '/limited') {
        res.writeHead(429, { 'retry-after': '3', 'content-type': 'application/json' }).end('{"error":{"message":"slow down"}}');
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const chat = (path = '/v1/chat/completions') => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"stream":true}',
    signal: AbortSignal.timeout(5000),
    path,
  });

  it('refuses a private address unless the admin allowed it, before connecting', async () => {
    const closed = createEgressFetch();
    const before = hits.length;
    const err = await closed.stream(`http://127.0.0.1:${port}/v1/chat/completions`, chat()).then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof EgressError);
    assert.equal(err.code, 'blocked');
    assert.equal(hits.length, before, 'nothing was sent');
    await assert.rejects(closed.stream('file:///etc/passwd', chat()), (e: unknown) => e instanceof EgressError && e.code === 'scheme');
    await closed.close();
  });

  it('streams an allowed answer as it arrives, and the chat stream reads it', async () => {
    const open = createEgressFetch({ allowList: () => ['127.0.0.1'], userAgent: 'educai-test' });
    const res = await postChatStream(open.stream, `http://127.0.0.1:${port}/v1/chat/completions`, 'sk-test', '{"stream":true}', AbortSignal.timeout(5000));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-ratelimit-remaining-requests'), '7');
    const text: string[] = [];
    for await (const batch of chunkBatches(res)) for (const c of batch) text.push(String(c.choices?.[0]?.delta?.content ?? ''));
    assert.equal(text.join(''), 'Hello');
    assert.match(hits.at(-1)!, /^POST \/v1\/chat\/completions educai-test$/);
    await open.close();
  });

  it('follows no redirect and turns an error status into ProviderHttpError with its headers', async () => {
    const open = createEgressFetch({ allowList: () => ['127.0.0.1'] });
    const redirected = await open.stream(`http://127.0.0.1:${port}/redirect`, chat());
    assert.equal(redirected.status, 302, 'the redirect comes back as it is');
    redirected.body.destroy();
    await assert.rejects(
      postChatStream(open.stream, `http://127.0.0.1:${port}/limited`, null, '{}', AbortSignal.timeout(5000)),
      (e: unknown) => e instanceof ProviderHttpError && e.status === 429 && e.headers.get('retry-after') === '3',
    );
    await open.close();
  });

  it('an abort before the body is read surfaces to the reader, not as an uncaught error', async () => {
    const open = createEgressFetch({ allowList: () => ['127.0.0.1'] });
    const controller = new AbortController();
    const res = await open.stream(`http://127.0.0.1:${port}/v1/chat/completions`, { ...chat(), signal: controller.signal });
    controller.abort();
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(async () => {
      for await (const _ of chunkBatches(res)) void _;
    });
    await open.close();
  });
});
