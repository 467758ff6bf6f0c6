import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../lib/log/logger.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { BotSender } from '../../lib/replies/bot-sender.ts';
import { ReplyLog } from '../../lib/replies/reply-log.ts';
import { ReplySanitizer } from '../../lib/replies/reply-sanitizer.ts';
import { ReplyStream, speakerLabel } from '../../lib/replies/reply-stream.ts';
import { TalkIdentities } from '../../lib/talk/talk-identities.ts';
import { Vault } from '../../lib/vault/vault.ts';
import { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { TEST_SECRET } from '../helpers/harness.ts';

describe('reply stream', () => {
  let nc: FakeNextcloud;
  let tdb: TestDatabase;
  let sender: BotSender;
  let log: ReplyLog;
  let token: string;
  let clock = 0;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: TEST_SECRET, appVersion: '0.1.0' });
    tdb = await createTestDatabase('sqlite');
    const client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '0.1.0', appSecret: TEST_SECRET });
    const identities = new TalkIdentities({ db: tdb.db, vault: new Vault(tdb.db, new Uint8Array(32).fill(3)), nextcloud: client });
    await identities.register('talk_bot', 'Talk AI', 'test', null);
    const logger = createLogger({ level: 'silent' });
    sender = new BotSender({ nextcloud: client, identities, logger, sleep: async () => undefined });
    log = new ReplyLog(tdb.db);
    const room = nc.createRoom({ name: 'r', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] });
    token = room.token;
    nc.enableBotInRoom(token, 'talk_bot');
  });
  after(async () => {
    await nc.close();
    await tdb.drop();
  });

  const stream = (inboxId: number, inThread: boolean, replyTo: number, speaker?: string) =>
    new ReplyStream({
      target: { inboxId, route: 'talk_bot', roomToken: token, replyTo, inThread, ...(speaker !== undefined ? { speaker } : {}) },
      sender,
      log,
      sanitizer: new ReplySanitizer({ nextcloudOrigin: nc.url, allowedHosts: [], userText: '' }),
      salt: 'salt',
      now: () => clock,
    });

  it('keeps replyTo on every chunk inside a thread', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const s = stream(1, true, m.id);
    await s.push('One.\n\nTwo.\n\n');
    await s.push('Three.');
    await s.finish();
    const sent = nc.botMessages.filter((b) => b.token === token).slice(-3);
    assert.deepEqual(
      sent.map((b) => b.replyTo),
      [m.id, m.id, m.id],
    );
    // Each chunk replies to the question, but only the first notifies its author.
    assert.deepEqual(
      sent.map((b) => b.silent),
      [false, true, true],
    );
  });

  it('notifies once per answer: the first message, placeholder or chunk; later ones are silent', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const before = nc.botMessages.length;
    const s = stream(105, false, m.id);
    await s.push('<think>pondering</think>First part.\n\n');
    await s.push('Second part.');
    await s.finish();
    const sent = nc.botMessages.slice(before);
    assert.equal(sent.length, 3, JSON.stringify(sent.map((b) => b.message)));
    assert.deepEqual(
      sent.map((b) => b.silent),
      [false, true, true],
    );
    // Resumed after a restart with chunks already posted: nothing more rings.
    const resumed = new ReplyStream({
      target: { inboxId: 105, route: 'talk_bot', roomToken: token, replyTo: m.id, inThread: false },
      sender,
      log,
      sanitizer: new ReplySanitizer({ nextcloudOrigin: nc.url, allowedHosts: [], userText: '' }),
      salt: 'salt',
      now: () => clock,
      previous: await log.list(105),
    });
    const at = nc.botMessages.length;
    await resumed.post('Sorry, the rest could not be written.');
    assert.equal(nc.botMessages[at]!.silent, true);
  });

  it('does not retry a throttled (429) bot message: Talk throttles after refused signatures', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const before = nc.botMessages.length;
    const sends = () => nc.calls.filter((c) => c.method === 'POST' && /\/bot\/[a-z0-9]+\/message$/.test(c.path)).length;
    const sent = sends();
    nc.failNext(
      { method: 'POST', path: /\/bot\/[a-z0-9]+\/message$/ },
      { status: 429, body: '{"ocs":{"meta":{"status":"failure","statuscode":429,"message":""},"data":[]}}' },
      5,
    );
    try {
      await assert.rejects(stream(106, false, m.id).post('Hello.'), (err: Error) => err.name === 'BotSendError');
      assert.equal(sends() - sent, 1, 'one attempt, no retries');
      assert.equal(nc.botMessages.length, before, 'nothing was posted');
    } finally {
      nc.clearInjections();
    }
  });

  it('flushes after 3 s with more than 100 characters at a sentence boundary', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const before = nc.botMessages.length;
    const s = stream(2, false, m.id);
    clock = 0;
    await s.push('This is the first sentence of a slow answer, long enough to pass the threshold. And a second sentence starts');
    assert.equal(nc.botMessages.length, before, 'nothing before 3 s');
    clock = 3100;
    await s.tick();
    assert.equal(nc.botMessages.at(-1)!.message, 'This is the first sentence of a slow answer, long enough to pass the threshold.');
    assert.equal(nc.botMessages.at(-1)!.replyTo, m.id);
    await s.push(' here.');
    await s.finish();
    assert.equal(nc.botMessages.at(-1)!.message, 'And a second sentence starts here.');
    assert.equal(nc.botMessages.at(-1)!.replyTo, null);
    const rows = await log.list(2);
    assert.ok(
      rows.every((r) => r.posted),
      'every chunk is marked posted',
    );
  });

  it('neutralises links and mentions before each flush (S8)', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const s = stream(3, false, m.id);
    await s.push(`See https://evil.example/steal?d=x and ${nc.url}/f/12 and ping @all.\n\n`);
    await s.finish();
    const text = nc.botMessages.at(-1)!.message;
    assert.doesNotMatch(text, /https:\/\/evil\.example/);
    assert.match(text, new RegExp(`${nc.url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/f/12`));
    assert.doesNotMatch(text, /(^|\s)@all/);
  });

  it("names the bot in the first message only; the reply log and the streamed text keep the bot's own words", async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const before = nc.botMessages.length;
    const s = stream(4, false, m.id, 'Helper');
    await s.push('First paragraph.\n\nSecond paragraph.\n\n');
    await s.post('A progress line.');
    const text = await s.finish();
    const sent = nc.botMessages.slice(before).map((b) => b.message);
    assert.deepEqual(sent, ['**Helper:** First paragraph.', 'Second paragraph.', 'A progress line.']);
    assert.deepEqual(
      (await log.list(4)).map((c) => c.text),
      ['First paragraph.', 'Second paragraph.', 'A progress line.'],
    );
    assert.equal(text, 'First paragraph.\n\nSecond paragraph.');
  });

  it('the name also leads a thinking placeholder, and a name cannot smuggle Markdown, lines, links or mentions (S8)', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const before = nc.botMessages.length;
    const s = stream(5, false, m.id, 'Evil* [x](https://evil.example)\n@all');
    await s.push('<think>hmm</think>Answer.');
    await s.finish();
    const sent = nc.botMessages.slice(before).map((b) => b.message);
    assert.equal(sent.length, 2);
    // The sanitiser drops the link (its text stays) and defuses the mention, as in any reply.
    assert.ok(sent[0]!.startsWith('**Evil x evil.example ＠all:** '), sent[0]);
    assert.doesNotMatch(sent[0]!, /https?:|\n|(^|\s)@all|\]\(/);
    assert.equal(sent[1], 'Answer.', 'only the first message is named');
    assert.equal(speakerLabel(' \n*_ '), '', 'a name of nothing but markup gives no label');
    assert.equal(speakerLabel('Helper'), '**Helper:**');
  });

  it('a resumed reply whose first message was already posted is not named again', async () => {
    const m = nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, 'question');
    const first = stream(6, false, m.id, 'Helper');
    await first.push('Before the restart.\n\n');
    const before = nc.botMessages.length;
    const resumed = new ReplyStream({
      target: { inboxId: 6, route: 'talk_bot', roomToken: token, replyTo: m.id, inThread: false, speaker: 'Helper' },
      sender,
      log,
      sanitizer: new ReplySanitizer({ nextcloudOrigin: nc.url, allowedHosts: [], userText: '' }),
      salt: 'salt',
      now: () => clock,
      previous: await log.list(6),
    });
    await resumed.push('After it.');
    await resumed.finish();
    assert.deepEqual(
      nc.botMessages.slice(before).map((b) => b.message),
      ['After it.'],
    );
  });
});
