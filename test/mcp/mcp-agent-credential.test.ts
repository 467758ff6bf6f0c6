// A tool server's agentCredential (issue 10): in agent mode the profile's credential goes out as
// `Authorization: Bearer` on that call's tools/call request only, opened from the vault right
// before the send; user-mode calls, listings and other profiles' calls never carry it (S20).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { profileCovers } from '../../lib/agent-profiles/profile-coverage.ts';
import { AgentProfileStore } from '../../lib/agent-profiles/profile-store.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { McpProvider } from '../../lib/mcp/mcp-provider.ts';
import { type McpAgentProfiles } from '../../lib/mcp/mcp-provider-types.ts';
import { McpServerStore, McpServerValidationError, toPublic } from '../../lib/mcp/mcp-server-store.ts';
import { issueForAgentProfile, issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { ResourceScope } from '../../lib/tools/resource-scope.ts';
import { createInvocationContext, deriveInvocationContext, type InvocationContext, type ToolResult } from '../../lib/tools/tool-provider.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { startTestMcpServer, text, type TestMcpServer } from './mcp-test-server.ts';

const SECRET = 'profile-bridge-token-5c3e9a1f7d';
const OTHER_SECRET = 'other-profile-token-81b2e6d04a';

function turnCtx(): InvocationContext {
  return createInvocationContext({
    user: issueFromConfirmedTalkAuthor('alice'),
    actorKind: 'user',
    botId: 'bot-1',
    roomToken: 'room1',
    threadId: null,
    messageId: '7',
  });
}

function agentCtx(profileId: string): InvocationContext {
  return deriveInvocationContext(turnCtx(), {
    user: issueForAgentProfile('nuqloud-ai'),
    execution: { mode: 'agent', profileId, scope: ResourceScope.unrestricted, confirmation: 'destructive' },
  });
}

function userModeCtx(): InvocationContext {
  const turn = turnCtx();
  return deriveInvocationContext(turn, {
    user: turn.user!,
    execution: { mode: 'user', profileId: null, scope: ResourceScope.unrestricted, confirmation: 'destructive' },
  });
}

function textOf(result: ToolResult): string {
  return (result.content[0] as { text?: string } | undefined)?.text ?? '';
}

const PROFILE = { scopeDescription: '', toolFamilies: [], triggerGroups: [], confirmGroups: [], enabled: true };

describe('agentCredential of a tool server', () => {
  let tdb: TestDatabase;
  let mcp: TestMcpServer;
  let store: McpServerStore;
  let profiles: AgentProfileStore;
  let provider: McpProvider;
  let withToken = '';
  let otherToken = '';
  let without = '';
  const logLines: string[] = [];

  before(async () => {
    tdb = await createTestDatabase('sqlite');
    const vault = new Vault(tdb.db, new Uint8Array(32).fill(9));
    store = new McpServerStore(tdb.db, vault);
    profiles = new AgentProfileStore(tdb.db, vault);
    withToken = (await profiles.create({ ...PROFILE, label: 'With', accountUid: 'nuqloud-ai' }, 'admin')).id;
    await profiles.setCredentials(withToken, [{ name: 'bridge', value: SECRET }]);
    otherToken = (await profiles.create({ ...PROFILE, label: 'Other', accountUid: 'other-ai' }, 'admin')).id;
    await profiles.setCredentials(otherToken, [{ name: 'bridge', value: OTHER_SECRET }]);
    without = (await profiles.create({ ...PROFILE, label: 'Without', accountUid: 'plain-ai' }, 'admin')).id;
    await profiles.setCredentials(without, [{ name: 'something-else', value: 'unrelated-value-1234' }]);

    mcp = await startTestMcpServer([
      {
        name: 'lookup',
        description: 'Looks something up',
        inputSchema: { q: z.string() },
        annotations: { readOnlyHint: true },
        handler: (args) => text(`found ${String(args['q'])}`),
      },
    ]);
    const { server } = await store.create({ name: 'Bridge', url: mcp.url, agentCredential: 'bridge' });
    const destination = new Writable({
      write(chunk, _enc, cb) {
        logLines.push(String(chunk));
        cb();
      },
    });
    const agentProfiles: McpAgentProfiles = {
      credentials: profiles,
      // Confirmed calls are covered end to end (test/examples/nuqloud-bridge-agent.test.ts).
      execution: { resolveConfirmed: async () => ({ ok: false, message: 'not used here' }), record: async () => undefined },
    };
    provider = new McpProvider({ server, store, logger: createLogger({ destination, level: 'debug' }), agentProfiles });
    const review = await provider.review();
    await provider.approve(review.hash, { lookup: 'read' });
  });
  after(async () => {
    await provider.close();
    await mcp.close();
    await tdb.drop();
  });

  it('is a name, validated, shown to the admin as a name and removable', async () => {
    for (const bad of ['Bearer abc', 'a/b', '', 'x'.repeat(65), 42]) {
      await assert.rejects(
        store.create({ name: `Bad ${String(bad).slice(0, 10)}`, url: mcp.url, agentCredential: bad as string }),
        (e: unknown) => e instanceof McpServerValidationError && 'agentCredential' in e.fields,
      );
    }
    const { server } = await store.create({ name: 'Named', url: mcp.url, agentCredential: 'bridge.token_1' });
    assert.equal(toPublic(server).agentCredential, 'bridge.token_1');
    assert.equal((await store.update(server.id, { name: 'Renamed' }))?.agentCredential, 'bridge.token_1', 'kept when not given');
    assert.equal((await store.update(server.id, { agentCredential: null }))?.agentCredential, null);
    assert.equal((await store.create({ name: 'Plain', url: mcp.url })).server.agentCredential, null);
  });

  it("an agent-mode call carries the profile's credential on its tools/call request only", async () => {
    const requestsBefore = mcp.requestHeaders.length;
    const result = await provider.executeTool('lookup', { q: 'algebra' }, {}, agentCtx(withToken));
    assert.equal(textOf(result), 'found algebra');
    assert.equal(mcp.calls.at(-1)!.headers['authorization'], `Bearer ${SECRET}`);
    const carrying = mcp.requestHeaders.filter((h) => h['authorization'] !== undefined);
    assert.equal(carrying.length, 1, 'initialize, listings and the SSE stream went without it');
    assert.ok(mcp.requestHeaders.length > requestsBefore);
  });

  it('a user-mode call on the same server carries no Authorization header', async () => {
    const result = await provider.executeTool('lookup', { q: 'biology' }, {}, userModeCtx());
    assert.equal(textOf(result), 'found biology');
    assert.equal(mcp.calls.at(-1)!.headers['authorization'], undefined);
    const plainTurn = await provider.executeTool('lookup', { q: 'chemistry' }, {}, turnCtx());
    assert.equal(textOf(plainTurn), 'found chemistry');
    assert.equal(mcp.calls.at(-1)!.headers['authorization'], undefined);
  });

  it('concurrent calls of two profiles and a user each get their own header on the shared session', async () => {
    const start = mcp.calls.length;
    await Promise.all([
      provider.executeTool('lookup', { q: 'a' }, {}, agentCtx(withToken)),
      provider.executeTool('lookup', { q: 'u' }, {}, userModeCtx()),
      provider.executeTool('lookup', { q: 'o' }, {}, agentCtx(otherToken)),
    ]);
    const byQuery = Object.fromEntries(mcp.calls.slice(start).map((c) => [String(c.args['q']), c.headers['authorization'] ?? null]));
    assert.deepEqual(byQuery, { a: `Bearer ${SECRET}`, u: null, o: `Bearer ${OTHER_SECRET}` });
    assert.equal(new Set(mcp.calls.slice(start).map((c) => c.sessionId)).size, 1, 'one shared session');
  });

  it('a profile covers a tool server by its id, never by a family name the server may carry', () => {
    const server = 'mcp:0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
    assert.equal(profileCovers([server], 'files', server), true);
    assert.equal(profileCovers(['files'], 'files', server), false, 'a server named "files" is not the files family');
    assert.equal(profileCovers(['files'], 'files', 'first-party'), true);
    assert.equal(profileCovers([server], null, 'first-party'), false);
  });

  it('a profile without the credential is refused and nothing is sent', async () => {
    const calls = mcp.calls.length;
    const methods = mcp.methods.length;
    const result = await provider.executeTool('lookup', { q: 'nope' }, {}, agentCtx(without));
    assert.equal(result.isError, true);
    assert.match(textOf(result), /needs the agent profile credential "bridge", which this bot's agent profile does not have[\s\S]*Nothing was sent/);
    assert.equal(mcp.calls.length, calls);
    assert.equal(mcp.methods.slice(methods).includes('tools/call'), false);
  });

  it('a credential removed between the check and the send: the request is not sent', async () => {
    const racing = new McpProvider({
      server: (await store.list()).find((s) => s.name === 'Bridge')!,
      store,
      logger: createLogger({ destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
      agentProfiles: {
        credentials: { credentialNames: async () => ['bridge'], withProfileCredential: (id, name, fn) => profiles.withProfileCredential(id, name, fn) },
        execution: { resolveConfirmed: async () => ({ ok: false, message: 'unused' }), record: async () => undefined },
      },
    });
    try {
      const calls = mcp.calls.length;
      const result = await racing.executeTool('lookup', { q: 'race' }, {}, agentCtx(without));
      assert.equal(result.isError, true);
      assert.match(textOf(result), /credential for the tool server Bridge cannot be read\. Nothing was sent/);
      assert.equal(mcp.calls.length, calls);
    } finally {
      await racing.close();
    }
  });

  it('the value appears in no result, log line or admin view', async () => {
    const result = await provider.executeTool('lookup', { q: 'again' }, {}, agentCtx(withToken));
    const server = (await store.list()).find((s) => s.name === 'Bridge')!;
    for (const haystack of [JSON.stringify(result), logLines.join(''), JSON.stringify(toPublic(server)), JSON.stringify(provider.status())]) {
      assert.equal(haystack.includes(SECRET), false);
      assert.equal(haystack.includes(OTHER_SECRET), false);
    }
  });
});
