// `make chat` (issue 23, row 51): the terminal playground as a child process against the fake
// Nextcloud and the scripted model, beside a running app on the same database (as `make run` is).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { lastToolOutput } from '../fakes/openai/fake-openai.ts';
import { ChatSession, printed } from '../helpers/chat-session.ts';
import { APP_VERSION, TEST_SECRET } from '../helpers/harness.ts';
import { codeIn, startTalkScenario, waitFor, type TalkScenario } from '../helpers/talk-scenario.ts';

describe('make chat: a terminal conversation through the same pipeline', () => {
  let s: TalkScenario;
  let bot: Bot;
  let env: Record<string, string>;
  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite' });
    s.h.nc.dav.files.putFile('alice', 'Notes/todo.md', '# Todo\n\nBuy milk.\n');
    s.h.nc.dav.files.putFile('alice', 'old.md', 'old notes');
    bot = await s.createBot({ mention: 'assistant' });
    await s.h.application.toolAssignments.replace(
      bot.id,
      ['files_read', 'files_delete'].map((name) => ({ name, config: {} })),
    );
    env = { APP_ID: 'educai', APP_SECRET: TEST_SECRET, APP_VERSION, NEXTCLOUD_URL: s.h.nc.url, APP_PERSISTENT_STORAGE: s.h.tdb.dataDir, LOG_LEVEL: 'warn' };
  });
  after(async () => s.close());

  it('onboards, streams the chunks Talk would get, reads a file as the user, and confirms a delete with "yes <code>"', async () => {
    const answer = [
      'The first paragraph of the answer is long enough to be cut on its own.\n\n',
      'The second paragraph follows it, also long enough to be a message.',
    ];
    // The same scripted answer in a Talk room, for what Talk would show.
    const token = s.groupRoom();
    await s.onboard(token, bot, 'A');
    const before = s.bot(token).length;
    s.llm.enqueue({ text: answer });
    await s.say(token, 'alice', '@assistant tell me two things');
    await s.idle();
    const inTalk = s
      .bot(token)
      .slice(before)
      .map((m) => m.message);
    assert.equal(inTalk.length, 2, inTalk.join(' | '));

    const chat = new ChatSession(['--bot', 'assistant', '--user', 'alice'], env);
    const postedBefore = s.h.nc.botMessages.length;
    const question = await chat.say('hello', /\bA\b[\s\S]*\bB\b/);
    assert.match(question, /^Talk AI: /m, 'the onboarding question, printed as Talk shows it');
    s.llm.enqueue({ text: ['Hello alice.'] });
    const greeting = await chat.say('A', /Hello alice\./);
    assert.match(greeting, /^Talk AI: Hello alice\.$/m, 'onboarding done, the deferred first message answered');

    s.llm.enqueue({ text: answer });
    const streamed = await chat.say('tell me two things', /second paragraph[^\n]*\n/);
    assert.deepEqual(printed(streamed), inTalk, 'the same chunks as in Talk, one printed message each');

    s.llm.enqueue({ toolCalls: [{ id: 'r1', name: 'files_read', arguments: '{"path":"Notes/todo.md"}' }] }, { text: ['Your todo list says: buy milk.'] });
    const read = await chat.say('what is in Notes/todo.md?', /buy milk/);
    assert.match(read, /Using tool/, 'the progress line Talk would show');
    assert.match(lastToolOutput(s.llm.chatRequests().at(-1)!), /Buy milk/);
    const davAsAlice = s.h.nc.calls.filter((c) => c.path.includes('/remote.php/dav/files/alice/Notes/todo.md'));
    assert.ok(davAsAlice.length > 0 && davAsAlice.every((c) => c.user === 'alice'), 'the file was read through the Nextcloud client as alice');

    s.llm.enqueue({ toolCalls: [{ id: 'd1', name: 'files_delete', arguments: '{"path":"old.md"}' }] }, { text: ['I asked you to confirm the deletion.'] });
    const asked = await chat.say('delete old.md', /confirm the deletion/);
    const request = printed(asked).find((m) => /old\.md/.test(m) && /\b\d{4,8}\b/.test(m));
    assert.ok(request, `the server's confirmation request is printed: ${asked}`);
    assert.equal(s.h.nc.dav.files.read('alice', 'old.md'), 'old notes', 'nothing deleted before the confirmation');
    await chat.say(`yes ${codeIn(request)}`, /^Talk AI: /m);
    await waitFor(() => s.h.nc.dav.files.read('alice', 'old.md') === null, 'old.md deleted after "yes <code>"');
    assert.equal(s.h.nc.dav.files.trashOf('alice').length, 1);

    assert.equal(await chat.end(), 0, chat.stderr);
    assert.equal(s.h.nc.botMessages.length, postedBefore, 'nothing was posted to Talk');
    const left = await s.h.application.database.db.selectFrom('room_states').select('room_token').where('room_token', 'like', 'terminal%').execute();
    assert.deepEqual(left, [], "the session's room leaves no onboarding state behind");
    const memory = await s.h.application.database.db
      .selectFrom('conversation_messages')
      .select('room_token')
      .where('room_token', 'like', 'terminal%')
      .execute();
    assert.deepEqual(memory, [], 'nor memory');
  });

  it('REVIEW=1 runs writes as dry runs (S10)', async () => {
    s.h.nc.dav.files.putFile('alice', 'keep.md', 'keep me');
    const chat = new ChatSession(['--bot', 'assistant', '--user', 'alice', '--review'], env);
    await chat.say('hi', /\bA\b[\s\S]*\bB\b/);
    s.llm.enqueue({ text: ['Hi.'] });
    await chat.say('A', /Hi\./);
    const deletes = s.h.nc.calls.filter((c) => c.method === 'DELETE').length;
    s.llm.enqueue({ toolCalls: [{ id: 'd2', name: 'files_delete', arguments: '{"path":"keep.md"}' }] }, { text: ['That would have deleted keep.md.'] });
    const out = await chat.say('delete keep.md', /would have deleted/);
    assert.match(lastToolOutput(s.llm.chatRequests().at(-1)!), /DRY RUN/);
    assert.doesNotMatch(out, /\b\d{4,8}\b.*keep\.md|keep\.md.*\b\d{4,8}\b/, 'no confirmation is asked for a dry run');
    assert.equal(s.h.nc.dav.files.read('alice', 'keep.md'), 'keep me');
    assert.equal(s.h.nc.calls.filter((c) => c.method === 'DELETE').length, deletes, 'no DELETE reached Nextcloud');
    assert.equal(await chat.end(), 0, chat.stderr);
  });

  it('refuses an unknown bot and a room the user is not in, with one line each', async () => {
    const unknown = new ChatSession(['--bot', 'nobody', '--user', 'alice'], env);
    unknown.child.stdin.end();
    assert.equal(await unknown.exited, 65);
    assert.match(unknown.stderr, /no active bot @nobody \(active: .*@assistant/);
    const room = s.h.nc.createRoom({ name: 'Bob only', type: 2, participants: [{ actorId: 'bob', participantType: 1 }] });
    const outsider = new ChatSession(['--bot', 'assistant', '--user', 'alice', '--room', room.token], env);
    outsider.child.stdin.end();
    assert.equal(await outsider.exited, 65);
    assert.match(outsider.stderr, /alice is not in the Talk room/);
    const noUser = new ChatSession(['--bot', 'assistant'], env);
    assert.equal(await noUser.exited, 64);
    assert.match(noUser.stderr, /usage: make chat/);
  });
});
