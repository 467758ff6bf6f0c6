import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import type { RecordedRequest } from '../fakes/openai/fake-openai.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

const ROOT = 'Talk AI/Personal Wikis/scribe';

function toolOutputs(req: RecordedRequest): string[] {
  const messages = (req.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  return messages.filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : ''));
}

describe('a personal bot keeps a wiki, driven through Talk (issue 9 end to end)', () => {
  let s: TalkScenario;
  let bot: Bot;
  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite' });
    bot = await s.createBot({ mention: 'scribe', visibility: 'personal' });
    // Assigned through the JSON API as the owner: one wiki tool expands to all four and the wiki is initialised.
    const put = await s.h.fetch(`/api/v1/bots/${bot.id}/tools`, {
      method: 'PUT',
      headers: s.h.browserHeaders('alice'),
      body: { tools: [{ name: 'wiki_write_page' }] },
    });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(
      put.json.tools.map((t: { name: string }) => t.name),
      ['wiki_search', 'wiki_read_page', 'wiki_write_page', 'wiki_log_event'],
    );
    assert.ok(s.h.nc.dav.files.read('alice', `${ROOT}/index.md`), 'initialised on save');
  });
  after(async () => s.close());

  it('writes a page, finds it with wiki_search, reads it back in pages, and index.md lists it', async () => {
    const token = s.groupRoom();
    await s.onboard(token, bot, 'A');
    const page = `# Bruchrechnung\n\n${'Brüche brauchen einen gemeinsamen Nenner. 分数の足し算。 '.repeat(120)}\nEnde.\n`;
    s.llm.enqueue(
      { toolCalls: [{ id: 'w1', name: 'wiki_write_page', arguments: JSON.stringify({ path: 'mathe/brueche.md', content: page, reason: 'asked to save' }) }] },
      { text: ['Saved your notes on fractions.'] },
    );
    await s.say(token, 'alice', '@scribe save my notes on fractions in the wiki');
    await s.idle();
    assert.equal(s.bot(token).at(-1)?.message, 'Saved your notes on fractions.');
    // A write after a tool result or another person's message needs a confirmation (S6); the log entry is a fresh conversation.
    const logRoom = s.groupRoom();
    await s.onboard(logRoom, bot, 'A');
    s.llm.enqueue(
      { toolCalls: [{ id: 'w2', name: 'wiki_log_event', arguments: JSON.stringify({ title: 'Saved mathe/brueche.md', details: 'Notes on fractions.' }) }] },
      { text: ['Logged.'] },
    );
    await s.say(logRoom, 'alice', '@scribe log that you saved the fractions page');
    await s.idle();
    assert.equal(s.bot(logRoom).at(-1)?.message, 'Logged.');
    assert.equal(s.h.nc.dav.files.read('alice', `${ROOT}/mathe/brueche.md`), page);
    const written = s.h.nc.calls.filter((c) => c.method === 'PUT' && c.path.includes('/brueche.md'));
    assert.deepEqual(
      written.map((c) => c.user),
      ['alice'],
    );

    const token2 = s.groupRoom();
    await s.onboard(token2, bot, 'A');
    s.llm.enqueue({ toolCalls: [{ id: 's1', name: 'wiki_search', arguments: '{"query":"gemeinsamen Nenner"}' }] });
    // Read the page back chunk by chunk, following next_offset from each answer.
    let chunks = 0;
    s.llm.responder = (req) => {
      const last = JSON.parse(toolOutputs(req).at(-1) ?? '{}') as {
        action?: string;
        results?: Array<{ path: string }>;
        has_more?: boolean;
        next_offset?: number;
      };
      if (last.action === 'search')
        return { toolCalls: [{ id: 'r0', name: 'wiki_read_page', arguments: JSON.stringify({ path: last.results?.[0]?.path ?? 'none' }) }] };
      if (last.action === 'read' && last.has_more)
        return {
          toolCalls: [{ id: `r${++chunks}`, name: 'wiki_read_page', arguments: JSON.stringify({ path: 'mathe/brueche.md', offset: last.next_offset }) }],
        };
      return { text: ['You need a common denominator.'] };
    };
    await s.say(token2, 'alice', '@scribe what do my notes say about denominators?');
    await s.idle();
    s.llm.responder = () => ({ text: ['ok'] });
    assert.equal(s.bot(token2).at(-1)?.message, 'You need a common denominator.');

    const outputs = [...new Set(s.llm.chatRequests().flatMap(toolOutputs))].map((t) => JSON.parse(t) as Record<string, any>);
    const search = outputs.find((o) => o['action'] === 'search');
    assert.equal(search?.['results'][0].path, 'mathe/brueche.md');
    const reads = outputs.filter((o) => o['action'] === 'read');
    assert.ok(reads.length >= 2, `read in pages (${reads.length})`);
    assert.equal(reads.map((r) => r['content']).join(''), page);
    assert.equal(reads.at(-1)?.['has_more'], false);
    assert.ok(reads.slice(0, -1).every((r) => r['has_more'] === true && r['returned_length'] === 3000));

    const index = s.h.nc.dav.files.read('alice', `${ROOT}/index.md`) ?? '';
    assert.match(index, /## Existing Files[\s\S]*- \[Bruchrechnung\]\(mathe\/brueche\.md\) — `mathe\/brueche\.md` \(\d+ bytes\)/);
    assert.match(s.h.nc.dav.files.read('alice', `${ROOT}/log.md`) ?? '', /\] Saved mathe\/brueche\.md\n\nNotes on fractions\./);
  });
});
