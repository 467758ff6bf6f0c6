// The product's Talk webhook parser against every webhook captured from a real server, for both
// versions: Nextcloud 29 / Talk 19 (test/fixtures/nextcloud29/) and Nextcloud 33 / Talk 21
// (test/fixtures/nextcloud33/, through AppAPI and as Talk sends it to a bot of its own).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verifyBotSignature } from '../../lib/talk/bot-signature.ts';
import { parseWebhookMessage } from '../../lib/talk/message-parser.ts';
import { parseTalkWebhook, type TalkWebhookEvent } from '../../lib/talk/webhook-schema.ts';
import { fixtureNames, readFixture, receivedWebhooks, webhookBodies, type NextcloudVersion, type WebhookPath } from '../helpers/fixtures.ts';

// The secret the NC 33 recorder re-signs Talk's signatures with (test/fixtures/nextcloud33/README.md).
const CAPTURE_TEST_SECRET = 'nextcloud33-capture-test-secret-not-a-real-one-0123456789';

type Json = Record<string, any>;

const CAPTURES: Record<NextcloudVersion, string[]> = {
  29: [
    '40-webhook-1-raw-body.json',
    '40-webhook-2-raw-body.json',
    // 67-talk-webhook-system-events.json holds the requests only; their webhooks are in the other 67 files.
    ...fixtureNames(29, /^6[1-9]-talk-webhook.*\.json$/).filter((n) => n !== '67-talk-webhook-system-events.json'),
    '69-talk-webhooks-after-bot-replies.json',
    '68-talk-long-message.json',
  ],
  33: fixtureNames(33, /^talk-21-(webhook-.*|reactions|chat-and-bot-api)\.json$/),
};

// talk-21-reactions.json was recorded through AppAPI only (before the recorder had a direct bot).
const DIRECT: string[] = CAPTURES[33].filter((n) => n !== 'talk-21-reactions.json');

function parsed(body: unknown, where: string): TalkWebhookEvent {
  const r = parseTalkWebhook(body);
  if (!r.ok) assert.fail(`${where}: ${r.reason}: ${r.detail}`);
  return r.event;
}

/** The parameters Talk put in a Note's content. */
function parameters(body: Json): Json {
  return (JSON.parse(body['object']['content']) as Json)['parameters'] as Json;
}

function checkDelivery(body: Json, where: string): void {
  const event = parsed(body, where);
  const message = parseWebhookMessage(event);
  switch (event.type) {
    case 'Create':
    case 'Activity': {
      assert.ok(message, where);
      assert.equal(message.messageId, body['object']['id'], `${where}: the message id`);
      assert.equal(message.roomToken, body['target']['id'], `${where}: the room`);
      assert.equal(message.actor.rawId, body['actor']['id'], `${where}: the actor`);
      const files = Object.values(parameters(body)).filter((p: Json) => p['type'] === 'file') as Json[];
      if (event.type === 'Activity' && files.length > 0) {
        assert.equal(message.kind, 'file-share', `${where}: a file share is read as one`);
        const file = files[0] as Json;
        const attachment = message.attachments[0];
        assert.ok(attachment, `${where}: the attachment`);
        assert.equal(attachment.fileId, String(file['id']));
        // Talk 19 sends size and permissions as numbers, Talk 21 as strings: both are read as numbers.
        assert.equal(attachment.size, Number(file['size']));
        assert.equal(attachment.permissions, Number(file['permissions']));
      } else if (event.type === 'Activity') {
        assert.equal(message.kind, 'system', where);
        assert.equal(message.systemName, body['object']['name']);
      } else {
        assert.equal(message.kind, 'chat', where);
      }
      const parent = body['object']['inReplyTo'] as Json | undefined;
      assert.equal(message.replyToId, event.type === 'Create' && parent ? parent['object']['id'] : null, `${where}: the replied-to message`);
      break;
    }
    case 'Join':
    case 'Leave':
      assert.equal(message, null, `${where}: no message in a ${event.type}`);
      assert.equal(event.object.id, body['object']['id']);
      assert.match(event.actor.id, /^bots\/bot-[0-9a-f]{40}$/, `${where}: the bot itself is the actor`);
      break;
    case 'Like':
    case 'Undo':
      assert.equal(message, null, `${where}: a reaction is not a message`);
      break;
  }
}

for (const version of [29, 33] as const) {
  describe(`Talk webhooks captured from Nextcloud ${version}: the product's parser`, () => {
    for (const name of CAPTURES[version]) {
      const paths: WebhookPath[] = DIRECT.includes(name) ? ['exapp', 'direct'] : ['exapp'];
      for (const path of paths) {
        it(`${name} (${path === 'exapp' ? 'through AppAPI' : 'as Talk sends it'}): every delivery parses and reads as what it is`, () => {
          for (const [i, body] of webhookBodies(name, version, path).entries()) checkDelivery(body as Json, `${name}#${i}`);
        });
      }
    }
  });
}

describe('Talk 21 webhooks (Nextcloud 33 captures)', () => {
  const types = (name: string, path: WebhookPath = 'exapp') => webhookBodies(name, 33, path).map((b) => (b as Json)['type'] as string);

  it('a reply carries inReplyTo with the id bob replied to; the parser returns it', () => {
    const capture = readFixture('talk-21-webhook-reply.json', 33) as Json;
    const replyTo = JSON.parse(capture['bob-replies']['request']['body'])['replyTo'] as number;
    const [body] = webhookBodies('talk-21-webhook-reply.json', 33) as Json[];
    const message = parseWebhookMessage(parsed(body, 'reply'));
    assert.equal(message?.replyToId, String(replyTo));
  });

  it('a Create names the author’s participant type; an Activity does not', () => {
    const [create] = webhookBodies('talk-21-webhook-message.json', 33) as Json[];
    assert.match(String(create?.['actor']['talkParticipantType']), /^[1-6]$/);
    const [edit] = webhookBodies('talk-21-webhook-edit.json', 33) as Json[];
    assert.equal(edit?.['actor']['talkParticipantType'], undefined);
  });

  it('enabling the bot in a room sends Join, disabling it sends Leave (Talk 19 sent neither)', () => {
    assert.deepEqual(types('talk-21-webhook-bot-enabled-join.json'), ['Join']);
    assert.deepEqual(types('talk-21-webhook-bot-disabled-leave.json'), ['Leave', 'Join']);
    assert.deepEqual(webhookBodies('60-talk-rooms-setup.json', 29), []);
  });

  it('edits and deletions are Activities named message_edited / message_deleted', () => {
    assert.deepEqual(
      webhookBodies('talk-21-webhook-edit.json', 33).map((b) => (b as Json)['object']['name']),
      ['message_edited'],
    );
    assert.deepEqual(
      webhookBodies('talk-21-webhook-delete.json', 33).map((b) => (b as Json)['object']['name']),
      ['message_deleted'],
    );
  });

  it('reactions reach an ExApp bot only with the reaction feature, as Like / Undo', () => {
    assert.deepEqual(types('talk-21-webhook-reaction-without-feature.json'), ['Activity']);
    assert.deepEqual(types('talk-21-webhook-reaction.json'), ['Like', 'Activity', 'Undo']);
    assert.deepEqual(types('talk-21-webhook-reaction-without-feature.json', 'direct'), ['Like', 'Activity', 'Undo']);
  });

  it('Talk signs what it sends over random + the raw body (re-signed with the capture secret)', () => {
    let checked = 0;
    for (const name of DIRECT) {
      for (const w of receivedWebhooks(name, 33, 'direct')) {
        const random = w.headers['x-nextcloud-talk-random'] ?? '';
        const signature = w.headers['x-nextcloud-talk-signature'] ?? '';
        assert.equal(random.length, 64, `${name}: Talk's random is 64 characters`);
        assert.ok(verifyBotSignature(CAPTURE_TEST_SECRET, random, w.rawBody, signature), `${name}: signature`);
        assert.match(String(w.headers['x-nextcloud-talk-backend']), /^http:\/\/127\.0\.0\.1:\d+\/$/, 'overwrite.cli.url with a slash');
        checked++;
      }
    }
    assert.ok(checked > 10, 'the captures hold the direct deliveries');
  });

  it('AppAPI forwards without Talk’s headers, with AA-VERSION 33.0.0 and the empty user', () => {
    for (const w of receivedWebhooks('talk-21-webhook-message.json', 33)) {
      assert.equal(w.headers['x-nextcloud-talk-signature'], undefined);
      assert.equal(w.headers['aa-version'], '33.0.0');
      assert.equal(w.headers['authorization-app-api'], 'base64(":<REDACTED_APP_SECRET>")');
    }
  });

  it('the bot API signatures in the capture check out with the product’s verifier', () => {
    const capture = readFixture('talk-21-chat-and-bot-api.json', 33) as Json;
    for (const step of ['bot-message', 'bot-reaction'] as const) {
      const req = capture[step]['request'] as Json;
      const body = JSON.parse(req['body']) as Json;
      const signed = String(body['message'] ?? body['reaction']);
      assert.ok(
        verifyBotSignature(CAPTURE_TEST_SECRET, req['headers']['X-Nextcloud-Talk-Bot-Random'], signed, req['headers']['X-Nextcloud-Talk-Bot-Signature']),
        step,
      );
    }
  });
});
