// Wiki writes after untrusted content entered the turn (S6) wait for the invoker's confirmation,
// recorded by the server (S7), driven through Talk webhooks end to end.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import type { RecordedRequest } from '../fakes/openai/fake-openai.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

const ROOT = 'Talk AI/Personal Wikis/scribe';

function toolOutputs(req: RecordedRequest): string[] {
  const messages = (req.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  return messages.filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : ''));
}

/** The confirmation request the server posted in the room, and its code. */
function requestIn(messages: Array<{ message: string }>): { text: string; code: string } {
  const text = [...messages].reverse().find((m) => /Confirmation needed/.test(m.message))?.message;
  assert.ok(text, `a confirmation request among: ${messages.map((m) => m.message).join(' | ')}`);
  const code = /\(code (\d{4,8})\)/.exec(text)?.[1];
  assert.ok(code, `a code in: ${text}`);
  return { text, code };
}

for (const dialect of DIALECTS) {
  describe(`wiki writes in a tainted turn need the invoker's confirmation (S6, S7; ${dialect})`, () => {
    let s: TalkScenario;
    let bot: Bot;
    before(async () => {
      s = await startTalkScenario({ dialect });
      bot = await s.createBot({ mention: 'scribe', visibility: 'personal' });
      const put = await s.h.fetch(`/api/v1/bots/${bot.id}/tools`, {
        method: 'PUT',
        headers: s.h.browserHeaders('alice'),
        body: { tools: [{ name: 'wiki_write_page' }] },
      });
      assert.equal(put.status, 200, put.text);
    });
    after(async () => s.close());

    async function room(): Promise<string> {
      const token = s.groupRoom();
      await s.onboard(token, bot, 'A');
      return token;
    }

    const read = (path: string) => s.h.nc.dav.files.read('alice', `${ROOT}/${path}`);

    it("after wiki_read_page an overwrite is asked for; bob and a bare yes do nothing; alice's yes writes exactly the stored content, once", async () => {
      s.h.nc.dav.files.putFile('alice', `${ROOT}/notes.md`, '# Notes\n\nold text\n');
      const r = await room();
      const content = `# Notes\n\n${'Die Quadratwurzel aus 2 ist irrational. '.repeat(40)}\n`;
      s.llm.enqueue(
        { toolCalls: [{ id: 'r1', name: 'wiki_read_page', arguments: '{"path":"notes.md"}' }] },
        { toolCalls: [{ id: 'w1', name: 'wiki_write_page', arguments: JSON.stringify({ path: 'notes.md', content, mode: 'overwrite' }) }] },
        { text: ['Please confirm the change.'] },
      );
      await s.say(r, 'alice', '@scribe rewrite my notes page');
      await s.idle();
      assert.equal(read('notes.md'), '# Notes\n\nold text\n', 'nothing written before the confirmation');
      const request = requestIn(s.bot(r));
      assert.match(request.text, /replace the whole wiki page "notes\.md" in "Talk AI\/Personal Wikis\/scribe" with 1\.6 KiB of text/);
      assert.doesNotMatch(request.text, /Quadratwurzel/, 'the request names the size, not the content');
      const seen = s.llm
        .chatRequests()
        .flatMap(toolOutputs)
        .find((t) => /NOT DONE YET/.test(t));
      assert.ok(seen, 'the model is told it is not done');
      assert.ok(!seen.includes(request.code), "the code stays out of the model's context");

      await s.say(r, 'bob', `@scribe yes ${request.code}`);
      await s.idle();
      assert.match(s.bot(r).at(-1)!.message, /belongs to alice/);
      await s.say(r, 'alice', '@scribe yes');
      await s.idle();
      assert.equal(read('notes.md'), '# Notes\n\nold text\n', 'bob and a bare yes confirm nothing');

      await s.say(r, 'alice', `@scribe yes ${request.code}`);
      await s.idle();
      assert.match(s.bot(r).at(-1)!.message, /^✅ Done: replace the whole wiki page "notes\.md"/);
      assert.equal(read('notes.md'), content);
      const puts = s.h.nc.calls.filter((c) => c.method === 'PUT' && c.path.endsWith('/notes.md'));
      assert.deepEqual([...new Set(puts.map((c) => c.user))], ['alice']);

      await s.say(r, 'alice', `@scribe yes ${request.code}`);
      await s.idle();
      assert.match(s.bot(r).at(-1)!.message, /already used/);
      assert.equal(s.h.nc.calls.filter((c) => c.method === 'PUT' && c.path.endsWith('/notes.md')).length, puts.length, 'it runs once');
    });

    it("an untainted turn writes directly, and so does the next one (the bot's own answer does not taint it); after a read in the turn a new page and a log entry are asked for and written when confirmed", async () => {
      const r = await room();
      s.llm.enqueue(
        { toolCalls: [{ id: 'w2', name: 'wiki_write_page', arguments: '{"path":"first.md","content":"# First\\n"}' }] },
        { text: ['Saved first.md.'] },
      );
      await s.say(r, 'alice', '@scribe save a first page');
      await s.idle();
      assert.equal(read('first.md'), '# First\n', 'written directly');
      assert.ok(!s.bot(r).some((m) => /Confirmation needed/.test(m.message)));

      // Issue 23: only the bot's earlier answer is in memory, which does not taint the turn by itself.
      s.llm.enqueue(
        { toolCalls: [{ id: 'w2b', name: 'wiki_write_page', arguments: '{"path":"again.md","content":"# Again\\n"}' }] },
        { text: ['Saved again.md.'] },
      );
      await s.say(r, 'alice', '@scribe save another page');
      await s.idle();
      assert.equal(read('again.md'), '# Again\n', 'written directly in the next turn');
      assert.ok(!s.bot(r).some((m) => /Confirmation needed/.test(m.message)));

      // A page read in this turn is untrusted content: the next write waits.
      s.llm.enqueue(
        { toolCalls: [{ id: 'r3', name: 'wiki_read_page', arguments: '{"path":"first.md"}' }] },
        { toolCalls: [{ id: 'w3', name: 'wiki_write_page', arguments: '{"path":"topics/second.md","content":"# Second\\n\\nMore.\\n"}' }] },
        { text: ['Please confirm.'] },
      );
      await s.say(r, 'alice', '@scribe and a second one');
      await s.idle();
      assert.equal(read('topics/second.md'), null);
      const request = requestIn(s.bot(r));
      assert.match(request.text, /create the wiki page "topics\/second\.md" .* with 16 bytes of text/);
      await s.say(r, 'alice', `@scribe yes ${request.code}`);
      await s.idle();
      assert.equal(read('topics/second.md'), '# Second\n\nMore.\n');
      assert.match(read('index.md') ?? '', /\(topics\/second\.md\)/, 'index.md lists the confirmed page');

      s.llm.enqueue(
        { toolCalls: [{ id: 'r4', name: 'wiki_read_page', arguments: '{"path":"topics/second.md"}' }] },
        { toolCalls: [{ id: 'l1', name: 'wiki_log_event', arguments: '{"title":"Added topics/second.md","details":"Asked by alice."}' }] },
        { text: ['Please confirm.'] },
      );
      await s.say(r, 'alice', '@scribe log it');
      await s.idle();
      assert.doesNotMatch(read('log.md') ?? '', /Added topics\/second\.md/);
      const logRequest = requestIn(s.bot(r));
      assert.notEqual(logRequest.code, request.code);
      assert.match(logRequest.text, /add the entry "Added topics\/second\.md" \(\d+ bytes\) to log\.md/);
      await s.say(r, 'alice', `@scribe yes ${logRequest.code}`);
      await s.idle();
      assert.match(read('log.md') ?? '', /\] Added topics\/second\.md\n\nAsked by alice\./);
    });

    it('a page changed since the request (etag), or created meanwhile, makes the confirmed action fail cleanly', async () => {
      s.h.nc.dav.files.putFile('alice', `${ROOT}/plan.md`, '# Plan\n\nv1\n');
      let r = await room();
      s.llm.enqueue(
        { toolCalls: [{ id: 'r2', name: 'wiki_read_page', arguments: '{"path":"plan.md"}' }] },
        { toolCalls: [{ id: 'w4', name: 'wiki_write_page', arguments: '{"path":"plan.md","content":"- step 3\\n","mode":"append"}' }] },
        { text: ['Please confirm.'] },
      );
      await s.say(r, 'alice', '@scribe add step 3 to my plan');
      await s.idle();
      let request = requestIn(s.bot(r));
      assert.match(request.text, /append 9 bytes of text to the wiki page "plan\.md"/);
      // Someone edits the page by hand before the confirmation.
      s.h.nc.dav.files.putFile('alice', `${ROOT}/plan.md`, '# Plan\n\nv2 by hand\n');
      await s.say(r, 'alice', `@scribe yes ${request.code}`);
      await s.idle();
      assert.match(s.bot(r).at(-1)!.message, /^Not done: append[\s\S]*changed since the confirmation was asked for/);
      assert.equal(read('plan.md'), '# Plan\n\nv2 by hand\n', 'the hand edit is kept');

      r = await room();
      s.llm.enqueue(
        { toolCalls: [{ id: 's1', name: 'wiki_search', arguments: '{"query":"plan"}' }] },
        { toolCalls: [{ id: 'w5', name: 'wiki_write_page', arguments: '{"path":"later.md","content":"# Later\\n"}' }] },
        { text: ['Please confirm.'] },
      );
      await s.say(r, 'alice', '@scribe start a page for later');
      await s.idle();
      request = requestIn(s.bot(r));
      s.h.nc.dav.files.putFile('alice', `${ROOT}/later.md`, 'made by hand\n');
      await s.say(r, 'alice', `@scribe yes ${request.code}`);
      await s.idle();
      assert.match(s.bot(r).at(-1)!.message, /^Not done: create the wiki page "later\.md"/);
      assert.equal(read('later.md'), 'made by hand\n');
    });
  });
}
