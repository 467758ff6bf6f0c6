// End to end through Talk (issue 11, "done when" 3): on Nextcloud 29 (Collectives 2.x, capture 91)
// the bot creates a Collectives page as alice, then reads and updates it with a revision check;
// the update after the read waits for alice's "yes <code>" (S6/S7), a stale revision is refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../../lib/bots/bot-store.ts';
import { lastToolOutput } from '../../fakes/openai/fake-openai.ts';
import { codeIn, startTalkScenario, type TalkScenario } from '../../helpers/talk-scenario.ts';

describe('Collectives tools driven by Talk, as alice', () => {
  let s: TalkScenario;
  let bot: Bot;
  let collectiveId = 0;
  let landingId = 0;

  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite' });
    s.h.nc.collectives.generation = 2;
    collectiveId = s.h.nc.collectives.createCollective('Math Team', { alice: 'RGDNVCK', bob: 'RGDNVCK' }).id;
    landingId = s.h.nc.dav.files.node('alice', 'Collectives/Math Team/Readme.md')!.fileId;
    bot = await s.createBot({ mention: 'assistant' });
    const names = Object.keys(s.h.application.registry.metadata()).filter((n) => n.startsWith('collectives_'));
    assert.equal(names.length, 8, names.join(', '));
    await s.h.application.toolAssignments.replace(
      bot.id,
      names.map((name) => ({ name, config: {} })),
    );
  });
  after(async () => s.close());

  async function room(): Promise<string> {
    const token = s.groupRoom();
    await s.onboard(token, bot, 'A');
    return token;
  }

  it('creates a page, then updates it with a revision check after alice confirms', async () => {
    s.h.nc.reset();
    // 1. create: nothing untrusted in this turn, so it runs at once.
    let r = await room();
    s.llm.enqueue(
      {
        toolCalls: [
          {
            id: 'c1',
            name: 'collectives_create_page',
            arguments: JSON.stringify({ collective_id: collectiveId, parent_id: landingId, title: 'Fractions', content: '# Fractions\n\nHalf is 1/2.\n' }),
          },
        ],
      },
      { text: ['Created the page Fractions.'] },
    );
    await s.say(r, 'alice', `@assistant create a page "Fractions" in collective ${collectiveId} under page ${landingId}`);
    await s.idle();
    assert.equal(
      s.h.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions.md'),
      '# Fractions\n\nHalf is 1/2.\n',
      s
        .bot(r)
        .map((m) => m.message)
        .join(' | '),
    );
    const page = s.h.nc.collectives.pages('alice', collectiveId).find((p) => p.title === 'Fractions')!;
    assert.equal(page.lastUserId, 'alice');

    // 2. read, then update with the etag that was read: the read tainted the turn, so alice confirms.
    r = await room();
    s.llm.enqueue({ toolCalls: [{ id: 'c2', name: 'collectives_read_page', arguments: JSON.stringify({ collective_id: collectiveId, page_id: page.id }) }] });
    let readEtag = '';
    s.llm.responder = (req) => {
      readEtag = String((JSON.parse(lastToolOutput(req)) as { etag?: string }).etag ?? '');
      s.llm.responder = () => ({ text: ['I asked to update the page.'] });
      return {
        toolCalls: [
          {
            id: 'c3',
            name: 'collectives_update_page',
            arguments: JSON.stringify({ collective_id: collectiveId, page_id: page.id, content: 'Quarter is 1/4.', mode: 'append', etag: readEtag }),
          },
        ],
      };
    };
    await s.say(r, 'alice', '@assistant add "Quarter is 1/4." to the Fractions page');
    await s.idle();
    assert.equal(readEtag, s.h.nc.dav.files.node('alice', 'Collectives/Math Team/Fractions.md')!.etag);
    assert.equal(
      s.h.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions.md'),
      '# Fractions\n\nHalf is 1/2.\n',
      'nothing written before the confirmation',
    );
    const request = s.bot(r).findLast((m) => /Fractions/.test(m.message) && /\b\d{4,8}\b/.test(m.message));
    assert.ok(
      request,
      `the server asked alice: ${s
        .bot(r)
        .map((m) => m.message)
        .join(' | ')}`,
    );
    const code = codeIn(request.message);
    await s.say(r, 'bob', `@assistant yes ${code}`);
    await s.idle();
    assert.equal(s.h.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions.md'), '# Fractions\n\nHalf is 1/2.\n', 'bob cannot confirm for alice');
    await s.say(r, 'alice', `@assistant yes ${code}`);
    await s.idle();
    assert.equal(s.h.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions.md'), '# Fractions\n\nHalf is 1/2.\n\nQuarter is 1/4.');
    const put = s.h.nc.calls.filter((c) => c.method === 'PUT' && c.path.endsWith('/Fractions.md')).at(-1);
    assert.equal(put?.headers['if-match'], readEtag, 'the write was bound to the revision that was read');

    // 3. the same etag again is stale now: refused, nothing written.
    r = await room();
    s.llm.responder = () => ({ text: ['Done.'] });
    s.llm.enqueue(
      {
        toolCalls: [
          {
            id: 'c4',
            name: 'collectives_update_page',
            arguments: JSON.stringify({ collective_id: collectiveId, page_id: page.id, content: 'overwritten', etag: readEtag }),
          },
        ],
      },
      { text: ['The page changed; I will read it again.'] },
    );
    await s.say(r, 'alice', '@assistant replace the Fractions page');
    await s.idle();
    assert.match(lastToolOutput(s.llm.chatRequests().at(-1)!), /changed since you read it/);
    assert.equal(s.h.nc.dav.files.read('alice', 'Collectives/Math Team/Fractions.md'), '# Fractions\n\nHalf is 1/2.\n\nQuarter is 1/4.');

    // Every Collectives call ran as alice, each in a session of its own, with no stale cookie.
    const collectiveCalls = s.h.nc.calls.filter((c) => /collectives|csrftoken|\/files\/alice\/Collectives/.test(c.path));
    assert.ok(collectiveCalls.length > 0);
    for (const c of collectiveCalls) assert.equal(c.user, 'alice', `${c.method} ${c.path}`);
    assert.ok(s.h.nc.collectives.calls.every((c) => c.uid === 'alice'));
    assert.deepEqual(s.h.nc.webSessions.refused, []);
    assert.deepEqual(
      s.h.nc.headerViolations.filter((v) => /collectives|csrftoken|cookie/i.test(v)),
      [],
    );
  });
});
