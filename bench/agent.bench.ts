/**
 * The agent loop's own cost.
 * - agent_iteration_overhead_ms: one loop iteration (model call assembly, markup
 *   filter, tool-call assembly, argument normaliser, policy and S6 checks,
 *   loop guard, progress line, trace events queued) with a zero-latency
 *   in-process model and tool; mean over turns of 20 iterations each, until
 *   run() returns. agent_iteration_overhead_with_trace_flush_ms also waits
 *   for the trace events to be in SQLite (with a real model they are written
 *   while the next call streams).
 * - tool_dispatch_inprocess_us: Loadout.execute of an in-process tool (median).
 * - tool_dispatch_mcp_ms: Loadout.execute of a tool on a real local MCP SDK
 *   server over streamable HTTP, session already open (median).
 */
import { z } from 'zod';
import { AgentLoop, type AgentChat } from '../lib/agent/agent-loop.ts';
import { TurnTaint } from '../lib/tools/confirmation-gate.ts';
import type { ReplySink } from '../lib/agent/reply-sink.ts';
import type { ChatCompletionResult, ChatRequest, StreamEvent } from '../lib/llm/chat-client.ts';
import { createLogger } from '../lib/log/logger.ts';
import { McpProviderManager } from '../lib/mcp/mcp-provider-manager.ts';
import { McpServerStore } from '../lib/mcp/mcp-server-store.ts';
import { issueFromConfirmedTalkAuthor } from '../lib/nextcloud/identity.ts';
import { readPolicy, searchPolicy } from '../lib/tools/tool-policy.ts';
import { createInvocationContext, textResult, type ToolDefinition, type ToolProvider } from '../lib/tools/tool-provider.ts';
import { ToolRegistry } from '../lib/tools/tool-registry.ts';
import { TraceStore } from '../lib/traces/trace-store.ts';
import { TurnTrace } from '../lib/traces/turn-trace.ts';
import { Vault } from '../lib/vault/vault.ts';
import { startTestMcpServer, text } from '../test/mcp/mcp-test-server.ts';
import { createTestDatabase } from '../test/helpers/databases.ts';
import { percentile, report } from './report.ts';

const logger = createLogger({ level: 'silent' });
const ITERATIONS_PER_TURN = 20;

const TOOLS: ToolDefinition[] = [
  {
    name: 'lookup',
    description: 'Look something up',
    schema: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query'] },
    policy: searchPolicy(),
  },
  { name: 'noop', description: 'Does nothing', schema: { type: 'object', properties: {} }, policy: readPolicy() },
];

const inProcess: ToolProvider = {
  id: 'bench',
  getTools: () => TOOLS,
  providesTool: (name) => TOOLS.some((t) => t.name === name),
  getToolMetadata: () => ({}),
  async executeTool(name, args) {
    return textResult(`${name}: ${String(args['query'] ?? '')}`);
  },
};

/** A model with no latency: N iterations of one tool call (split in deltas), then a short answer. */
class InstantModel implements AgentChat {
  #turnCalls = 0;
  reset(): void {
    this.#turnCalls = 0;
  }
  async *stream(_req: ChatRequest): AsyncIterable<StreamEvent> {
    const n = ++this.#turnCalls;
    if (n <= ITERATIONS_PER_TURN) {
      yield { type: 'tool_call', index: 0, id: `call_${n}`, name: 'lookup', argumentsDelta: '{"query": "item ' };
      yield { type: 'tool_call', index: 0, argumentsDelta: `${n}", "limit": "5"}` };
      yield { type: 'usage', promptTokens: 100, completionTokens: 10, totalTokens: 110 };
      yield { type: 'done', finishReason: 'tool_calls', model: 'primary:instant' };
      return;
    }
    yield { type: 'text', delta: 'All items ' };
    yield { type: 'text', delta: 'looked up.' };
    yield { type: 'done', finishReason: 'stop', model: 'primary:instant' };
  }
  async complete(): Promise<ChatCompletionResult> {
    return { content: 'done', toolCalls: [], usage: null, finishReason: 'stop', model: 'primary:instant' };
  }
}

/** Keeps what a ReplyStream would post, without Talk. */
class MemorySink implements ReplySink {
  committed = false;
  text = '';
  sawThinking = false;
  #buffer = '';
  async push(delta: string): Promise<void> {
    this.#buffer += delta;
  }
  async tick(): Promise<void> {}
  restart(): void {
    this.#buffer = '';
  }
  async finish(): Promise<string> {
    if (this.#buffer.trim() !== '') this.text += this.#buffer;
    this.#buffer = '';
    return this.text;
  }
  async post(): Promise<void> {
    this.committed = true;
  }
}

const ctx = createInvocationContext({ user: issueFromConfirmedTalkAuthor('alice'), actorKind: 'user', botId: 'bench-bot', roomToken: 'room', messageId: '1' });

async function iterationOverhead(): Promise<void> {
  const tdb = await createTestDatabase('sqlite');
  try {
    const registry = new ToolRegistry({ logger });
    registry.register(inProcess, 'first-party');
    const loadout = await registry.loadout(ctx, [
      { name: 'lookup', config: {} },
      { name: 'noop', config: {} },
    ]);
    const traces = new TraceStore(tdb.db);
    const model = new InstantModel();
    const loop = new AgentLoop({ chat: model, logger });
    const turn = async () => {
      model.reset();
      const trace = await TurnTrace.start(traces, {
        uid: 'alice',
        botId: 'bench-bot',
        botMention: 'bench',
        roomToken: 'room',
        messageId: '1',
        source: 'talk',
        userText: 'look up everything',
      });
      const started = performance.now();
      const result = await loop.run({
        model: 'primary:instant',
        messages: [
          { role: 'system', content: 'You are a bench bot.' },
          { role: 'user', content: 'Alice (alice): look up everything' },
        ],
        loadout,
        ctx,
        sink: new MemorySink(),
        userText: 'look up everything',
        taint: new TurnTaint(),
        trace,
      });
      const loopMs = performance.now() - started;
      await trace.finish('success');
      const withTraceMs = performance.now() - started;
      if (result.iterations !== ITERATIONS_PER_TURN + 1) throw new Error(`unexpected iterations ${result.iterations}`);
      return { loop: loopMs / result.iterations, withTrace: withTraceMs / result.iterations };
    };
    for (let i = 0; i < 20; i++) await turn();
    const loopOnly: number[] = [];
    const withTrace: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t = await turn();
      loopOnly.push(t.loop);
      withTrace.push(t.withTrace);
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    report('agent_iteration_overhead_ms', mean(loopOnly), 'ms');
    // The same turns until every trace event is in SQLite (written off the loop's path, in order).
    report('agent_iteration_overhead_with_trace_flush_ms', mean(withTrace), 'ms');
  } finally {
    await tdb.drop();
  }
}

async function inProcessDispatch(): Promise<void> {
  const registry = new ToolRegistry({ logger });
  registry.register(inProcess, 'first-party');
  const loadout = await registry.loadout(ctx, [{ name: 'lookup', config: {} }]);
  const args = '{"query": "x", "limit": "3"}';
  for (let i = 0; i < 5_000; i++) await loadout.execute('lookup', args, ctx);
  const samples: number[] = [];
  for (let round = 0; round < 200; round++) {
    const started = performance.now();
    for (let i = 0; i < 100; i++) await loadout.execute('lookup', args, ctx);
    samples.push(((performance.now() - started) / 100) * 1000);
  }
  report('tool_dispatch_inprocess_us', percentile(samples, 50), 'us');
}

async function mcpDispatch(): Promise<void> {
  const server = await startTestMcpServer([
    {
      name: 'lookup',
      description: 'Look something up',
      inputSchema: { query: z.string() },
      annotations: { readOnlyHint: true },
      handler: (a) => text(`found ${String(a['query'])}`),
    },
  ]);
  const tdb = await createTestDatabase('sqlite');
  const registry = new ToolRegistry({ logger });
  const store = new McpServerStore(tdb.db, new Vault(tdb.db, new Uint8Array(32).fill(3)));
  const manager = new McpProviderManager({ registry, store, logger });
  try {
    const { server: stored } = await store.create({ name: 'Bench', url: server.url });
    await manager.sync();
    const provider = manager.provider(stored.id);
    if (!provider) throw new Error('no provider');
    const review = await provider.review();
    await provider.approve(review.hash, { lookup: 'read' });
    const loadout = await registry.loadout(ctx, [{ name: 'lookup', config: {} }]);
    for (let i = 0; i < 50; i++) {
      const r = await loadout.execute('lookup', { query: 'warm' }, ctx);
      if (r.isError) throw new Error('MCP call failed');
    }
    const samples: number[] = [];
    for (let i = 0; i < 500; i++) {
      const started = performance.now();
      await loadout.execute('lookup', { query: `q${i}` }, ctx);
      samples.push(performance.now() - started);
    }
    report('tool_dispatch_mcp_ms', percentile(samples, 50), 'ms');
  } finally {
    await manager.close();
    await server.close();
    await tdb.drop();
  }
}

await iterationOverhead();
await inProcessDispatch();
await mcpDispatch();
