import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { McpConnection, McpUnreachableError, type FetchLike } from '../../lib/mcp/mcp-connection.ts';
import { startTestMcpServer, text, type TestMcpServer, type ToolSpec } from './mcp-test-server.ts';

function tools(): ToolSpec[] {
  return [
    {
      name: 'search_courses',
      description: 'Search the course catalogue',
      inputSchema: { query: z.string() },
      annotations: { readOnlyHint: true },
      handler: (args) => text(`found: ${String(args['query'])}`),
    },
    { name: 'fails', description: 'Always reports an error', handler: () => text('catalogue offline', true) },
  ];
}

/** A clock the test moves by hand. */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

function countingFetch(): { fetch: FetchLike; count: () => number } {
  let n = 0;
  return {
    fetch: (url, init) => {
      n++;
      return fetch(url, init);
    },
    count: () => n,
  };
}

async function closedPortUrl(): Promise<string> {
  const s = await startTestMcpServer([]);
  const url = s.url;
  await s.close();
  return url;
}

describe('McpConnection against a real SDK server', () => {
  let server: TestMcpServer;
  before(async () => {
    server = await startTestMcpServer(tools());
  });
  after(async () => {
    await server.close();
  });

  it('initializes a session, declares no client capabilities, lists tools without $schema', async () => {
    const conn = new McpConnection({ name: 'Catalogue', url: server.url });
    try {
      const listed = await conn.listTools();
      assert.deepEqual(listed.map((t) => t.name).sort(), ['fails', 'search_courses']);
      const search = listed.find((t) => t.name === 'search_courses');
      assert.ok(search);
      assert.equal(search.annotations.readOnlyHint, true);
      assert.equal(JSON.stringify(search.inputSchema).includes('$schema'), false);
      assert.deepEqual(search.inputSchema['required'], ['query']);
      const empty = listed.find((t) => t.name === 'fails');
      assert.deepEqual(empty?.inputSchema, { type: 'object', properties: {} });

      const sessionId = conn.status().sessionId;
      assert.ok(sessionId, 'a session id was issued');
      const session = server.sessions.get(sessionId);
      assert.ok(session, 'the server knows the session');
      assert.deepEqual(session.server.server.getClientCapabilities(), {});
      assert.ok(server.methods.includes('initialize'));
    } finally {
      await conn.close();
    }
  });

  it('calls tools and honours isError, also for unknown tools', async () => {
    const conn = new McpConnection({ name: 'Catalogue', url: server.url });
    try {
      const ok = await conn.callTool('search_courses', { query: 'biology' });
      assert.deepEqual(ok, { content: [{ type: 'text', text: 'found: biology' }], isError: false });
      const failed = await conn.callTool('fails', {});
      assert.equal(failed.isError, true);
      assert.deepEqual(failed.content, [{ type: 'text', text: 'catalogue offline' }]);
      const unknown = await conn.callTool('no_such_tool', {});
      assert.equal(unknown.isError, true);
    } finally {
      await conn.close();
    }
  });

  it('caches tools/list until the TTL passes', async () => {
    const c = clock();
    const conn = new McpConnection({ name: 'Catalogue', url: server.url, now: c.now, listTtlMs: 60_000 });
    try {
      const before = server.methods.filter((m) => m === 'tools/list').length;
      await conn.listTools();
      await conn.listTools();
      assert.equal(server.methods.filter((m) => m === 'tools/list').length - before, 1);
      c.advance(60_001);
      await conn.listTools();
      assert.equal(server.methods.filter((m) => m === 'tools/list').length - before, 2);
    } finally {
      await conn.close();
    }
  });

  it('drops the cache on notifications/tools/list_changed', async () => {
    let changed!: () => void;
    const notified = new Promise<void>((resolve) => (changed = resolve));
    const conn = new McpConnection({ name: 'Catalogue', url: server.url, onToolsChanged: () => changed() });
    try {
      const first = await conn.listTools();
      assert.equal(
        first.some((t) => t.name === 'enrol_student'),
        false,
      );
      server.addTool({ name: 'enrol_student', description: 'Enrol a student', handler: () => text('enrolled') });
      await notified;
      assert.equal(conn.cachedTools(), null);
      const second = await conn.listTools();
      assert.equal(
        second.some((t) => t.name === 'enrol_student'),
        true,
      );
    } finally {
      await conn.close();
    }
  });

  it('reconnects with a new session after a session error', async () => {
    const conn = new McpConnection({ name: 'Catalogue', url: server.url });
    try {
      await conn.listTools();
      const firstSession = conn.status().sessionId;
      await server.dropSessions();
      const result = await conn.callTool('search_courses', { query: 'again' });
      assert.equal(result.isError, false);
      assert.notEqual(conn.status().sessionId, firstSession);
      assert.ok(conn.status().sessionId && server.sessions.has(conn.status().sessionId ?? ''));
    } finally {
      await conn.close();
    }
  });

  it('sends the auth headers on every request through the injected fetch', async () => {
    const counting = countingFetch();
    let reads = 0;
    const conn = new McpConnection({
      name: 'Catalogue',
      url: server.url,
      fetch: counting.fetch,
      getHeaders: async () => {
        reads++;
        return { Authorization: 'Bearer per-request-value-42' };
      },
    });
    try {
      const start = server.requestHeaders.length;
      await conn.callTool('search_courses', { query: 'x' });
      const seen = server.requestHeaders.slice(start);
      assert.ok(seen.length >= 2, 'initialize and the call');
      for (const h of seen) assert.equal(h['authorization'], 'Bearer per-request-value-42');
      assert.equal(server.calls.at(-1)?.headers['authorization'], 'Bearer per-request-value-42');
      assert.ok(counting.count() >= 2, 'the injected fetch carried the requests');
      assert.ok(reads >= 2, 'headers are read per request');
    } finally {
      await conn.close();
    }
  });

  it('times out and cancels calls with clear error results', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    server.addTool({
      name: 'slow',
      description: 'Never answers until cancelled',
      handler: (_args, extra) =>
        new Promise((resolve) => {
          started();
          extra.signal.addEventListener('abort', () => resolve(text('aborted')));
        }),
    });
    const conn = new McpConnection({ name: 'Catalogue', url: server.url, callTimeoutMs: 200 });
    try {
      const timedOut = await conn.callTool('slow', {});
      assert.equal(timedOut.isError, true);
      assert.match(String((timedOut.content[0] as { text: string }).text), /did not answer within/);

      const controller = new AbortController();
      const pending = conn.callTool('slow', {}, { signal: controller.signal, timeoutMs: 60_000 });
      await running;
      controller.abort();
      const cancelled = await pending;
      assert.equal(cancelled.isError, true);
      assert.match(String((cancelled.content[0] as { text: string }).text), /cancelled/);
    } finally {
      await conn.close();
    }
  });
});

describe('McpConnection with a server that is down', () => {
  it('turns a refused connection into a clear tool error and backs off', async () => {
    const url = await closedPortUrl();
    const c = clock();
    const counting = countingFetch();
    const conn = new McpConnection({ name: 'Catalogue', url, now: c.now, fetch: counting.fetch, retryBackoffMs: 30_000 });
    try {
      await assert.rejects(() => conn.listTools(), McpUnreachableError);
      const result = await conn.callTool('search_courses', { query: 'x' });
      assert.deepEqual(result, { content: [{ type: 'text', text: 'ERROR: The tool server Catalogue is not reachable. Try again later.' }], isError: true });
      const attempts = counting.count();
      await conn.callTool('search_courses', { query: 'x' });
      assert.equal(counting.count(), attempts, 'no new attempt during the back-off');
      c.advance(30_001);
      await conn.callTool('search_courses', { query: 'x' });
      assert.ok(counting.count() > attempts, 'tries again after the back-off');
    } finally {
      await conn.close();
    }
  });

  it('reports a server that went away mid-session as not reachable, then recovers when it returns', async () => {
    const server = await startTestMcpServer(tools());
    const c = clock();
    const conn = new McpConnection({ name: 'Catalogue', url: server.url, now: c.now });
    let revived: TestMcpServer | null = null;
    try {
      assert.equal((await conn.callTool('search_courses', { query: 'a' })).isError, false);
      const port = Number(new URL(server.url).port);
      await server.close();
      const down = await conn.callTool('search_courses', { query: 'b' });
      assert.equal(down.isError, true);
      assert.match(String((down.content[0] as { text: string }).text), /The tool server Catalogue is not reachable/);

      revived = await startTestMcpServer(tools(), { port });
      c.advance(60_000);
      const back = await conn.callTool('search_courses', { query: 'c' });
      assert.deepEqual(back.content, [{ type: 'text', text: 'found: c' }]);
    } finally {
      await conn.close();
      await revived?.close();
    }
  });

  it('reports refused credentials as such, not as an unreachable server', async () => {
    const server = await startTestMcpServer(tools(), { requireAuthorization: 'Bearer right' });
    const wrong = new McpConnection({ name: 'Catalogue', url: server.url, getHeaders: async () => ({ Authorization: 'Bearer wrong' }) });
    const right = new McpConnection({ name: 'Catalogue', url: server.url, getHeaders: async () => ({ Authorization: 'Bearer right' }) });
    try {
      const refused = await wrong.callTool('search_courses', { query: 'x' });
      assert.equal(refused.isError, true);
      assert.match(String((refused.content[0] as { text: string }).text), /refused the request \(HTTP 401\)/);
      assert.equal((await right.callTool('search_courses', { query: 'x' })).isError, false);
    } finally {
      await wrong.close();
      await right.close();
      await server.close();
    }
  });
});
