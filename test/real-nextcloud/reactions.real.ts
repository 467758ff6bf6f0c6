// Confirm with a 👍 on the real Nextcloud 33 + Talk 21 (issue 23): a share to bob asks (the tool's
// assignment requires confirmation); bob's 👍 on the request does nothing, alice's 👍 runs it once,
// and the bot answers and reacts ✅. First as AppAPI registers the bot (no reaction webhooks: the
// server reads the reactions while the request is pending), then with Talk's `reaction` feature
// turned on by the admin (`occ talk:bot:state <id> 1 -f webhook -f response -f reaction`).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/harness.ts';
import type { ChatMessage, User } from './nextcloud.ts';
import { startStack, unique, type Stack } from './stack.ts';

describe('confirm with a 👍 on the real Nextcloud 33', () => {
  let s: Stack;
  let mention: string;
  let folder: string;

  before(async () => {
    s = await startStack();
    mention = unique('reactor').replace(/-/g, '_');
    const bot = await s.createBot('alice', mention);
    const t = await s.nc.proxy('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, {
      tools: [
        { name: 'sharing_create_user_share', config: { requireConfirmation: true } },
        { name: 'sharing_list', config: {} },
      ],
    });
    assert.equal(t.status, 200, t.text);
    folder = unique('Shared');
  });
  after(async () => s?.stop());

  const text = (messages: ChatMessage[]) => messages.map((m) => m.message).join(' | ');

  async function react(user: User, token: string, messageId: number, reaction: string): Promise<void> {
    const r = await s.nc.ocs(user, 'POST', `/apps/spreed/api/v1/reaction/${token}/${messageId}`, { reaction });
    assert.equal(r.status, 201, r.text);
  }

  async function sharesWithBob(file: string): Promise<number> {
    const r = await s.nc.ocs('bob', 'GET', '/apps/files_sharing/api/v1/shares?shared_with_me=true');
    assert.equal(r.status, 200, r.text);
    return (r.data as Array<{ uid_owner: string; path: string }>).filter((x) => x.uid_owner === 'alice' && x.path.endsWith(`/${file}`)).length;
  }

  async function botReacted(token: string, messageId: number, emoji: string): Promise<boolean> {
    const r = await s.nc.ocs('alice', 'GET', `/apps/spreed/api/v1/reaction/${token}/${messageId}`);
    if (r.status !== 200 || Array.isArray(r.data)) return false;
    return ((r.data as Record<string, Array<{ actorType: string }>>)[emoji] ?? []).some((a) => a.actorType === 'bots');
  }

  /** A share to bob that asks; answers the room and the request's Talk message id. */
  async function askToShare(file: string): Promise<{ token: string; requestId: number }> {
    await s.nc.putFile('alice', `${folder}/${file}`, `notes in ${file}`);
    const token = await s.room('alice', ['bob']);
    await s.onboard('alice', token, mention);
    s.llm.enqueue(
      { toolCalls: [{ id: `c-${file}`, name: 'sharing_create_user_share', arguments: JSON.stringify({ path: `${folder}/${file}`, user: 'bob' }) }] },
      { text: ['Please confirm.'] },
    );
    const asked = await s.ask('alice', token, `@${mention} share ${file} with bob`);
    const request = asked.find((m) => m.messageType === 'comment' && /Confirmation needed/.test(m.message) && m.message.includes(file));
    assert.ok(request, `a confirmation request naming the file: ${text(asked)}`);
    assert.equal(await sharesWithBob(file), 0, 'nothing shared before the confirmation');
    return { token, requestId: request.id };
  }

  async function confirmOnce(token: string, requestId: number, file: string, waitMs: number): Promise<void> {
    await react('bob', token, requestId, '👍');
    // Longer than the watcher's read interval (5 s): bob's 👍 has been read and ignored.
    await new Promise((r) => setTimeout(r, waitMs));
    assert.equal(await sharesWithBob(file), 0, "bob's 👍 does nothing");
    assert.equal(await botReacted(token, requestId, '✅'), false);

    await react('alice', token, requestId, '👍');
    await waitFor(async () => (await sharesWithBob(file)) > 0, "alice's 👍 to run the share", 60_000);
    await waitFor(() => botReacted(token, requestId, '✅'), 'the bot to react ✅ on the request', 30_000);
    const answers = (await s.nc.botMessages('alice', token)).filter((m) => m.id > requestId && m.messageType === 'comment');
    assert.ok(
      answers.some((m) => /Done: share/.test(m.message)),
      `the bot answers: ${text(answers)}`,
    );
    assert.equal(await sharesWithBob(file), 1, 'shared exactly once');
  }

  it("without Talk's reaction feature: bob's 👍 does nothing, alice's 👍 runs the share once (reactions read as alice)", async () => {
    const file = `${unique('poll')}.txt`;
    const { token, requestId } = await askToShare(file);
    await confirmOnce(token, requestId, file, 12_000);
  });

  it("with Talk's reaction feature turned on: the same, the Like webhook making the read come sooner", async () => {
    const list = JSON.parse(await s.nc.occ('talk:bot:list', '--output=json')) as Array<{ id: number; name: string; features?: unknown }>;
    const bot = list.find((b) => b.name === 'Talk AI');
    assert.ok(bot, 'Talk lists the shared bot');
    await s.nc.occ('talk:bot:state', String(bot.id), '1', '-f', 'webhook', '-f', 'response', '-f', 'reaction');
    try {
      const file = `${unique('hook')}.txt`;
      const { token, requestId } = await askToShare(file);
      await confirmOnce(token, requestId, file, 4_000);
    } finally {
      await s.nc.occ('talk:bot:state', String(bot.id), '1', '-f', 'webhook', '-f', 'response');
    }
  });
});
