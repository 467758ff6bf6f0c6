// The fake Nextcloud answers like the server version a test picks (`version: 29 | 33`): each case
// replays one captured situation against a fake of that version and compares with the capture of the
// same version (test/fixtures/nextcloud29/, test/fixtures/nextcloud33/), byte for byte where the
// capture allows it, and the fake of the other version must not answer that way.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, describe, it } from 'node:test';
import { readNc29WebhookRawBody, readNc33Exchange, readNc33Json } from './fixtures.ts';
import { FakeNextcloud, type NextcloudVersion } from './server.ts';

const APP_ID = 'educai';
const SECRET = 'fake-versions-secret-0123456789abcdef';
// The captured room (its token changes with every recording), so bodies compare byte for byte.
const CAPTURED_ROOM = (
  JSON.parse(readNc33Exchange('talk-21-rooms.json', 'create-group-room').response.body) as { ocs: { data: { token: string; name: string } } }
).ocs.data;
const ROOM = CAPTURED_ROOM.token;
const ROOM_NAME = CAPTURED_ROOM.name;

type Json = Record<string, any>;

let nc: FakeNextcloud;
afterEach(async () => nc?.close());

function headers(user: string): Record<string, string> {
  return {
    'EX-APP-ID': APP_ID,
    'EX-APP-VERSION': '1.0.0',
    'AUTHORIZATION-APP-API': Buffer.from(`${user}:${SECRET}`).toString('base64'),
    'OCS-APIRequest': 'true',
    Accept: 'application/json',
    'Content-Type': 'application/json',
  };
}

async function call(user: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const r = await fetch(`${nc.url}${path}`, { method, headers: headers(user), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  return { status: r.status, json: text ? (JSON.parse(text) as Json) : {} };
}

/** A fake of `version` with the capture room (alice owner, bob user) and the ExApp's Talk bot "Talk AI". */
async function start(version: NextcloudVersion): Promise<number> {
  nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: SECRET, version });
  const reg = await call('', 'POST', '/ocs/v1.php/apps/app_api/api/v1/talk_bot?format=json', {
    name: 'Talk AI',
    route: '/talk_bot',
    description: 'Talk AI assistant',
  });
  assert.equal(reg.status, 200);
  nc.createRoom({
    token: ROOM,
    name: ROOM_NAME,
    type: 2,
    participants: [
      { actorId: 'alice', participantType: 1 },
      { actorId: 'bob', participantType: 3 },
    ],
  });
  const bots = await call('alice', 'GET', `/ocs/v2.php/apps/spreed/api/v1/bot/${ROOM}`);
  return (bots.json['ocs']['data'] as Array<{ id: number; name: string }>).find((b) => b.name === 'Talk AI')?.id ?? 0;
}

/** The i-th raw webhook body the ExApp received in an NC 33 capture. */
function nc33Webhook(name: string, i = 0): string {
  const raw = readNc33Json<{ webhooksReceivedByExApp: Array<{ rawBody: string }> }>(name).webhooksReceivedByExApp[i]?.rawBody;
  if (raw === undefined) throw new Error(`no webhook ${i} in ${name}`);
  return raw;
}

function botHashOf(fake: FakeNextcloud): string {
  return createHash('sha1').update(`${fake.url}/ocs/v2.php/apps/app_api/api/v1/talk_proxy/${APP_ID}/talk_bot`).digest('hex');
}

const CAPTURED_BOT_HASH = /bot-([0-9a-f]{40})/.exec(nc33Webhook('talk-21-webhook-bot-enabled-join.json'))?.[1] ?? '';

describe('the fake Talk per version: enabling and disabling the bot', () => {
  for (const version of [29, 33] as const) {
    it(`Nextcloud ${version}: ${version === 33 ? 'Join on enable and Leave on disable, as captured' : 'no webhook on enable or disable (capture 60)'}`, async () => {
      const botId = await start(version);
      const enabled = await call('alice', 'POST', `/ocs/v2.php/apps/spreed/api/v1/bot/${ROOM}/${botId}`);
      assert.equal(enabled.status, 201);
      const again = await call('alice', 'POST', `/ocs/v2.php/apps/spreed/api/v1/bot/${ROOM}/${botId}`);
      assert.equal(again.status, 200);
      const disabled = await call('alice', 'DELETE', `/ocs/v2.php/apps/spreed/api/v1/bot/${ROOM}/${botId}`);
      assert.equal(disabled.status, 200);
      const bodies = nc.webhooks.map((w) => w.body.replace(botHashOf(nc), CAPTURED_BOT_HASH));
      if (version === 29) {
        assert.deepEqual(bodies, []);
      } else {
        assert.deepEqual(bodies, [nc33Webhook('talk-21-webhook-bot-enabled-join.json'), nc33Webhook('talk-21-webhook-bot-disabled-leave.json', 0)]);
      }
    });
  }
});

describe('the fake Talk 21 webhooks against the Nextcloud 33 captures, byte for byte', () => {
  const idOf = (raw: string) => (JSON.parse(raw) as Json)['object']['id'] as string;

  it('a plain message (talk-21-webhook-message.json) and a mention over HTTP (talk-21-webhook-mention.json)', async () => {
    await start(33);
    nc.enableBotInRoom(ROOM, 'talk_bot');
    nc.webhooks.length = 0;
    const captured = nc33Webhook('talk-21-webhook-message.json');
    const msg = nc.postMessage(ROOM, { actorType: 'users', actorId: 'alice' }, 'Hello Talk AI, what is 2 + 2?');
    assert.equal(nc.webhookBodyFor(msg), captured.replace(`"id":"${idOf(captured)}"`, `"id":"${msg.id}"`));

    const request = readNc33Exchange('talk-21-webhook-mention.json', 'alice-posts-mentions').request;
    const posted = await call('alice', 'POST', `/ocs/v2.php/apps/spreed/api/v1/chat/${ROOM}?format=json`, JSON.parse(String(request.body)));
    assert.equal(posted.status, 201);
    const mention = nc33Webhook('talk-21-webhook-mention.json');
    assert.equal(nc.webhooks.at(-1)?.body, mention.replace(`"id":"${idOf(mention)}"`, `"id":"${posted.json['ocs']['data']['id']}"`));
  });

  it('a reply quotes its parent in inReplyTo (talk-21-webhook-reply.json); Talk 19 sends none (capture 64)', async () => {
    await start(33);
    const captured = nc33Webhook('talk-21-webhook-reply.json');
    const parentId = (JSON.parse(captured) as Json)['object']['inReplyTo']['object']['id'] as string;
    const question = nc.postMessage(ROOM, { actorType: 'users', actorId: 'alice' }, 'Hello Talk AI, what is 2 + 2?');
    const reply = nc.postMessage(ROOM, { actorType: 'users', actorId: 'bob' }, 'Replying to alice', { replyTo: question.id });
    assert.equal(
      nc.webhookBodyFor(reply),
      captured.replace(`"id":"${idOf(captured)}"`, `"id":"${reply.id}"`).replace(`"id":"${parentId}"`, `"id":"${question.id}"`),
    );
    await nc.close();

    await start(29);
    const q29 = nc.postMessage(ROOM, { actorType: 'users', actorId: 'alice' }, 'question');
    const r29 = nc.postMessage(ROOM, { actorType: 'users', actorId: 'bob' }, 'Replying to alice', { replyTo: q29.id });
    const body29 = JSON.parse(nc.webhookBodyFor(r29)) as Json;
    assert.equal(body29['object']['inReplyTo'], undefined);
    assert.equal(body29['actor']['talkParticipantType'], undefined);
    assert.deepEqual(Object.keys(body29['actor']), Object.keys((JSON.parse(readNc29WebhookRawBody('64-talk-webhook-reply.json')) as Json)['actor']));
  });

  it('an edit and a deletion over HTTP: Activities message_edited / message_deleted (talk-21-webhook-edit.json, -delete.json)', async () => {
    await start(33);
    nc.enableBotInRoom(ROOM, 'talk_bot');
    const chat = `/ocs/v2.php/apps/spreed/api/v1/chat/${ROOM}`;
    const posted = await call('alice', 'POST', `${chat}?format=json`, { message: 'Hello Talk AI, what is 2 + 2?' });
    const id = posted.json['ocs']['data']['id'] as number;
    nc.webhooks.length = 0;
    const edited = await call('alice', 'PUT', `${chat}/${id}?format=json`, { message: 'Hello Talk AI, what is 3 + 3?' });
    assert.equal(edited.status, readNc33Exchange('talk-21-webhook-edit.json', 'alice-edits').response.status);
    const deleted = await call('alice', 'DELETE', `${chat}/${id}?format=json`);
    assert.equal(deleted.status, readNc33Exchange('talk-21-webhook-delete.json', 'alice-deletes').response.status);
    const mine = nc.webhooks.map((w) => JSON.parse(w.body) as Json);
    const theirs = [nc33Webhook('talk-21-webhook-edit.json'), nc33Webhook('talk-21-webhook-delete.json')].map((b) => JSON.parse(b) as Json);
    assert.equal(mine.length, 2);
    for (const [i, m] of mine.entries()) {
      const t = theirs[i] as Json;
      assert.deepEqual({ ...m, object: { ...m['object'], id: '' } }, { ...t, object: { ...t['object'], id: '' } });
    }
  });

  it('a guest’s message names the guest and participant type 4 (talk-21-webhook-guest.json)', async () => {
    await start(33);
    const room = (JSON.parse(readNc33Exchange('talk-21-webhook-guest.json', 'create-public-room').response.body) as Json)['ocs']['data'] as Json;
    nc.createRoom({ token: room['token'], name: room['name'], type: 3, participants: [{ actorId: 'alice', participantType: 1 }] });
    const captured = nc33Webhook('talk-21-webhook-guest.json', 1);
    const actor = (JSON.parse(captured) as Json)['actor'] as Json;
    const guestId = String(actor['id']).replace(/^guests\//, '');
    nc.addParticipant(room['token'], { actorType: 'guests', actorId: guestId, participantType: 4, displayName: actor['name'] });
    const msg = nc.postMessage(room['token'], { actorType: 'guests', actorId: guestId }, 'Hello from a guest');
    assert.equal(nc.webhookBodyFor(msg), captured.replace(`"id":"${idOf(captured)}"`, `"id":"${msg.id}"`));
  });

  it('a file share: size and permissions as strings, hide-download, mention-id (talk-21-webhook-file-share.json)', async () => {
    await start(33);
    const captured = nc33Webhook('talk-21-webhook-file-share.json');
    const content = JSON.parse((JSON.parse(captured) as Json)['object']['content']) as Json;
    const f = content['parameters']['file'] as Json;
    const file = {
      type: 'file',
      id: f['id'],
      name: f['name'],
      size: Number(f['size']),
      path: f['path'],
      link: `${nc.url}/index.php/f/${f['id']}`,
      etag: f['etag'],
      permissions: Number(f['permissions']),
      mimetype: f['mimetype'],
      'preview-available': f['preview-available'],
    };
    const msg = nc.postMessage(ROOM, { actorType: 'users', actorId: 'alice' }, content['message'], {
      parameters: { actor: { type: 'user', id: 'alice', name: 'Alice' }, file },
    });
    const mine = JSON.parse(nc.webhookBodyFor(msg)) as Json;
    const theirs = JSON.parse(captured) as Json;
    const mineContent = JSON.parse(mine['object']['content']) as Json;
    // The share token is random on both sides; everything else is the capture's.
    mineContent['parameters']['file']['link'] = f['link'];
    assert.deepEqual(mineContent, content);
    assert.deepEqual({ ...mine, object: { ...mine['object'], id: '', content: '' } }, { ...theirs, object: { ...theirs['object'], id: '', content: '' } });
  });
});

describe('the fake per version: capabilities, Deck and Collectives', () => {
  for (const version of [29, 33] as const) {
    it(`Nextcloud ${version}: cloud/capabilities names that server version`, async () => {
      await start(version);
      const caps = await call('alice', 'GET', '/ocs/v2.php/cloud/capabilities?format=json');
      assert.equal(caps.json['ocs']['data']['version']['major'], version);
      if (version === 33) {
        const captured = JSON.parse(readNc33Exchange('appapi-33-ocs.json', 'capabilities-as-alice').response.body) as Json;
        assert.deepEqual(caps.json['ocs']['data']['capabilities']['spreed']['features'], captured['ocs']['data']['capabilities']['spreed']['features']);
      }
    });
  }

  it('Nextcloud 33: Deck 1.17 numbers a card created without order 999 and renumbers a stack on reorder (deck-1.17-cards.json)', async () => {
    await start(33);
    const capture = readNc33Json<Record<string, { response: { body: string } }>>('deck-1.17-cards.json');
    const API = '/index.php/apps/deck/api/v1.0';
    const board = (await call('alice', 'POST', `${API}/boards`, { title: 'Capture board', color: '0082c9' })).json;
    const todo = (await call('alice', 'POST', `${API}/boards/${board['id']}/stacks`, { title: 'To do', order: 0 })).json;
    const done = (await call('alice', 'POST', `${API}/boards/${board['id']}/stacks`, { title: 'Done', order: 1 })).json;
    const cards = `${API}/boards/${board['id']}/stacks/${todo['id']}/cards`;
    const first = (await call('alice', 'POST', cards, { title: 'First', type: 'plain', order: 0 })).json;
    await call('alice', 'POST', cards, { title: 'Second', type: 'plain', order: 1, description: 'Details', duedate: '2030-06-30T12:00:00+00:00' });
    const third = (await call('alice', 'POST', cards, { title: 'Third', type: 'plain' })).json;
    assert.equal(third['order'], (JSON.parse(capture['create-card-3-no-order']!.response.body) as Json)['order']);
    const positions = async () => {
      const stacks = (await call('alice', 'GET', `${API}/boards/${board['id']}/stacks`)).json as unknown as Json[];
      return stacks.map((s) => [s['title'], ((s['cards'] ?? []) as Json[]).map((c) => [c['title'], c['order']])]);
    };
    const capturedPositions = (step: string) =>
      (JSON.parse(capture[step]!.response.body) as Json[]).map((s) => [s['title'], ((s['cards'] ?? []) as Json[]).map((c) => [c['title'], c['order']])]);
    assert.deepEqual(await positions(), capturedPositions('stacks-after-create'));
    await call('alice', 'PUT', `${cards}/${third['id']}/reorder`, { order: 0, stackId: todo['id'] });
    assert.deepEqual(await positions(), capturedPositions('stacks-after-reorder'));
    await call('alice', 'PUT', `${cards}/${first['id']}/reorder`, { order: 0, stackId: done['id'] });
    assert.deepEqual(await positions(), capturedPositions('stacks-after-move'));
  });

  it('Nextcloud 33: Collectives 4.5 answers the OCS API and mounts a collective at .Collectives/<name> (collectives-4.5.json)', async () => {
    await start(33);
    const API = '/ocs/v2.php/apps/collectives/api/v1.0/collectives';
    const capture = readNc33Json<Record<string, { response: { body: string } }>>('collectives-4.5.json');
    const capturedPage = (JSON.parse(capture['create-page']!.response.body) as Json)['ocs']['data']['page'] as Json;
    const capturedName = (JSON.parse(capture['create']!.response.body) as Json)['ocs']['data']['collective']['name'] as string;
    assert.equal(capturedPage['collectivePath'], `.Collectives/${capturedName}`);
    const c = { id: nc.collectives.createCollective('Wiki', { alice: 'RGDNVCK' }).id };
    const listed = await call('alice', 'GET', API);
    assert.equal(listed.status, 200);
    const pages = (await call('alice', 'GET', `${API}/${c['id']}/pages`)).json['ocs']['data']['pages'] as Json[];
    const page = (await call('alice', 'POST', `${API}/${c['id']}/pages/${pages[0]?.['id']}`, { title: 'Capture page' })).json['ocs']['data']['page'] as Json;
    assert.equal(page['collectivePath'], '.Collectives/Wiki');
    // The page is a file in alice's files at that mount, as collectives-4.5.json reads it over WebDAV.
    const file = await fetch(`${nc.url}/remote.php/dav/files/alice/.Collectives/Wiki/${encodeURIComponent(String(page['fileName']))}`, {
      headers: headers('alice'),
    });
    assert.equal(file.status, 200);
    for (const key of ['id', 'title', 'fileName', 'filePath', 'collectivePath', 'parentId', 'timestamp', 'size'])
      assert.ok(key in page, `the fake's page has ${key}`);
  });

  it('Nextcloud 33: a repeated share answers the existing share unchanged, as in ocs-sharing-33.json', async () => {
    await start(33);
    nc.dav.files.putFile('alice', 'shared-capture.txt', 'to share\n');
    const API = '/ocs/v2.php/apps/files_sharing/api/v1/shares';
    const first = readNc33Exchange('ocs-sharing-33.json', 'create-user-share');
    const again = readNc33Exchange('ocs-sharing-33.json', 'create-user-share-again-with-edit');
    const data = (x: { response: { body: string } }) => (JSON.parse(x.response.body) as Json)['ocs']['data'] as Json;
    assert.equal(data(again)['id'], data(first)['id']);
    const mine1 = await call('alice', 'POST', API, JSON.parse(String(first.request.body)));
    const mine2 = await call('alice', 'POST', API, JSON.parse(String(again.request.body)));
    assert.equal(mine2.status, again.response.status);
    assert.equal(mine2.json['ocs']['data']['id'], mine1.json['ocs']['data']['id']);
    assert.equal(mine2.json['ocs']['data']['permissions'], data(again)['permissions']);
  });

  it('Nextcloud 29: no Collectives OCS API (Collectives 2.x, capture 91)', async () => {
    await start(29);
    const r = await call('alice', 'GET', '/ocs/v2.php/apps/collectives/api/v1.0/collectives');
    assert.notEqual(r.status, 200);
  });
});
