// `make chat` (issue 23, row 51) against the real Nextcloud 33: a bot alice made through the AppAPI proxy
// answers in the terminal, reads her real file through WebDAV as her, and deletes one after "yes <code>";
// with ROOM=<token> it uses a real room she is in and posts nothing there. Only the model is scripted.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lastToolOutput } from '../fakes/openai/fake-openai.ts';
import { ChatSession, printed } from '../helpers/chat-session.ts';
import { codeIn } from '../helpers/talk-scenario.ts';
import { waitFor } from '../helpers/harness.ts';
import { startStack, unique, type Stack } from './stack.ts';

describe('make chat on the real Nextcloud 33', () => {
  let s: Stack;
  let mention: string;
  let folder: string;
  before(async () => {
    s = await startStack();
    mention = unique('playground').replace(/-/g, '_');
    await s.createBot('alice', mention, ['files_read', 'files_delete']);
    folder = unique('Notes');
    await s.nc.putFile('alice', `${folder}/todo.md`, '# Todo\n\nBuy milk.\n');
    await s.nc.putFile('alice', `${folder}/old.md`, 'old notes');
  });
  after(async () => s?.stop());

  it('answers as alice\'s bot, reads her file as her and deletes one after "yes <code>"', async () => {
    const chat = new ChatSession(['--bot', mention, '--user', 'alice'], { ...s.env, LOG_LEVEL: 'warn' });
    await chat.say('hello', /\bA\b[\s\S]*\bB\b/, 120_000);
    s.llm.enqueue({ text: ['Hello alice, from the terminal.'] });
    const hello = await chat.say('A', /from the terminal/, 120_000);
    assert.deepEqual(printed(hello).at(-1), 'Hello alice, from the terminal.');

    s.llm.enqueue(
      { toolCalls: [{ id: 'r1', name: 'files_read', arguments: JSON.stringify({ path: `${folder}/todo.md` }) }] },
      { text: ['Your todo list says: buy milk.'] },
    );
    await chat.say('what is in my todo file?', /buy milk/, 120_000);
    assert.match(lastToolOutput(s.llm.chatRequests().at(-1)!), /Buy milk/, 'the real file, read through WebDAV as alice');

    s.llm.enqueue(
      { toolCalls: [{ id: 'd1', name: 'files_delete', arguments: JSON.stringify({ path: `${folder}/old.md` }) }] },
      { text: ['I asked you to confirm the deletion.'] },
    );
    const asked = await chat.say('delete old.md', /confirm the deletion/, 120_000);
    const request = printed(asked).find((m) => /old\.md/.test(m) && /\b\d{4,8}\b/.test(m));
    assert.ok(request, `the confirmation request is printed: ${asked}`);
    assert.equal(await s.nc.readFile('alice', `${folder}/old.md`), 'old notes');
    await chat.say(`yes ${codeIn(request)}`, /^Talk AI: /m, 120_000);
    await waitFor(async () => (await s.nc.readFile('alice', `${folder}/old.md`)) === null, 'old.md deleted on the real server', 60_000);
    assert.equal(await chat.end(), 0, chat.stderr);
  });

  it('with ROOM=<token> uses a real room alice is in and posts nothing there', async () => {
    const token = await s.room('alice', ['bob']);
    await s.onboard('alice', token, mention);
    const before = (await s.nc.botMessages('alice', token)).length;
    const chat = new ChatSession(['--bot', mention, '--user', 'alice', '--room', token], { ...s.env, LOG_LEVEL: 'warn' });
    s.llm.enqueue({ text: ['Answered in the terminal only.'] });
    await chat.say('are you there?', /terminal only/, 120_000);
    assert.equal(await chat.end(), 0, chat.stderr);
    assert.equal((await s.nc.botMessages('alice', token)).length, before, 'nothing posted to the Talk room');
    const outsider = new ChatSession(['--bot', mention, '--user', 'bob', '--room', await s.nc.createRoom('alice', unique('alice-only'))], {
      ...s.env,
      LOG_LEVEL: 'warn',
    });
    outsider.child.stdin.end();
    assert.equal(await outsider.exited, 65, "bob is not in alice's room");
  });
});
