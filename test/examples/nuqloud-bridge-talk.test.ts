// The reference companion (examples/nuqloud-bridge) registered through the admin API and driven
// from Talk: confirmations before publish/send/remove (S7, S17), capability checks, failures.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { startBridge, type RunningBridge } from '../../examples/nuqloud-bridge/server.ts';
import { lastToolOutput, type RecordedRequest } from '../fakes/openai/fake-openai.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { codeIn, startTalkScenario, waitFor, type TalkScenario } from '../helpers/talk-scenario.ts';

const BASE = '/api/v1/admin/mcp-servers';
const BRIDGE_TOKEN = 'bridge-api-token-6d1e0f2a9b';
const BRIDGE_TOOLS = ['bridge_list_resources', 'bridge_map_resource', 'bridge_publish', 'bridge_send_message', 'bridge_remove_mapping'];
const POLICIES = {
  bridge_list_resources: 'read',
  bridge_map_resource: 'write',
  bridge_publish: 'confirm',
  bridge_send_message: 'confirm',
  bridge_remove_mapping: 'destructive',
};

/** The server's confirmation message names its code like this. */
const CODE = /\(code (\d{4,6})\)/;

function offered(req: RecordedRequest): string[] {
  return ((req.body?.['tools'] ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
}

for (const dialect of DIALECTS) {
  describe(`NuQloud bridge driven from Talk on ${dialect}`, () => {
    let s: TalkScenario;
    let bridge: RunningBridge;
    let bot: Bot;
    let serverId: string;

    async function approve(policies: Record<string, string>): Promise<void> {
      const review = await s.h.fetch(`${BASE}/${serverId}/review`, { headers: s.h.browserHeaders('admin') });
      assert.equal(review.status, 200, review.text);
      const approved = await s.h.fetch(`${BASE}/${serverId}/approve`, {
        method: 'POST',
        headers: s.h.browserHeaders('admin'),
        body: { hash: review.json.review.hash, policies },
      });
      assert.equal(approved.status, 200, approved.text);
    }

    /** A fresh room per step, so no earlier answer taints the turn (S6). */
    async function room(): Promise<string> {
      const token = s.groupRoom();
      await s.onboard(token, bot, 'A');
      return token;
    }

    /** The server's confirmation request posted in `token` for `tool`. */
    function requestIn(token: string, tool: string): string {
      const request = s.bot(token).find((m) => /Confirmation needed/.test(m.message) && m.message.includes(tool));
      assert.ok(
        request,
        `a confirmation request for ${tool} in: ${s
          .bot(token)
          .map((m) => m.message)
          .join(' | ')}`,
      );
      return request.message;
    }

    before(async () => {
      bridge = await startBridge({ apiToken: BRIDGE_TOKEN });
      s = await startTalkScenario({ dialect });
      // Registered as an admin would, through the admin API; the key is shown once and saved in the bridge.
      const created = await s.h.fetch(BASE, {
        method: 'POST',
        headers: s.h.browserHeaders('admin'),
        body: { name: 'NuQloud bridge', url: bridge.url, kind: 'companion', headers: { Authorization: `Bearer ${BRIDGE_TOKEN}` } },
      });
      assert.equal(created.status, 201, created.text);
      serverId = created.json.server.id;
      bridge.configure({ contextKey: created.json.contextKey, audience: `mcp:${serverId}` });
      const review = await s.h.fetch(`${BASE}/${serverId}/review`, { headers: s.h.browserHeaders('admin') });
      assert.deepEqual(
        Object.fromEntries((review.json.review.tools as Array<{ name: string; suggestedPolicy: string }>).map((t) => [t.name, t.suggestedPolicy])),
        POLICIES,
        'the suggestions follow the bridge hints and declarations',
      );
      await approve(POLICIES);
      bot = await s.createBot({ mention: 'nuqloud' });
      // A refresh of the routing index that a background settings change started before the bot
      // existed can finish after createBot's own; refresh until the index knows the bot.
      await waitFor(async () => {
        await s.h.application.index.refresh();
        return s.h.application.index.mentions.has('nuqloud');
      }, 'the routing index knows the bot');
      await s.h.application.toolAssignments.replace(
        bot.id,
        [...BRIDGE_TOOLS, 'files_list'].map((name) => ({ name, config: {} })),
      );
    });
    after(async () => {
      await s.close();
      await bridge.close();
    });

    it('"@bot publish X" waits for "yes <code>", then publishes exactly once with a valid signed context', async () => {
      const r = await room();
      const requestsBefore = s.llm.chatRequests().length;
      s.llm.enqueue(
        {
          toolCalls: [{ id: 'p1', name: 'bridge_publish', arguments: JSON.stringify({ resourceId: 'course-101', title: 'Exam dates', body: 'Monday 9:00' }) }],
        },
        { text: ['I asked you to confirm the publication.'] },
      );
      await s.say(r, 'alice', '@nuqloud publish "Exam dates" to Algebra I');
      await s.idle();
      assert.deepEqual(bridge.state.publications, [], 'nothing published yet');
      assert.equal(
        bridge.state.calls.some((c) => c.tool === 'bridge_publish'),
        false,
        'the call never reached the bridge',
      );
      const toolOutput = lastToolOutput(s.llm.chatRequests().slice(requestsBefore).at(-1)!);
      assert.match(toolOutput, /^NOT DONE YET/);
      const request = requestIn(r, 'bridge_publish');
      assert.match(request, /Exam dates/);
      const code = codeIn(request, CODE);
      assert.equal(toolOutput.includes(code), false, 'the model never sees the code');

      const wrong = code === '1111' ? '2222' : '1111';
      await s.say(r, 'bob', `@nuqloud yes ${code}`);
      await s.say(r, 'alice', `@nuqloud yes ${wrong}`);
      await s.idle();
      assert.deepEqual(bridge.state.publications, [], "bob's yes and a wrong code publish nothing");

      await s.say(r, 'alice', `@nuqloud yes ${code}`);
      await s.idle();
      assert.equal(
        bridge.state.publications.length,
        1,
        s
          .bot(r)
          .map((m) => m.message)
          .join(' | '),
      );
      assert.deepEqual(bridge.state.publications[0], {
        id: 'pub-1',
        resourceId: 'course-101',
        title: 'Exam dates',
        body: 'Monday 9:00',
        publishedBy: 'alice',
        roomToken: r,
      });
      const call = bridge.state.calls.filter((c) => c.tool === 'bridge_publish');
      assert.equal(call.length, 1);
      assert.equal(call[0]!.refused, null);
      assert.deepEqual(
        {
          uid: call[0]!.context?.uid,
          actor: call[0]!.context?.actorKind,
          room: call[0]!.context?.roomToken,
          bot: call[0]!.context?.botId,
          aud: call[0]!.context?.aud,
        },
        { uid: 'alice', actor: 'user', room: r, bot: bot.id, aud: `mcp:${serverId}` },
      );
      assert.match(s.bot(r).at(-1)!.message, /^✅ Done: run bridge_publish/);

      await s.say(r, 'alice', `@nuqloud yes ${code}`);
      await s.idle();
      assert.equal(bridge.state.publications.length, 1, 'a second yes does nothing');
      assert.match(s.bot(r).at(-1)!.message, /already used/);
    });

    it("the admin's stricter policy applies; a declared confirmation cannot be weakened", async () => {
      // 'write' in a clean turn: mapped at once.
      let r = await room();
      s.llm.enqueue({ toolCalls: [{ id: 'm1', name: 'bridge_map_resource', arguments: '{"resourceId":"course-101"}' }] }, { text: ['Mapped.'] });
      await s.say(r, 'alice', '@nuqloud map Algebra I here');
      await s.idle();
      assert.deepEqual(bridge.state.mappings, [{ resourceId: 'course-101', roomToken: r, mappedBy: 'alice' }]);

      // The admin asks for confirmation of mapping, and tries to make publishing read-only.
      await approve({ ...POLICIES, bridge_map_resource: 'confirm', bridge_publish: 'read' });
      r = await room();
      s.llm.enqueue({ toolCalls: [{ id: 'm2', name: 'bridge_map_resource', arguments: '{"resourceId":"course-102"}' }] }, { text: ['Please confirm.'] });
      await s.say(r, 'alice', '@nuqloud map Biology here');
      await s.idle();
      assert.match(requestIn(r, 'bridge_map_resource'), /admin's policy asks for confirmation/);
      assert.equal(bridge.state.mappings.length, 1, 'not mapped before the confirmation');

      r = await room();
      const published = bridge.state.publications.length;
      s.llm.enqueue(
        { toolCalls: [{ id: 'p2', name: 'bridge_publish', arguments: '{"resourceId":"course-102","title":"Lab safety"}' }] },
        { text: ['Please confirm.'] },
      );
      await s.say(r, 'alice', '@nuqloud publish "Lab safety" to Biology');
      await s.idle();
      assert.match(requestIn(r, 'bridge_publish'), /declares that bridge_publish needs your confirmation/);
      assert.equal(bridge.state.publications.length, published, 'still waits for the user');
      await approve(POLICIES);
    });

    it('a tool that changed after the confirmation was requested: the stored call is refused', async () => {
      const r = await room();
      s.llm.enqueue(
        { toolCalls: [{ id: 's1', name: 'bridge_send_message', arguments: '{"resourceId":"course-101","text":"No class tomorrow"}' }] },
        { text: ['Please confirm.'] },
      );
      await s.say(r, 'alice', '@nuqloud tell the Algebra class there is no class tomorrow');
      await s.idle();
      const code = codeIn(requestIn(r, 'bridge_send_message'), CODE);
      bridge.upgradeTool('bridge_send_message', 'Sends a message to the members of a NuQloud resource and to everyone they follow.');
      await s.say(r, 'alice', `@nuqloud yes ${code}`);
      await s.idle();
      assert.deepEqual(bridge.state.messages, []);
      assert.equal(
        bridge.state.calls.some((c) => c.tool === 'bridge_send_message'),
        false,
      );
      assert.match(s.bot(r).at(-1)!.message, /^Not done: run bridge_send_message[\s\S]*changed on the tool server NuQloud bridge/);
    });

    it('the bridge failing mid-turn and going down: clear messages, tools hidden, the rest of the loadout works', async () => {
      // A confirmation requested while the bridge is up…
      const pendingRoom = await room();
      s.llm.enqueue({ toolCalls: [{ id: 'x1', name: 'bridge_remove_mapping', arguments: '{"resourceId":"course-101"}' }] }, { text: ['Please confirm.'] });
      await s.say(pendingRoom, 'alice', '@nuqloud unmap Algebra I');
      await s.idle();
      const code = codeIn(requestIn(pendingRoom, 'bridge_remove_mapping'), CODE);

      // …then the bridge stops while the model's call is on its way.
      const r = await room();
      const requestsBefore = s.llm.chatRequests().length;
      let stopping: Promise<void> | null = null;
      s.llm.responder = () => {
        stopping ??= bridge.close();
        s.llm.responder = () => ({ text: ['The bridge is not reachable right now.'] });
        return { toolCalls: [{ id: 'l1', name: 'bridge_list_resources', arguments: '{}' }], delayMs: 300 };
      };
      await s.say(r, 'alice', '@nuqloud which resources are there?');
      await s.idle();
      await stopping;
      const turn = s.llm.chatRequests().slice(requestsBefore);
      assert.ok(offered(turn[0]!).includes('bridge_list_resources'));
      assert.match(lastToolOutput(turn.at(-1)!), /^ERROR: The tool server NuQloud bridge is not reachable\. Try again later\./);
      assert.equal(s.bot(r).at(-1)!.message, 'The bridge is not reachable right now.');

      // The confirmed action cannot run: the user reads why, and nothing crashes.
      await s.say(pendingRoom, 'alice', `@nuqloud yes ${code}`);
      await s.idle();
      assert.match(s.bot(pendingRoom).at(-1)!.message, /^Not done: run bridge_remove_mapping[\s\S]*not reachable/);
      assert.equal(bridge.state.mappings.length, 1, 'the mapping is still there');

      // Next turn: the bridge's tools are neither advertised nor callable; files_list still works.
      const next = await room();
      const before = s.llm.chatRequests().length;
      s.h.nc.dav.files.putFile('alice', 'Notes/plan.md', '# Plan');
      s.llm.responder = () => ({ text: ['Done.'] });
      s.llm.enqueue(
        {
          toolCalls: [
            { id: 'f1', name: 'files_list', arguments: '{"path":"Notes"}' },
            { id: 'b1', name: 'bridge_publish', arguments: '{"resourceId":"course-101","title":"x"}' },
          ],
        },
        { text: ['Your Notes folder has plan.md; the bridge is unavailable.'] },
      );
      await s.say(next, 'alice', '@nuqloud list my notes and publish them');
      await s.idle();
      const reqs = s.llm.chatRequests().slice(before);
      assert.deepEqual(
        offered(reqs[0]!).filter((n) => n.startsWith('bridge_')),
        [],
        'no bridge tool is advertised',
      );
      assert.ok(offered(reqs[0]!).includes('files_list'));
      const toolMessages = ((reqs[1]!.body?.messages ?? []) as Array<{ role: string; content: string }>).filter((m) => m.role === 'tool').map((m) => m.content);
      assert.ok(
        toolMessages.some((c) => /plan\.md/.test(c)),
        toolMessages.join(' | '),
      );
      assert.ok(
        toolMessages.some((c) => /^(ERROR: )?Tool not available/.test(c)),
        toolMessages.join(' | '),
      );
      assert.equal(s.bot(next).at(-1)!.message, 'Your Notes folder has plan.md; the bridge is unavailable.');
    });
  });
}
