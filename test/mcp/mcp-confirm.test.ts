// Confirmable MCP/companion writes (S6, S7, S17) against the reference bridge (examples/nuqloud-bridge).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { TurnTaint } from '../../lib/tools/confirmation-gate.ts';
import { attachTaint } from '../../lib/tools/turn-taints.ts';
import type { ConfirmationExecutor } from '../../lib/tools/confirmable.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { McpConnection } from '../../lib/mcp/mcp-connection.ts';
import { describeCall } from '../../lib/mcp/mcp-confirmation.ts';
import { CONTEXT_META_KEY, type McpConfirmations } from '../../lib/mcp/mcp-provider-types.ts';
import { McpProvider } from '../../lib/mcp/mcp-provider.ts';
import { McpProviderManager } from '../../lib/mcp/mcp-provider-manager.ts';
import { toolHash } from '../../lib/mcp/mcp-tool-review.ts';
import { McpServerStore, type McpToolPolicyName } from '../../lib/mcp/mcp-server-store.ts';
import { effectiveToolRule } from '../../lib/mcp/mcp-tool-rules.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { ResourceScope, type ConfirmationPolicy } from '../../lib/tools/resource-scope.ts';
import { createInvocationContext, deriveInvocationContext, resultOutcome, type InvocationContext, type ToolResult } from '../../lib/tools/tool-provider.ts';
import { ToolRegistry } from '../../lib/tools/tool-registry.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { ContextVerifier, startBridge, type RunningBridge } from '../../examples/nuqloud-bridge/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { RecordingConfirmations } from '../tools/first-party-fixture.ts';

const logger = createLogger({ level: 'silent' });
const ALL_WRITE: Record<string, McpToolPolicyName> = {
  bridge_list_resources: 'read',
  bridge_map_resource: 'write',
  bridge_publish: 'write',
  bridge_send_message: 'write',
  bridge_remove_mapping: 'write',
};

function ctx(uid = 'alice', taint?: TurnTaint): InvocationContext {
  const c = createInvocationContext({
    user: issueFromConfirmedTalkAuthor(uid),
    actorKind: 'user',
    botId: 'bot-1',
    roomToken: 'room-a',
    threadId: null,
    messageId: '42',
  });
  if (taint) attachTaint(c, taint);
  return c;
}

/** A call whose assignment sets the confirmation policy, in user mode (as the execution resolver derives it). */
function assigned(confirmation: ConfirmationPolicy): InvocationContext {
  const turn = ctx();
  return deriveInvocationContext(turn, { user: turn.user!, execution: { mode: 'user', profileId: null, scope: ResourceScope.unrestricted, confirmation } });
}

function tainted(): TurnTaint {
  const t = new TurnTaint();
  t.add('tool-result');
  return t;
}

function textOf(r: ToolResult): string {
  return r.content.map((c) => (c as { text?: string }).text ?? '').join('\n');
}

interface World {
  tdb: TestDatabase;
  store: McpServerStore;
  bridge: RunningBridge;
  provider: McpProvider;
  confirmations: RecordingConfirmations & { executors: string[] };
  serverId: string;
}

function recording(): RecordingConfirmations & { executors: string[] } {
  const r = new RecordingConfirmations() as RecordingConfirmations & { executors: string[]; registerExecutor(e: ConfirmationExecutor): void };
  r.executors = [];
  r.registerExecutor = (e) => void r.executors.push(e.id);
  return r;
}

async function world(policies: Record<string, McpToolPolicyName> = ALL_WRITE, withConfirmations = true): Promise<World> {
  const tdb = await createTestDatabase('sqlite');
  const store = new McpServerStore(tdb.db, new Vault(tdb.db, new Uint8Array(32).fill(3)));
  const bridge = await startBridge();
  const created = await store.create({ name: 'NuQloud bridge', url: bridge.url, kind: 'companion' });
  bridge.configure({ contextKey: created.contextKey!, audience: `mcp:${created.server.id}` });
  const confirmations = recording();
  const provider = new McpProvider({
    server: created.server,
    store,
    logger,
    confirmations: withConfirmations ? (confirmations as unknown as McpConfirmations) : null,
  });
  await provider.approve((await provider.review()).hash, policies);
  return { tdb, store, bridge, provider, confirmations, serverId: created.server.id };
}

async function dispose(w: World): Promise<void> {
  await w.provider.close();
  await w.bridge.close();
  await w.tdb.drop();
}

describe('effective tool rules: the admin makes stricter, never weaker (S17)', () => {
  const plain = { name: 'bridge_map_resource', description: 'Maps a resource', meta: {} };
  const declared = { name: 'bridge_publish', description: 'Publishes', meta: { requiresConfirmation: true } };

  it('keeps the admin setting for undeclared tools; confirm and destructive always confirm', () => {
    assert.deepEqual(
      (['read', 'write', 'confirm', 'destructive', 'off'] as const).map((s) => {
        const r = effectiveToolRule(s, plain);
        return [s, r.setting, r.alwaysConfirm, r.policy?.readOnly ?? null];
      }),
      [
        ['read', 'read', false, true],
        ['write', 'write', false, false],
        ['confirm', 'confirm', true, false],
        ['destructive', 'destructive', true, false],
        ['off', 'off', false, null],
      ],
    );
  });

  it('a declared confirmation survives read and write, adds to destructive, and off still wins', () => {
    assert.deepEqual(
      (['read', 'write', 'confirm', 'destructive', 'off'] as const).map((s) => {
        const r = effectiveToolRule(s, declared);
        return [s, r.setting, r.alwaysConfirm, r.policy?.readOnly ?? null, r.policy?.destructive ?? null];
      }),
      [
        ['read', 'confirm', true, false, false],
        ['write', 'confirm', true, false, false],
        ['confirm', 'confirm', true, false, false],
        ['destructive', 'destructive', true, false, true],
        ['off', 'off', false, null, null],
      ],
    );
  });

  it('pins the declaration in the tool hash only when it is set', () => {
    const base = { name: 't', description: 'd', inputSchema: { type: 'object' }, annotations: {} };
    assert.equal(toolHash({ ...base, meta: {} }), toolHash({ ...base, meta: { requiresConfirmation: false } }));
    assert.notEqual(toolHash({ ...base, meta: {} }), toolHash({ ...base, meta: { requiresConfirmation: true } }));
  });

  it('shows model-written arguments inertly in the request: no links, no mentions, no fences', () => {
    const d = describeCall('bridge_publish', 'NuQloud', { title: '@all see https://evil.example/?q=secret ```', body: 'x\ny' });
    assert.doesNotMatch(d, /https:\/\/|@all|```|\n/);
    assert.match(d, /^run bridge_publish on the tool server NuQloud with `/);
  });
});

describe('McpProvider confirmations with the NuQloud bridge', () => {
  it('review: suggestions and declarations come from the bridge; the admin sees the effective policy', async () => {
    const w = await world({ ...ALL_WRITE, bridge_publish: 'read' });
    try {
      const review = await w.provider.review();
      const by = Object.fromEntries(review.tools.map((t) => [t.name, t]));
      assert.deepEqual(Object.fromEntries(review.tools.map((t) => [t.name, [t.suggestedPolicy, t.declaresConfirmation]])), {
        bridge_list_resources: ['read', false],
        bridge_map_resource: ['write', false],
        bridge_publish: ['confirm', true],
        bridge_send_message: ['confirm', true],
        bridge_remove_mapping: ['destructive', true],
      });
      assert.equal(by['bridge_publish']?.policy, 'read');
      assert.equal(by['bridge_publish']?.effectivePolicy, 'confirm', 'the admin cannot make a declared tool read-only');
      const defs = await w.provider.getTools(ctx());
      assert.equal(defs.find((d) => d.name === 'bridge_publish')?.policy.readOnly, false);
    } finally {
      await dispose(w);
    }
  });

  it('a declared tool is not sent: a pending action is stored; the confirmed call runs once as the user with a fresh context', async () => {
    const w = await world({ ...ALL_WRITE, bridge_publish: 'read' });
    try {
      const r = await w.provider.executeTool('bridge_publish', { resourceId: 'course-101', title: 'Exam dates' }, {}, ctx());
      assert.equal(r.isError, false, textOf(r));
      assert.match(textOf(r), /^NOT DONE YET\. bridge_publish was not sent/);
      assert.doesNotMatch(textOf(r), /4821/, 'the code never reaches the model');
      assert.equal(w.bridge.state.calls.length, 0, 'nothing reached the bridge');
      const request = w.confirmations.requests.at(-1)!;
      assert.equal(request.action.providerId, w.provider.id);
      assert.match(request.action.reason, /declares that bridge_publish needs your confirmation/);
      assert.match(request.action.description, /run bridge_publish on the tool server NuQloud bridge/);
      const tool = (await w.provider.connection.listTools()).find((t) => t.name === 'bridge_publish')!;
      assert.deepEqual(request.action.binding, { serverId: w.serverId, toolHash: toolHash(tool), config: {}, threadId: null, messageId: '42' });

      const done = await w.provider.executeConfirmed(w.confirmations.stored(), issueFromConfirmedTalkAuthor('alice'));
      assert.equal(done.isError, false, textOf(done));
      assert.equal(w.bridge.state.publications.length, 1);
      assert.deepEqual(w.bridge.state.publications[0], {
        id: 'pub-1',
        resourceId: 'course-101',
        title: 'Exam dates',
        body: '',
        publishedBy: 'alice',
        roomToken: 'room-a',
      });
      const call = w.bridge.state.calls.at(-1)!;
      assert.equal(call.refused, null);
      assert.equal(call.context?.uid, 'alice');
      assert.equal(call.context?.botId, 'bot-1');
      assert.equal(call.context?.messageId, '42');
      assert.equal(call.context?.aud, w.provider.id);
      assert.equal(call.context!.exp - call.context!.iat, 60);
    } finally {
      await dispose(w);
    }
  });

  it('refuses a confirmed call for another user', async () => {
    const w = await world();
    try {
      await w.provider.executeTool('bridge_send_message', { resourceId: 'course-101', text: 'hi' }, {}, ctx());
      const r = await w.provider.executeConfirmed(w.confirmations.stored(), issueFromConfirmedTalkAuthor('bob'));
      assert.equal(r.isError, true);
      assert.deepEqual(w.bridge.state.calls, []);
    } finally {
      await dispose(w);
    }
  });

  it('write runs at once in a clean turn and waits after untrusted content; read tools never wait', async () => {
    const w = await world();
    try {
      const clean = await w.provider.executeTool('bridge_map_resource', { resourceId: 'course-101' }, {}, ctx());
      assert.match(textOf(clean), /is mapped to this conversation/);
      assert.equal(w.bridge.state.mappings.length, 1);

      const held = await w.provider.executeTool('bridge_map_resource', { resourceId: 'course-102' }, {}, ctx('alice', tainted()));
      assert.match(textOf(held), /^NOT DONE YET/);
      assert.match(w.confirmations.requests.at(-1)!.action.reason, /content you did not type/);
      assert.equal(w.bridge.state.mappings.length, 1);

      const read = await w.provider.executeTool('bridge_list_resources', {}, {}, ctx('alice', tainted()));
      assert.match(textOf(read), /course-101: Algebra I \(course\) - mapped here/);
    } finally {
      await dispose(w);
    }
  });

  for (const [setting, reason] of [
    ['confirm', /admin's policy asks for confirmation/],
    ['destructive', /an admin marked bridge_map_resource as destructive/],
  ] as const) {
    it(`an admin's ${setting} setting holds back a tool the bridge does not declare, also in a clean turn`, async () => {
      const w = await world({ ...ALL_WRITE, bridge_map_resource: setting });
      try {
        const r = await w.provider.executeTool('bridge_map_resource', { resourceId: 'course-101' }, {}, ctx());
        assert.match(textOf(r), /^NOT DONE YET/);
        assert.equal(resultOutcome(r), 'confirmation-requested', 'the audit records the call as held');
        assert.match(w.confirmations.requests.at(-1)!.action.reason, reason);
        assert.deepEqual(w.bridge.state.calls, []);
      } finally {
        await dispose(w);
      }
    });
  }

  it("the assignment's confirmation policy: 'never' refuses declared and destructive tools unsent, 'always' holds back every change", async () => {
    const w = await world({ ...ALL_WRITE, bridge_remove_mapping: 'destructive' });
    try {
      const never = assigned('never');
      for (const [tool, args] of [
        ['bridge_publish', { resourceId: 'course-101', text: 'x' }],
        ['bridge_remove_mapping', { resourceId: 'course-101' }],
      ] as const) {
        const refused = await w.provider.executeTool(tool, { ...args }, {}, never);
        assert.equal(refused.isError, true);
        assert.equal(resultOutcome(refused), 'refused');
        assert.match(textOf(refused), /forbid destructive actions\. Nothing was sent/);
      }
      assert.equal(w.confirmations.requests.length, 0, 'nothing waits for a confirmation that may not be given');
      assert.deepEqual(w.bridge.state.calls, []);
      // A plain write is no destructive action: 'never' lets it run.
      const plain = await w.provider.executeTool('bridge_map_resource', { resourceId: 'course-101' }, {}, never);
      assert.match(textOf(plain), /is mapped to this conversation/);

      const always = assigned('always');
      const held = await w.provider.executeTool('bridge_map_resource', { resourceId: 'course-102' }, {}, always);
      assert.match(textOf(held), /^NOT DONE YET/);
      assert.match(w.confirmations.requests.at(-1)!.action.reason, /this bot's settings ask for confirmation of every change/);
      assert.equal(w.bridge.state.mappings.length, 1, 'the held call was not sent');
      const read = await w.provider.executeTool('bridge_list_resources', {}, {}, always);
      assert.equal(read.isError, false, textOf(read));
      assert.equal(w.confirmations.requests.length, 1, 'a read never waits');
    } finally {
      await dispose(w);
    }
  });

  it('refuses the stored call when the tool changed, the server was disabled or the tool turned off', async () => {
    const w = await world();
    try {
      await w.provider.executeTool('bridge_send_message', { resourceId: 'course-101', text: 'hi' }, {}, ctx());
      const stored = w.confirmations.stored();
      const alice = issueFromConfirmedTalkAuthor('alice');

      await w.store.update(w.serverId, { enabled: false });
      assert.match(textOf(await w.provider.executeConfirmed(stored, alice)), /was disabled\. Nothing was done/);
      await w.store.update(w.serverId, { enabled: true });

      await w.provider.approve((await w.provider.review()).hash, { ...ALL_WRITE, bridge_send_message: 'off' });
      assert.match(textOf(await w.provider.executeConfirmed(stored, alice)), /turned bridge_send_message off/);
      await w.provider.approve((await w.provider.review()).hash, ALL_WRITE);

      w.bridge.upgradeTool('bridge_send_message', 'Sends a message to the members of a resource, and to their parents.');
      const changed = await w.provider.executeConfirmed(stored, alice);
      assert.equal(changed.isError, true);
      assert.match(textOf(changed), /changed on the tool server NuQloud bridge since you were asked/);
      // Even after the admin approves the new version, the old request stays refused (bound to the old hash).
      await w.provider.approve((await w.provider.review()).hash, ALL_WRITE);
      assert.match(textOf(await w.provider.executeConfirmed(stored, alice)), /changed on the tool server/);
      assert.deepEqual(w.bridge.state.messages, []);
      assert.deepEqual(w.bridge.state.calls, []);
    } finally {
      await dispose(w);
    }
  });

  it('without the confirmation service a call that needs one is refused, not sent', async () => {
    const w = await world(ALL_WRITE, false);
    try {
      const r = await w.provider.executeTool('bridge_publish', { resourceId: 'course-101', title: 'x' }, {}, ctx());
      assert.equal(r.isError, true);
      assert.match(textOf(r), /needs the confirmation of a signed-in user/);
      assert.deepEqual(w.bridge.state.calls, []);
    } finally {
      await dispose(w);
    }
  });

  it('hides the tools of a bridge that went down, even with a cached listing; a call then reads clearly', async () => {
    const w = await world();
    try {
      assert.equal((await w.provider.getTools(ctx())).length, 5);
      await w.bridge.close();
      assert.deepEqual(await w.provider.getTools(ctx()), [], 'a turn gets no tools from a dead bridge');
      const r = await w.provider.executeTool('bridge_list_resources', {}, {}, ctx());
      assert.equal(r.isError, true);
      assert.match(textOf(r), /The tool server NuQloud bridge is not reachable/);
    } finally {
      await w.provider.close();
      await w.tdb.drop();
    }
  });
});

describe('McpProviderManager as a self-confirming provider', () => {
  let tdb: TestDatabase;
  let bridge: RunningBridge;
  before(async () => {
    tdb = await createTestDatabase('sqlite');
    bridge = await startBridge();
  });
  after(async () => {
    await bridge.close();
    await tdb.drop();
  });

  it('claims MCP tools only once it has the confirmation service; one executor per server survives a rebuild', async () => {
    const store = new McpServerStore(tdb.db, new Vault(tdb.db, new Uint8Array(32).fill(4)));
    const registry = new ToolRegistry({ logger });
    const manager = new McpProviderManager({ registry, store, logger });
    try {
      const { server, contextKey } = await store.create({ name: 'Bridge', url: bridge.url, kind: 'companion' });
      bridge.configure({ contextKey: contextKey!, audience: `mcp:${server.id}` });
      await manager.sync();
      const provider = manager.provider(server.id)!;
      await provider.approve((await provider.review()).hash, ALL_WRITE);
      assert.equal(manager.providesTool('bridge_publish'), false, 'without confirmations the agent keeps holding writes (S6)');

      const confirmations = recording();
      manager.useConfirmations(confirmations as unknown as McpConfirmations);
      assert.equal(manager.providesTool('bridge_publish'), true);
      assert.equal(manager.providesTool('files_delete'), false);
      assert.deepEqual(confirmations.executors, [`mcp:${server.id}`]);

      // A new URL rebuilds the provider; the executor stays registered once and reaches the new one.
      await store.update(server.id, { url: bridge.url.replace('127.0.0.1', 'localhost') });
      await manager.sync();
      assert.notEqual(manager.provider(server.id), provider);
      assert.deepEqual(confirmations.executors, [`mcp:${server.id}`]);
      assert.equal(manager.provider(server.id)!.confirms, true);
    } finally {
      await manager.close();
    }
  });
});

describe('the bridge verifies the invocation context on every call', () => {
  const key = new Uint8Array(32).fill(9);
  const config = { contextKey: Buffer.from(key).toString('base64url'), audience: 'mcp:bridge-1' };
  const now = 1_800_000_000_000;
  const sign = (claims: Record<string, unknown>, opts: { aud?: string; iat?: number; exp?: number; jti?: string; k?: Uint8Array } = {}) =>
    new SignJWT({ bot_id: 'b', uid: 'alice', actor_kind: 'user', room_token: 'r', thread_id: null, message_id: '1', ...claims })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer('educai')
      .setAudience(opts.aud ?? 'mcp:bridge-1')
      .setIssuedAt(opts.iat ?? now / 1000)
      .setExpirationTime(opts.exp ?? now / 1000 + 60)
      .setJti(opts.jti ?? crypto.randomUUID())
      .sign(opts.k ?? key);

  it('accepts a valid context once; refuses replay, wrong audience, wrong key, expiry, long lifetimes and a missing context', async () => {
    const v = new ContextVerifier(() => now);
    const token = await sign({});
    const ok = await v.verify({ [CONTEXT_META_KEY]: token }, config);
    assert.equal(ok.uid, 'alice');
    await assert.rejects(v.verify({ [CONTEXT_META_KEY]: token }, config), /already used/);
    await assert.rejects(v.verify({ [CONTEXT_META_KEY]: await sign({}, { aud: 'mcp:other' }) }, config), /Invalid invocation context/);
    await assert.rejects(v.verify({ [CONTEXT_META_KEY]: await sign({}, { k: new Uint8Array(32).fill(1) }) }, config), /Invalid invocation context/);
    await assert.rejects(
      v.verify({ [CONTEXT_META_KEY]: await sign({}, { iat: now / 1000 - 120, exp: now / 1000 - 60 }) }, config),
      /Invalid invocation context/,
    );
    await assert.rejects(v.verify({ [CONTEXT_META_KEY]: await sign({}, { exp: now / 1000 + 3600 }) }, config), /Invalid invocation context/);
    await assert.rejects(v.verify({}, config), /Missing invocation context/);
    await assert.rejects(v.verify({ [CONTEXT_META_KEY]: await sign({}) }, null), /no context key/);
  });

  it('refuses a tools/call without a context, as a plain MCP client would send it', async () => {
    const b = await startBridge({ config });
    const connection = new McpConnection({ name: 'plain', url: b.url });
    try {
      const r = await connection.callTool('bridge_publish', { resourceId: 'course-101', title: 'x' });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /Refused: Missing invocation context/);
      assert.deepEqual(b.state.publications, []);
      assert.equal(b.state.calls.at(-1)?.refused, 'Missing invocation context');
    } finally {
      await connection.close();
      await b.close();
    }
  });
});
