// Issue 10, credentials: the reference bridge guards its tool calls with BRIDGE_API_TOKEN; the token
// is a credential of an agent profile, and the companion is registered with agentCredential. A bot
// whose bridge tools run as the profile reaches the bridge with the bearer token (also for a
// confirmed call); the same tools in user mode are refused by the bridge with a clear message; the
// token appears in no log line, trace row, audit row or API answer of the test (S20).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { startBridge, type RunningBridge } from '../../examples/nuqloud-bridge/server.ts';
import { lastToolOutput } from '../fakes/openai/fake-openai.ts';
import { AGENT_ACCOUNT_USERS, DEFAULT_USERS } from '../fakes/nextcloud/users.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { assertNowhere, persistedTexts } from '../helpers/leak-check.ts';
import { startTalkScenario, waitFor, type TalkScenario } from '../helpers/talk-scenario.ts';

const BASE = '/api/v1/admin/mcp-servers';
const BRIDGE_TOKEN = 'bridge-agent-token-3f9c1e7a2b58d4';
const POLICIES = {
  bridge_list_resources: 'read',
  bridge_map_resource: 'write',
  bridge_publish: 'confirm',
  bridge_send_message: 'confirm',
  bridge_remove_mapping: 'destructive',
};

for (const dialect of DIALECTS) {
  describe(`NuQloud bridge through an agent profile's credential on ${dialect}`, () => {
    let s: TalkScenario;
    let bridge: RunningBridge;
    let bot: Bot;
    let serverId = '';
    let profileId = '';
    /** Every API answer of this test, for the leak check. */
    const answers: string[] = [];
    const rooms: string[] = [];

    const api = async (uid: string, method: string, path: string, body?: unknown) => {
      const r = await s.h.fetch(path, { method, headers: s.h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
      answers.push(r.text);
      return r;
    };
    const room = async (): Promise<string> => {
      const token = s.groupRoom();
      await s.onboard(token, bot, 'A');
      rooms.push(token);
      return token;
    };
    const assign = async (config: Record<string, unknown>) => {
      await s.h.application.toolAssignments.replace(
        bot.id,
        ['bridge_list_resources', 'bridge_publish'].map((name) => ({ name, config })),
      );
    };
    /** One turn calling `tool`; returns what the model read back. */
    const call = async (r: string, tool: string, args: Record<string, unknown>): Promise<string> => {
      const before = s.llm.chatRequests().length;
      s.llm.enqueue({ toolCalls: [{ id: `c${before}`, name: tool, arguments: JSON.stringify(args) }] }, { text: ['Done.'] });
      await s.say(r, 'alice', `@nuqloud please use ${tool}`);
      await s.idle();
      return lastToolOutput(s.llm.chatRequests().slice(before).at(-1)!);
    };

    before(async () => {
      bridge = await startBridge({ apiToken: BRIDGE_TOKEN, apiTokenScope: 'calls' });
      s = await startTalkScenario({ dialect, users: [...DEFAULT_USERS, ...AGENT_ACCOUNT_USERS] });
      const created = await api('admin', 'POST', BASE, { name: 'NuQloud bridge', url: bridge.url, kind: 'companion', agentCredential: 'bridge' });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.json.server.agentCredential, 'bridge');
      assert.deepEqual(created.json.server.headers, {});
      serverId = created.json.server.id;
      bridge.configure({ contextKey: created.json.contextKey, audience: `mcp:${serverId}` });
      const review = await api('admin', 'GET', `${BASE}/${serverId}/review`);
      assert.equal(review.status, 200, review.text);
      const approved = await api('admin', 'POST', `${BASE}/${serverId}/approve`, { hash: review.json.review.hash, policies: POLICIES });
      assert.equal(approved.status, 200, approved.text);

      bot = await s.createBot({ mention: 'nuqloud' });
      await waitFor(async () => {
        await s.h.application.index.refresh();
        return s.h.application.index.mentions.has('nuqloud');
      }, 'the routing index knows the bot');
    });
    after(async () => {
      await s.close();
      await bridge.close();
    });

    it('the registration takes a credential name only', async () => {
      const bad = await api('admin', 'PUT', `${BASE}/${serverId}`, { agentCredential: `Bearer ${BRIDGE_TOKEN}` });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.json.error.details.agentCredential, /not its value/, bad.text);
      const listed = await api('admin', 'GET', BASE);
      assert.equal(listed.json.servers.find((v: { id: string }) => v.id === serverId).agentCredential, 'bridge');
    });

    it('an admin gives a profile the token as credential "bridge" and the bridge as tool family', async () => {
      const profile = await api('admin', 'POST', '/api/v1/admin/agent-profiles', {
        label: 'NuQloud AI',
        accountUid: 'nuqloud-ai',
        scopeDescription: 'Publishes for the school',
        toolFamilies: [`mcp:${serverId}`],
        triggerGroups: ['educai-students'],
        confirmGroups: ['educai-students'],
        enabled: true,
        credentials: [{ name: 'bridge', value: BRIDGE_TOKEN }],
      });
      assert.equal(profile.status, 200, profile.text);
      profileId = profile.json.profile.id;
      const granted = await api('admin', 'POST', `/api/v1/admin/agent-profiles/${profileId}/grants`, { botId: bot.id, maxScope: {} });
      assert.equal(granted.status, 200, granted.text);
      await assign({ agentProfile: profileId });
    });

    it("in agent mode the bridge receives the profile's bearer token and the call succeeds", async () => {
      const r = await room();
      const checks = bridge.state.tokenChecks.length;
      const output = await call(r, 'bridge_list_resources', {});
      assert.match(output, /Algebra I/, output);
      assert.deepEqual(bridge.state.tokenChecks.slice(checks), [{ tool: 'bridge_list_resources', authorized: true }]);
      const last = bridge.state.calls.at(-1)!;
      assert.equal(last.refused, null);
      assert.equal(last.context?.uid, 'nuqloud-ai', 'the signed context names the profile account');
    });

    it('a confirmed call in agent mode also carries the token, and runs as the account', async () => {
      const r = await room();
      const output = await call(r, 'bridge_publish', { resourceId: 'course-101', title: 'Exam dates' });
      assert.match(output, /^NOT DONE YET/);
      const request = s.bot(r).find((m) => /Confirmation needed/.test(m.message));
      const code = /\(code (\d{4,6})\)/.exec(request?.message ?? '')?.[1];
      assert.ok(
        code,
        s
          .bot(r)
          .map((m) => m.message)
          .join(' | '),
      );
      const checks = bridge.state.tokenChecks.length;
      await s.say(r, 'alice', `@nuqloud yes ${code}`);
      await s.idle();
      assert.match(s.bot(r).at(-1)!.message, /^✅ Done: run bridge_publish/, s.bot(r).at(-1)!.message);
      assert.deepEqual(bridge.state.tokenChecks.slice(checks), [{ tool: 'bridge_publish', authorized: true }]);
      assert.equal(bridge.state.publications.at(-1)?.publishedBy, 'nuqloud-ai');
      const audit = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&tool=bridge_publish&limit=1`);
      assert.deepEqual(
        [audit.json.entries[0].mode, audit.json.entries[0].actingUid, audit.json.entries[0].invokerUid, audit.json.entries[0].outcome],
        ['agent', 'nuqloud-ai', 'alice', 'ok'],
      );
    });

    it('a profile without the credential: refused, nothing reaches the bridge', async () => {
      const removed = await api('admin', 'PUT', `/api/v1/admin/agent-profiles/${profileId}`, {
        label: 'NuQloud AI',
        accountUid: 'nuqloud-ai',
        scopeDescription: 'Publishes for the school',
        toolFamilies: [`mcp:${serverId}`],
        triggerGroups: ['educai-students'],
        confirmGroups: ['educai-students'],
        enabled: true,
        credentials: [],
      });
      assert.equal(removed.status, 200, removed.text);
      const r = await room();
      const checks = bridge.state.tokenChecks.length;
      const calls = bridge.state.calls.length;
      const output = await call(r, 'bridge_list_resources', {});
      assert.match(output, /needs the agent profile credential "bridge"[\s\S]*Nothing was sent/, output);
      assert.equal(bridge.state.tokenChecks.length, checks);
      assert.equal(bridge.state.calls.length, calls);
      await api('admin', 'PUT', `/api/v1/admin/agent-profiles/${profileId}`, {
        label: 'NuQloud AI',
        accountUid: 'nuqloud-ai',
        scopeDescription: 'Publishes for the school',
        toolFamilies: [`mcp:${serverId}`],
        triggerGroups: ['educai-students'],
        confirmGroups: ['educai-students'],
        enabled: true,
        credentials: [{ name: 'bridge', value: BRIDGE_TOKEN }],
      });
    });

    it('the same tool in user mode: the bridge refuses (no token) and the user reads why', async () => {
      await assign({});
      const r = await room();
      const checks = bridge.state.tokenChecks.length;
      const calls = bridge.state.calls.length;
      const output = await call(r, 'bridge_list_resources', {});
      assert.deepEqual(bridge.state.tokenChecks.slice(checks), [{ tool: 'bridge_list_resources', authorized: false }]);
      assert.equal(bridge.state.calls.length, calls, 'the bridge ran nothing');
      assert.match(
        output,
        /^ERROR: The tool server NuQloud bridge refused the request \(HTTP 401\/403\): it accepts this tool only when the bot acts through an agent profile that holds its credential/,
        output,
      );
      const audit = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&tool=bridge_list_resources&limit=1`);
      assert.deepEqual([audit.json.entries[0].mode, audit.json.entries[0].actingUid, audit.json.entries[0].outcome], ['user', 'alice', 'error']);
    });

    it('the token appears in no log line, trace row, audit row or API answer', async () => {
      await api('admin', 'GET', BASE);
      await api('admin', 'GET', `${BASE}/${serverId}`);
      await api('admin', 'GET', '/api/v1/admin/agent-profiles');
      await api('admin', 'GET', `/api/v1/admin/agent-profiles/${profileId}`);
      await api('admin', 'GET', '/api/v1/admin/audit');
      await api('admin', 'GET', '/api/v1/admin/traces');
      await api('alice', 'GET', '/api/v1/traces');
      const texts = await persistedTexts(s);
      assert.ok(texts.traceEvents !== '[]' && (JSON.parse(texts.audit) as unknown[]).length >= 4 && answers.length > 10);
      assertNowhere(BRIDGE_TOKEN, { ...texts, answers: answers.join('\n'), talk: JSON.stringify(rooms.map((r) => s.bot(r))) });
    });
  });
}
