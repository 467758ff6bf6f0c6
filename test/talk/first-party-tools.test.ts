import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { lastToolOutput } from '../fakes/openai/fake-openai.ts';
import { codeIn, startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

describe('first-party tools driven by Talk, as alice (issue 5 end to end)', () => {
  let s: TalkScenario;
  let bot: Bot;
  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite' });
    s.h.nc.dav.files.putFile('alice', 'Notes/todo.md', '# Todo\n\nBuy milk.\n');
    s.h.nc.dav.files.putFile('bob', 'Private/secret.md', 'bob only');
    s.h.nc.dav.calendars.createCalendar('alice', 'work', 'Work');
    bot = await s.createBot({ mention: 'assistant' });
    const names = Object.keys(s.h.application.registry.metadata()).filter((n) => /^(files|sharing|calendar)_/.test(n));
    assert.ok(names.includes('files_delete') && names.includes('calendar_create_event'));
    await s.h.application.toolAssignments.replace(
      bot.id,
      names.map((name) => ({ name, config: {} })),
    );
  });
  after(async () => s.close());

  /** A fresh room per step, so no earlier answer taints the turn (S6). */
  async function room(): Promise<string> {
    const token = s.groupRoom();
    await s.onboard(token, bot, 'A');
    return token;
  }

  it('lists and reads files, creates, copies, moves, shares, deletes with confirmation, restores, and plans an event', async () => {
    s.h.nc.reset();
    // 1. list and read
    let r = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c1', name: 'files_list', arguments: '{"path":"Notes"}' }] },
      { toolCalls: [{ id: 'c2', name: 'files_read', arguments: '{"path":"Notes/todo.md"}' }] },
      { text: ['Your todo list says: buy milk.'] },
    );
    await s.say(r, 'alice', '@assistant what is in my Notes folder and my todo file?');
    await s.idle();
    const reads = s.llm.chatRequests().slice(-2).map(lastToolOutput);
    assert.match(reads[0]!, /todo\.md/);
    assert.match(reads[1]!, /Buy milk/);
    assert.ok(
      s.bot(r).some((m) => /Using tool/.test(m.message)),
      'progress line',
    );
    assert.equal(s.bot(r).at(-1)!.message, 'Your todo list says: buy milk.');

    // 2. create
    r = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c3', name: 'files_create', arguments: '{"path":"Notes/plan.md","content":"# Plan\\n\\nShip it."}' }] },
      { text: ['Created Notes/plan.md.'] },
    );
    await s.say(r, 'alice', '@assistant create Notes/plan.md with a plan');
    await s.idle();
    assert.equal(s.h.nc.dav.files.read('alice', 'Notes/plan.md'), '# Plan\n\nShip it.');

    // 3. copy, 4. move
    r = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c4', name: 'files_copy', arguments: '{"source":"Notes/plan.md","destination":"Notes/plan-copy.md"}' }] },
      { text: ['Copied.'] },
    );
    await s.say(r, 'alice', '@assistant copy my plan');
    await s.idle();
    assert.ok(s.h.nc.dav.files.read('alice', 'Notes/plan-copy.md'));
    r = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c5', name: 'files_move', arguments: '{"source":"Notes/plan-copy.md","destination":"plan-archive.md"}' }] },
      { text: ['Moved.'] },
    );
    await s.say(r, 'alice', '@assistant move the copy to my home folder');
    await s.idle();
    assert.equal(s.h.nc.dav.files.read('alice', 'Notes/plan-copy.md'), null);
    assert.ok(s.h.nc.dav.files.read('alice', 'plan-archive.md'));

    // 5. share with bob (read-only, no confirmation needed)
    r = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c6', name: 'sharing_create_user_share', arguments: '{"path":"Notes/plan.md","user":"bob"}' }] },
      { text: ['Shared with Bob.'] },
    );
    await s.say(r, 'alice', '@assistant share my plan with bob');
    await s.idle();
    const shareCall = s.h.nc.calls.find((c) => c.method === 'POST' && c.path.endsWith('/files_sharing/api/v1/shares'));
    assert.ok(shareCall, 'a share was created');
    assert.equal(shareCall.user, 'alice');

    // 6. delete: the server asks for confirmation; bob's "yes" and a bare "yes" do nothing; alice's "yes <code>" runs it once
    r = await room();
    s.llm.enqueue(
      { toolCalls: [{ id: 'c7', name: 'files_delete', arguments: '{"path":"plan-archive.md"}' }] },
      { text: ['I asked you to confirm the deletion.'] },
    );
    await s.say(r, 'alice', '@assistant delete plan-archive.md');
    await s.idle();
    assert.ok(s.h.nc.dav.files.read('alice', 'plan-archive.md'), 'nothing deleted before the confirmation');
    const request = s.bot(r).find((m) => /\b\d{4,8}\b/.test(m.message) && /plan-archive\.md/.test(m.message));
    assert.ok(request, 'the server posted a confirmation request naming the file');
    const code = codeIn(request.message);
    await s.say(r, 'bob', `@assistant yes ${code}`);
    await s.say(r, 'alice', '@assistant yes');
    await s.idle();
    assert.ok(s.h.nc.dav.files.read('alice', 'plan-archive.md'), 'bob and a bare yes confirm nothing');
    await s.say(r, 'alice', `@assistant yes ${code}`);
    await s.idle();
    assert.equal(
      s.h.nc.dav.files.read('alice', 'plan-archive.md'),
      null,
      `deleted after alice confirmed: ${s
        .bot(r)
        .map((m) => m.message)
        .join(' | ')} ${s.h.logLines
        .filter((l) => /warn|error/.test(l))
        .slice(-5)
        .join('')}`,
    );
    assert.equal(s.h.nc.dav.files.trashOf('alice').length, 1, 'moved to the trash');
    await s.say(r, 'alice', `@assistant yes ${code}`);
    await s.idle();
    assert.equal(s.h.nc.dav.files.trashOf('alice').length, 1, 'a second yes does nothing');

    // 7. restore from the trash (after reading the trash the turn is tainted: confirmed again)
    r = await room();
    s.llm.enqueue({ toolCalls: [{ id: 'c8', name: 'files_restore', arguments: '{"action":"list_trash"}' }] });
    s.llm.responder = (req) => {
      const id = /"id"\s*:\s*"([^"]+)"/.exec(lastToolOutput(req))?.[1] ?? 'none';
      s.llm.responder = () => ({ text: ['Restore requested.'] });
      return { toolCalls: [{ id: 'c9', name: 'files_restore', arguments: JSON.stringify({ action: 'restore_from_trash', item: id }) }] };
    };
    await s.say(r, 'alice', '@assistant restore plan-archive.md from the trash');
    await s.idle();
    const restoreRequest = s.bot(r).findLast((m) => /\b\d{4,8}\b/.test(m.message));
    if (s.h.nc.dav.files.read('alice', 'plan-archive.md') === null) {
      assert.ok(restoreRequest, 'restoring after untrusted content needs a confirmation');
      await s.say(r, 'alice', `@assistant yes ${codeIn(restoreRequest.message)}`);
      await s.idle();
    }
    assert.ok(s.h.nc.dav.files.read('alice', 'plan-archive.md'), 'restored');

    // 8. a calendar event with a time zone
    r = await room();
    s.llm.responder = () => ({ text: ['Done.'] });
    s.llm.enqueue(
      {
        toolCalls: [
          {
            id: 'c10',
            name: 'calendar_create_event',
            arguments: JSON.stringify({
              calendar: 'work',
              title: 'Review plan',
              start: '2027-01-12T10:00:00',
              end: '2027-01-12T11:00:00',
              timezone: 'Europe/Berlin',
            }),
          },
        ],
      },
      { text: ['Planned.'] },
    );
    await s.say(r, 'alice', '@assistant put a plan review on Jan 12 at 10 Berlin time in my work calendar');
    await s.idle();
    const objects = [...(s.h.nc.dav.calendars.calendar('alice', 'work')?.objects.values() ?? [])];
    assert.equal(
      objects.length,
      1,
      s
        .bot(r)
        .map((m) => m.message)
        .join(' | '),
    );
    assert.match(objects[0]!.data, /SUMMARY:Review plan/);
    assert.match(objects[0]!.data, /TZID[=:]Europe\/Berlin/);

    // Every call to Nextcloud on alice's behalf ran as alice; bob's files were never touched.
    const asUsers = s.h.nc.calls.filter((c) => c.user && /\/remote\.php\/dav\/|files_sharing/.test(c.path));
    assert.ok(asUsers.length > 10);
    assert.deepEqual([...new Set(asUsers.map((c) => c.user))], ['alice']);
    assert.ok(!s.h.nc.calls.some((c) => c.path.includes('/files/bob')));
    assert.deepEqual(s.h.nc.headerViolations, []);
  });
});
