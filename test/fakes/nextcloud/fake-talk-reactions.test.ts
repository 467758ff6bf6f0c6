// The fake Talk's reactions against the Talk 21 capture (test/fixtures/nextcloud33/talk-21-reactions.json):
// the same steps replayed on the fake give the same statuses and shapes — the bot's post found by
// referenceId in a user's chat, reactions by alice and bob listed per emoji with who and when, the
// bot's own reaction (201, then 200), and, with the `reaction` feature, Like/Undo webhooks whose
// actor is the reacted message's AUTHOR (the finding the product relies on).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { NextcloudClient } from '../../../lib/nextcloud/client.ts';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import { findBotMessageByReferenceId, postBotReaction, readReactions } from '../../../lib/nextcloud/talk-reactions.ts';
import { signBotMessage } from '../../../lib/talk/bot-signature.ts';
import { FakeNextcloud } from './server.ts';

const SECRET = 'fake-talk-reactions-secret-0123456789';
type Step = { request: { body?: Record<string, unknown> }; response: { status: number; body: { ocs: { data: unknown } } } };
const CAPTURE = JSON.parse(readFileSync(new URL('../../fixtures/nextcloud33/talk-21-reactions.json', import.meta.url), 'utf8')) as Record<string, Step> & {
  '17-webhooks-after-reaction-feature': { webhooksReceivedByExApp: Array<{ rawBody: string }> };
};

function step(name: string): Step {
  const x = CAPTURE[name];
  assert.ok(x && 'request' in x, `capture step ${name}`);
  return x;
}

function shape(v: unknown): unknown {
  if (Array.isArray(v)) return v.length === 0 ? [] : [shape(v[0])];
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .map(([k, x]) => [k, shape(x)])
        .sort(([a], [b]) => String(a).localeCompare(String(b))),
    );
  return typeof v;
}

describe('the fake Talk reactions against Talk 21', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  const token = 'nn5awd8i';
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'capbot', appSecret: SECRET });
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'capbot', appVersion: '1.0.0', appSecret: SECRET });
    nc.talk.installBot({ route: 'talk_bot', name: 'Confirm capture bot', description: 'capture', secret: 's'.repeat(64), baseUrl: nc.url });
    nc.talk.createRoom({
      token,
      name: 'confirmcap',
      type: 2,
      participants: [
        { actorId: 'alice', participantType: 1 },
        { actorId: 'bob', participantType: 3 },
      ],
    });
    nc.talk.enableBotInRoom(token, 'talk_bot');
  });
  after(async () => nc.close());

  const signed = (text: string) => {
    const { random, signature } = signBotMessage('s'.repeat(64), text);
    return { 'X-Nextcloud-Talk-Bot-Random': random, 'X-Nextcloud-Talk-Bot-Signature': signature };
  };

  it('replays steps 01–07 and 10–17 with the captured statuses and shapes', async () => {
    const bot = nc.talk.botByRoute('talk_bot')!;
    const post = step('01-bot-posts-confirmation-request').request.body as { message: string; referenceId: string };
    const sent = await client.botOcs('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/{token}/message', {
      params: { token },
      body: post,
      headers: signed(post.message),
    });
    assert.equal(sent.status, step('01-bot-posts-confirmation-request').response.status);

    const alice = client.as(issueFromConfirmedTalkAuthor('alice'));
    const found = await findBotMessageByReferenceId(alice, token, post.referenceId);
    assert.ok(found, 'found by referenceId as alice (step 02)');
    const chat = await alice.ocs<Array<Record<string, unknown>>>('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}', {
      params: { token },
      query: { lookIntoFuture: 0, limit: 5, setReadMarker: 0 },
    });
    const captured = (step('02-alice-reads-chat-finds-referenceId').response.body.ocs.data as Array<Record<string, unknown>>)[0];
    assert.deepEqual(shape(chat[0]), shape(captured), 'the bot message as alice reads it');
    assert.equal(chat[0]?.['actorId'], `bot-${bot.urlHash}`);

    const id = Number(found);
    assert.equal((await nc.talk.userReaction(token, 'alice', id, '👍', 'POST')).status, step('03-alice-reacts-thumbs-up').response.status);
    const bobs = await nc.talk.userReaction(token, 'bob', id, '👍', 'POST');
    assert.equal(bobs.status, step('04-bob-reacts-thumbs-up').response.status);
    assert.deepEqual(shape(bobs.data), shape(step('04-bob-reacts-thumbs-up').response.body.ocs.data));
    const listed = await alice.ocs<Record<string, Array<{ actorId: string }>>>('GET', '/ocs/v2.php/apps/spreed/api/v1/reaction/{token}/{messageId}', {
      params: { token, messageId: found },
    });
    const capturedList = step('05-alice-reads-reactions').response.body.ocs.data as Record<string, Array<{ actorId: string }>>;
    assert.deepEqual(shape(listed), shape(capturedList));
    assert.deepEqual(
      listed['👍']?.map((a) => a.actorId),
      capturedList['👍']?.map((a) => a.actorId),
      'newest first, as Talk',
    );
    assert.deepEqual([...(await readReactions(alice, token, found)).keys()], ['👍']);

    const first = await postBotReaction(client, token, found, '✅', signed('✅'));
    assert.equal(first.status, step('06-bot-reacts-check-mark').response.status);
    const again = await postBotReaction(client, token, found, '✅', signed('✅'));
    assert.equal(again.status, step('16-bot-reacts-check-mark-again').response.status);

    // 10–17: with the reaction feature, Like/Undo reach the bot; the actor is the message's author.
    nc.talk.setBotFeatures('talk_bot', ['webhook', 'response', 'reaction']);
    const bodies: string[] = [];
    nc.talk.webhookHandler = (d) => void bodies.push(d.body);
    await nc.talk.userReaction(token, 'bob', id, '👎', 'POST');
    await nc.talk.userReaction(token, 'alice', id, '👍', 'DELETE');
    nc.talk.webhookHandler = null;
    const received = CAPTURE['17-webhooks-after-reaction-feature'].webhooksReceivedByExApp.map((w) => JSON.parse(w.rawBody) as Record<string, unknown>);
    const fake = bodies.map((b) => JSON.parse(b) as Record<string, unknown>);
    assert.deepEqual(
      fake.map((b) => b['type']),
      ['Like', 'Activity', 'Undo'],
      'bob 👎, then alice removes 👍 (reaction_revoked, then Undo)',
    );
    assert.deepEqual(shape(fake[0]), shape(received[1]), 'Like as captured');
    assert.deepEqual(shape(fake[2]), shape(received[3]), 'Undo as captured');
    assert.equal((fake[0]?.['actor'] as { id: string }).id, `bots/bot-${bot.urlHash}`, "bob's 👎 names the bot, the message's author");
    assert.equal((received[1]?.['actor'] as { id: string }).id.startsWith('bots/'), true, 'as Talk 21 did');
    assert.equal((fake[1]?.['actor'] as { id: string }).id, 'users/alice', 'reaction_revoked names who removed it');
  });
});
