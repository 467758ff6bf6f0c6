import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_CONTENT_LENGTH, MAX_MESSAGE_LENGTH, parseTalkWebhook, type ParseTalkWebhookResult, type TalkWebhookEvent } from '../../lib/talk/webhook-schema.ts';
import { webhookBodies } from '../helpers/fixtures.ts';

type Json = Record<string, unknown>;

const CAPTURES = [
  '40-webhook-1-raw-body.json',
  '40-webhook-2-raw-body.json',
  '61-talk-webhook-mention.json',
  '62-talk-webhook-file-share.json',
  '63-talk-webhook-voice-message.json',
  '63-talk-webhook-voice-message-ogg.json',
  '64-talk-webhook-reply.json',
  '65-talk-webhook-one-to-one.json',
  '66-talk-webhook-guest.json',
  '67-talk-webhook-user-added.json',
  '67-talk-webhook-user-removed.json',
  '67-talk-webhook-bob-leaves-room.json',
  '67-talk-webhook-reaction-revoked.json',
  '68-talk-long-message.json',
  '69-talk-webhooks-after-bot-replies.json',
];

function only(name: string): Json {
  const bodies = webhookBodies(name);
  assert.equal(bodies.length, 1, `${name} holds one webhook`);
  return bodies[0] as Json;
}

function clone(body: Json): Json {
  return structuredClone(body);
}

function okEvent(result: ParseTalkWebhookResult): TalkWebhookEvent {
  if (!result.ok) assert.fail(`expected ok, got ${result.reason}: ${result.detail}`);
  return result.event;
}

function invalid(result: ParseTalkWebhookResult): string {
  if (result.ok) assert.fail('expected the body to be refused');
  assert.equal(result.reason, 'invalid');
  return result.detail;
}

function obj(body: Json, key: string): Json {
  return body[key] as Json;
}

function setContent(body: Json, content: unknown): Json {
  const copy = clone(body);
  obj(copy, 'object')['content'] = typeof content === 'string' ? content : JSON.stringify(content);
  return copy;
}

describe('parseTalkWebhook on the real captures', () => {
  for (const name of CAPTURES) {
    it(`accepts ${name}`, () => {
      for (const body of webhookBodies(name)) {
        const event = okEvent(parseTalkWebhook(body));
        assert.ok(event.type === 'Create' || event.type === 'Activity');
        assert.equal(event.type, (body as Json)['type']);
      }
    });
  }

  it('keeps AppAPI keys it knows and drops the rest', () => {
    const body = only('40-webhook-1-raw-body.json');
    assert.equal(body['_route'], 'ocs.app_api.talkbot.proxytalkmessage');
    const event = okEvent(parseTalkWebhook(body));
    assert.equal(event.appId, 'educai');
    assert.equal(event.route, 'talk_bot');
    assert.equal('_route' in event, false);
  });

  it('decodes object.content and turns an empty PHP array of parameters into an object', () => {
    const event = okEvent(parseTalkWebhook(only('40-webhook-1-raw-body.json')));
    assert.equal(event.type, 'Create');
    if (event.type !== 'Create') return;
    assert.equal(event.object.id, '135');
    assert.equal(event.target.id, '9yzpkz6o');
    assert.equal(event.object.content.message, 'Hello EducAI, what is 2+2?');
    assert.deepEqual(event.object.content.parameters, {});
  });

  it('keeps mention parameters, duplicates included', () => {
    const event = okEvent(parseTalkWebhook(only('61-talk-webhook-mention.json')));
    if (event.type !== 'Create') assert.fail('expected Create');
    const params = event.object.content.parameters;
    assert.deepEqual(Object.keys(params).sort(), ['mention-user1', 'mention-user2']);
    assert.equal(params['mention-user1']?.id, 'bob');
    assert.equal(params['mention-user2']?.name, 'Bob');
  });

  it('keeps file parameters with a string id and numeric size and permissions', () => {
    const event = okEvent(parseTalkWebhook(only('62-talk-webhook-file-share.json')));
    if (event.type !== 'Activity') assert.fail('expected Activity');
    assert.equal(event.object.name, '');
    const file = event.object.content.parameters['file'];
    assert.equal(file?.id, '38');
    assert.equal(file?.size, 23);
    assert.equal(file?.permissions, 27);
    assert.equal(file?.mimetype, 'text/plain');
  });

  it('names voice messages file_shared and the ogg file share ""', () => {
    const wav = okEvent(parseTalkWebhook(only('63-talk-webhook-voice-message.json')));
    const ogg = okEvent(parseTalkWebhook(only('63-talk-webhook-voice-message-ogg.json')));
    if (wav.type !== 'Activity' || ogg.type !== 'Activity') assert.fail('expected Activity');
    assert.equal(wav.object.name, 'file_shared');
    assert.equal(ogg.object.name, '');
  });

  it('accepts a 32000-character message', () => {
    const event = okEvent(parseTalkWebhook(only('68-talk-long-message.json')));
    if (event.type !== 'Create') assert.fail('expected Create');
    assert.equal(event.object.content.message.length, 32000);
  });

  it('captures of events without a webhook hold no bodies', () => {
    for (const name of ['67-talk-webhook-session-join-leave.json', '67-talk-webhook-reaction-added.json', '67-talk-webhook-bot-disable-enable.json']) {
      assert.deepEqual(webhookBodies(name), []);
    }
  });
});

describe('parseTalkWebhook on event types without a capture (Talk 20+ shapes)', () => {
  const base = only('40-webhook-1-raw-body.json');
  const actor = { type: 'Application', id: 'bots/bot-76a97956f40f974f0b4346b9b4f6e7de1e8cce76', name: 'EducAI' };
  const room = { type: 'Collection', id: '9yzpkz6o', name: 'EducAI acceptance' };
  const note = obj(base, 'object');

  it('accepts Join and Leave with the room in object', () => {
    for (const type of ['Join', 'Leave'] as const) {
      const event = okEvent(parseTalkWebhook({ type, actor, object: room }));
      assert.equal(event.type, type);
      if (event.type === 'Join' || event.type === 'Leave') assert.equal(event.object.id, '9yzpkz6o');
    }
  });

  it('accepts Like and Undo', () => {
    const like = { type: 'Like', actor: base['actor'], object: note, target: room, content: '👍' };
    const likeEvent = okEvent(parseTalkWebhook(like));
    if (likeEvent.type !== 'Like') assert.fail('expected Like');
    assert.equal(likeEvent.content, '👍');
    assert.equal(likeEvent.object.id, '135');
    const undo = okEvent(parseTalkWebhook({ type: 'Undo', actor: base['actor'], object: like, target: room }));
    if (undo.type !== 'Undo') assert.fail('expected Undo');
    assert.equal(undo.object.object.id, '135');
  });

  it('accepts inReplyTo and talkParticipantType (Talk 21+)', () => {
    const body = clone(base);
    obj(body, 'actor')['talkParticipantType'] = '3';
    obj(body, 'object')['inReplyTo'] = {
      type: 'Note',
      actor: { type: 'Person', id: 'users/bob', name: 'Bob' },
      object: { type: 'Note', id: '134', name: 'message', content: '{"message":"hi","parameters":[]}', mediaType: 'text/markdown' },
    };
    const event = okEvent(parseTalkWebhook(body));
    if (event.type !== 'Create') assert.fail('expected Create');
    assert.equal(event.object.inReplyTo?.object.id, '134');
    assert.equal(event.actor.talkParticipantType, '3');
  });

  it('refuses an inReplyTo without a numeric parent id', () => {
    const body = clone(base);
    obj(body, 'object')['inReplyTo'] = { type: 'Note', object: { id: 134 } };
    assert.match(invalid(parseTalkWebhook(body)), /^object\.inReplyTo\.object\.id:/);
  });

  it('refuses a Join whose object is not a room', () => {
    assert.match(invalid(parseTalkWebhook({ type: 'Join', actor, object: { type: 'Collection', id: 'not a token', name: '' } })), /^object\.id:/);
  });
});

describe('parseTalkWebhook refusals', () => {
  const base = only('40-webhook-1-raw-body.json');

  it('reports unknown types separately', () => {
    const result = parseTalkWebhook({ ...clone(base), type: 'Update' });
    assert.deepEqual(result, { ok: false, reason: 'unknown-type', detail: 'type Update not handled' });
    const odd = parseTalkWebhook({ ...clone(base), type: 'X<script>'.repeat(10) });
    assert.equal(odd.ok, false);
    if (!odd.ok) {
      assert.equal(odd.reason, 'unknown-type');
      assert.ok(!odd.detail.includes('<script>'));
    }
  });

  it('does not treat inherited property names as types', () => {
    for (const type of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const result = parseTalkWebhook({ ...clone(base), type });
      assert.equal(result.ok, false);
      if (!result.ok) assert.equal(result.reason, 'unknown-type');
    }
  });

  it('refuses bodies that are not objects or have no string type', () => {
    for (const body of [null, undefined, 42, 'Create', [], [base], true]) {
      invalid(parseTalkWebhook(body));
    }
    assert.equal(invalid(parseTalkWebhook({ ...clone(base), type: undefined })), 'type: expected string');
    assert.equal(invalid(parseTalkWebhook({ ...clone(base), type: 7 })), 'type: expected string');
  });

  it('requires message ids as numeric strings', () => {
    for (const id of [135, '', 'abc', '0135', '0', '-1', '1.5', '1'.repeat(20), null]) {
      const body = clone(base);
      obj(body, 'object')['id'] = id;
      assert.match(invalid(parseTalkWebhook(body)), /^object\.id:/, `id ${String(id)}`);
    }
  });

  it('requires a room token of 1-64 letters and digits', () => {
    for (const id of ['', 'abc/def', 'abc def', '../x', 'a'.repeat(65), 12345]) {
      const body = clone(base);
      obj(body, 'target')['id'] = id;
      assert.match(invalid(parseTalkWebhook(body)), /^target\.id:/, `token ${String(id)}`);
    }
    const body = clone(base);
    obj(body, 'target')['id'] = 'a'.repeat(64);
    okEvent(parseTalkWebhook(body));
  });

  it('requires actor ids of the form <type>/<id>', () => {
    for (const id of ['alice', 'users/', '/alice', 'Users/alice', 'users/al\nice', 'users/' + 'a'.repeat(600), 5]) {
      const body = clone(base);
      obj(body, 'actor')['id'] = id;
      assert.match(invalid(parseTalkWebhook(body)), /^actor\.id:/, `actor ${String(id)}`);
    }
    for (const id of ['federated_users/bob@cloud.example.org/nc', 'emails/abc123', 'guests/84ecdb0a2f99cee1dbc01337b5c5dbb3b6e88996']) {
      const body = clone(base);
      obj(body, 'actor')['id'] = id;
      okEvent(parseTalkWebhook(body));
    }
  });

  it('refuses missing parts', () => {
    for (const key of ['actor', 'object', 'target']) {
      const body = clone(base);
      delete body[key];
      assert.match(invalid(parseTalkWebhook(body)), new RegExp(`^${key}:`));
    }
    const noName = clone(base);
    delete obj(noName, 'actor')['name'];
    assert.match(invalid(parseTalkWebhook(noName)), /^actor\.name:/);
  });

  it('refuses content that is not the expected JSON', () => {
    assert.match(invalid(parseTalkWebhook(setContent(base, 'Hello, not JSON'))), /^object\.content: not JSON/);
    assert.match(invalid(parseTalkWebhook(setContent(base, { parameters: [] }))), /^object\.content\.message:/);
    assert.match(invalid(parseTalkWebhook(setContent(base, { message: 7, parameters: [] }))), /^object\.content\.message:/);
    assert.match(invalid(parseTalkWebhook(setContent(base, { message: 'hi', parameters: ['x'] }))), /^object\.content\.parameters:/);
    assert.match(invalid(parseTalkWebhook(setContent(base, { message: 'hi', parameters: 'x' }))), /^object\.content\.parameters:/);
    assert.match(invalid(parseTalkWebhook(setContent(base, '[1,2]'))), /^object\.content:/);
    const asObject = clone(base);
    obj(asObject, 'object')['content'] = { message: 'hi', parameters: [] };
    assert.match(invalid(parseTalkWebhook(asObject)), /^object\.content:/);
  });

  it('refuses malformed parameters', () => {
    const file = { type: 'file', id: '38', name: 'a.txt', size: 3, path: 'a.txt', mimetype: 'text/plain' };
    okEvent(parseTalkWebhook(setContent(base, { message: '{file}', parameters: { file } })));
    const cases: Array<[unknown, RegExp]> = [
      [{ file: 'x' }, /^object\.content\.parameters\.\*:/],
      [{ file: { ...file, id: 'abc' } }, /^object\.content\.parameters\.\*\.id: file id/],
      [{ file: { ...file, size: undefined } }, /^object\.content\.parameters\.\*\.size:/],
      [{ file: { ...file, size: -1 } }, /^object\.content\.parameters\.\*\.size:/],
      [{ file: { ...file, mimetype: undefined } }, /^object\.content\.parameters\.\*\.mimetype:/],
      [{ file: { ...file, path: undefined } }, /^object\.content\.parameters\.\*\.path:/],
      [{ 'mention-user1': { type: 'user', id: 'bob' } }, /^object\.content\.parameters\.\*\.name:/],
      [{ 'bad key!': { type: 'user', id: 'bob', name: 'Bob' } }, /^object\.content\.parameters/],
    ];
    for (const [parameters, pattern] of cases) {
      assert.match(invalid(parseTalkWebhook(setContent(base, { message: 'hi', parameters }))), pattern);
    }
  });

  it('does not let a __proto__ parameter leak into the result', () => {
    const content = '{"message":"{file}","parameters":{"__proto__":{"type":"file","id":"1","name":"x","size":1,"path":"x","mimetype":"text/plain"}}}';
    const event = okEvent(parseTalkWebhook(setContent(base, content)));
    if (event.type !== 'Create') assert.fail('expected Create');
    assert.deepEqual(Object.keys(event.object.content.parameters), []);
    assert.equal(Object.hasOwn(event.object.content.parameters, 'file'), false);
    assert.equal(({} as Json)['type'], undefined);
  });

  it('bounds string lengths', () => {
    const longMessage = setContent(base, { message: 'x'.repeat(MAX_MESSAGE_LENGTH + 1), parameters: [] });
    assert.match(invalid(parseTalkWebhook(longMessage)), /^object\.content\.message:/);
    const hugeContent = clone(base);
    obj(hugeContent, 'object')['content'] = ' '.repeat(MAX_CONTENT_LENGTH + 1);
    assert.match(invalid(parseTalkWebhook(hugeContent)), /^object\.content:/);
    for (const key of ['actor', 'target']) {
      const body = clone(base);
      obj(body, key)['name'] = 'n'.repeat(5000);
      assert.match(invalid(parseTalkWebhook(body)), new RegExp(`^${key}\\.name:`));
    }
    const longName = setContent(base, { message: 'hi', parameters: { 'mention-user1': { type: 'user', id: 'bob', name: 'B'.repeat(5000) } } });
    assert.match(invalid(parseTalkWebhook(longName)), /name:/);
  });

  it('never echoes body text in the detail', () => {
    const secret = 'SENTINEL-7f3a';
    const bodies: Json[] = [];
    const badActor = clone(base);
    obj(badActor, 'actor')['id'] = secret;
    bodies.push(badActor);
    bodies.push(setContent(base, `${secret} not json`));
    bodies.push(setContent(base, { message: 'hi', parameters: { [`${secret}!`]: { type: 'user', id: 'x', name: 'y' } } }));
    bodies.push(setContent(base, { message: 'hi', parameters: { [secret]: { type: 'file', id: secret, name: secret } } }));
    const badToken = clone(base);
    obj(badToken, 'target')['id'] = `${secret}/x`;
    bodies.push(badToken);
    for (const body of bodies) {
      const detail = invalid(parseTalkWebhook(body));
      assert.ok(!detail.includes(secret), detail);
      assert.ok(detail.length <= 200);
    }
  });
});

describe('parseTalkWebhook never throws', () => {
  const replacements: unknown[] = [null, 0, -1, 1e308, '', 'x'.repeat(70_000), {}, [], [1], true, '{"message":', '{}'];

  function* leafPaths(value: unknown, path: string[] = []): Generator<string[]> {
    if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) yield* leafPaths(v, [...path, k]);
      if (path.length > 0) yield path;
    } else {
      yield path;
    }
  }

  function withValue(body: Json, path: string[], value: unknown): Json {
    const copy = clone(body);
    let node: Json = copy;
    for (const key of path.slice(0, -1)) node = node[key] as Json;
    const last = path.at(-1);
    if (last === undefined) return copy;
    if (value === undefined) delete node[last];
    else node[last] = value;
    return copy;
  }

  for (const name of ['61-talk-webhook-mention.json', '62-talk-webhook-file-share.json', '66-talk-webhook-guest.json']) {
    it(`survives every field of ${name} replaced or removed`, () => {
      const body = only(name);
      let refused = 0;
      let runs = 0;
      for (const path of leafPaths(body)) {
        for (const value of [...replacements, undefined]) {
          const result = parseTalkWebhook(withValue(body, path, value));
          runs += 1;
          assert.equal(typeof result.ok, 'boolean');
          if (!result.ok) {
            refused += 1;
            assert.ok(result.detail.length > 0 && result.detail.length <= 200);
          }
        }
      }
      assert.ok(runs > 100);
      assert.ok(refused > 0);
    });
  }

  it('survives deeply nested and cyclic-looking input', () => {
    let deep: Json = {};
    const root = deep;
    for (let i = 0; i < 5000; i += 1) {
      const next: Json = {};
      deep['object'] = next;
      deep = next;
    }
    const result = parseTalkWebhook({ type: 'Create', ...root });
    assert.equal(result.ok, false);
  });
});
