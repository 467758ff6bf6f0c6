// S9: a bot with an agent profile on any assignment counts as writing (published only after a
// review by someone else). S10: a reviewer's test uses no agent profile.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExecutionResolver, type ExecutionResolverDeps } from '../../lib/agent-profiles/execution-resolver.ts';
import { registryToolGate } from '../../lib/bots/governance.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { readPolicy } from '../../lib/tools/tool-policy.ts';
import { createInvocationContext, textResult, type ToolProvider } from '../../lib/tools/tool-provider.ts';
import { ToolRegistry } from '../../lib/tools/tool-registry.ts';

const PROFILE = '0f0e0d0c-0b0a-4909-8807-060504030201';
const logger = createLogger({ level: 'silent' });

function readOnlyProvider(): ToolProvider {
  const def = { name: 'files_list', description: 'List', schema: { type: 'object', properties: {} }, policy: readPolicy(), requiresUser: true };
  return {
    id: 'ro',
    getTools: () => [def],
    providesTool: (n) => n === 'files_list',
    getToolMetadata: () => ({ files_list: { label: 'List', summary: '', family: 'files' } }),
    executeTool: async () => textResult('ok'),
  };
}

describe('governance rules for agent profiles', () => {
  it('S9: a read-only tool on an agent profile still needs a review', async () => {
    const registry = new ToolRegistry({ logger });
    registry.register(readOnlyProvider(), 'first-party');
    const gate = registryToolGate(registry);
    const alice = issueFromConfirmedTalkAuthor('alice');
    assert.equal(await gate.writes([{ name: 'files_list', config: {} }], alice), false);
    assert.equal(await gate.writes([{ name: 'files_list', config: { agentProfile: PROFILE } }], alice), true);
  });

  it("S10: in a reviewer's test the resolver refuses agent mode before reading any profile", async () => {
    const untouched = new Proxy(
      {},
      { get: (_t, key) => (key === 'now' ? undefined : assert.fail(`no profile, grant or account may be read (${String(key)})`)) },
    );
    const resolver = new ExecutionResolver(untouched as ExecutionResolverDeps);
    const ctx = createInvocationContext({
      user: issueFromConfirmedTalkAuthor('reviewer'),
      actorKind: 'user',
      botId: 'bot-1',
      roomToken: 'r',
      reviewMode: true,
    });
    const r = await resolver.resolve(ctx, { tool: 'files_list', family: 'files', config: { agentProfile: PROFILE } });
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.message : '', /reviewer's test does not use/);
    const plain = await resolver.resolve(ctx, { tool: 'files_list', family: 'files', config: {} });
    assert.equal(plain.ok, true, 'without a profile the reviewer acts as themself');
    assert.equal(plain.ok && plain.ctx.user?.uid, 'reviewer');
    assert.equal(plain.ok && plain.ctx.execution?.mode, 'user');
  });

  it('guests never reach agent mode', async () => {
    const untouched = new Proxy({}, { get: (_t, key) => (key === 'now' ? undefined : assert.fail(`nothing may be read (${String(key)})`)) });
    const resolver = new ExecutionResolver(untouched as ExecutionResolverDeps);
    const ctx = createInvocationContext({ user: null, actorKind: 'guest', botId: 'bot-1', roomToken: 'r' });
    const r = await resolver.resolve(ctx, { tool: 'files_list', family: 'files', config: { agentProfile: PROFILE } });
    assert.equal(r.ok, false);
  });
});
