import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { FakeNextcloud } from './server.ts';
import { capturedCapabilitiesBody, readNc29Exchange, readNc29Json, readNc29Text, readNc29WebhookRawBody } from './fixtures.ts';
import type { FakeChatMessage } from './talk.ts';

const APP_ID = 'educai';
const SECRET = 'test-secret-for-the-fake-nextcloud-0123456789';
const T0 = 1796011588000;
const BOT_NAME = 'EducAI acceptance bot';
const BOT_DESCRIPTION = 'Throwaway bot of the acceptance ExApp';
const NOT_FOUND_404 = '{"ocs":{"meta":{"status":"failure","statuscode":404,"message":""},"data":[]}}';

let nc: FakeNextcloud;
let clock = T0;

beforeEach(async () => {
  clock = T0;
  nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: SECRET, now: () => clock });
});

afterEach(async () => {
  await nc.close();
});

// --- helpers ---

interface CallOptions {
  /** AppAPI user ('' = none); null sends no AppAPI headers. */
  user?: string | null;
  headers?: Record<string, string>;
  omit?: string[];
  body?: unknown;
}

interface CallResult {
  status: number;
  text: string;
  headers: Headers;
  json: () => any;
}

function b64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

async function call(method: string, path: string, opts: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = {};
  if (opts.user !== null) {
    headers['EX-APP-ID'] = APP_ID;
    headers['EX-APP-VERSION'] = '1.0.0';
    headers['AUTHORIZATION-APP-API'] = b64(`${opts.user ?? ''}:${SECRET}`);
  }
  headers['OCS-APIRequest'] = 'true';
  headers['Accept'] = 'application/json';
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  Object.assign(headers, opts.headers);
  for (const name of opts.omit ?? []) delete headers[name];
  const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const res = await fetch(nc.url + path, { method, headers, body });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
}

function sign(secret: string, random: string, text: string): string {
  return createHmac('sha256', secret)
    .update(random + text, 'utf8')
    .digest('hex');
}

async function botCall(
  method: string,
  path: string,
  secret: string,
  signed: string,
  body: unknown,
  opts: { random?: string; signature?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const random = opts.random ?? randomBytes(32).toString('hex');
  return call(method, path, {
    user: null,
    body,
    headers: { 'X-Nextcloud-Talk-Bot-Random': random, 'X-Nextcloud-Talk-Bot-Signature': opts.signature ?? sign(secret, random, signed), ...opts.headers },
  });
}

async function registerBot(route = '/talk_bot'): Promise<{ id: string; secret: string }> {
  const res = await call('POST', '/ocs/v1.php/apps/app_api/api/v1/talk_bot?format=json', { body: { name: BOT_NAME, route, description: BOT_DESCRIPTION } });
  assert.equal(res.status, 200);
  return res.json().ocs.data;
}

function botActorId(): string {
  const url = `${nc.url}/ocs/v2.php/apps/app_api/api/v1/talk_proxy/${APP_ID}/talk_bot`;
  return `bot-${createHash('sha1').update(url).digest('hex')}`;
}

/** The room of captures 32–52: alice created it and added bob. */
function acceptanceRoom(token = '9yzpkz6o', name = 'EducAI acceptance', type: 2 | 3 = 2) {
  return nc.createRoom({
    token,
    name,
    type,
    participants: [
      { actorId: 'alice', participantType: 1 },
      { actorId: 'bob', participantType: 3 },
    ],
  });
}

/** Message ids, timestamps and the bot's URL hash differ per server; everything else must match. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if ((k === 'id' || k === 'timestamp' || k === 'lastEditTimestamp' || k === 'lastActivity') && typeof v === 'number') out[k] = 0;
      else if (k === 'actorId' && typeof v === 'string' && v.startsWith('bot-')) out[k] = 'bot-X';
      else out[k] = normalize(v);
    }
    return out;
  }
  return value;
}

/** Same keys in the same order, same JSON types, recursively. */
function assertSameShape(actual: unknown, expected: unknown, where = '$'): void {
  const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  assert.equal(kind(actual), kind(expected), `type of ${where}`);
  if (kind(expected) === 'object') {
    const a = actual as Record<string, unknown>;
    const e = expected as Record<string, unknown>;
    assert.deepEqual(Object.keys(a), Object.keys(e), `keys of ${where}`);
    for (const k of Object.keys(e)) assertSameShape(a[k], e[k], `${where}.${k}`);
  }
}

function capturedUser(headers: Record<string, string>): string | null {
  const auth = headers['AUTHORIZATION-APP-API'];
  if (auth === undefined) return null;
  return /^base64\("([^:]*):/.exec(auth)?.[1] ?? null;
}

/** Sends a captured AppAPI request again and compares status and body (database ids aside). */
async function replay(file: string, step: string): Promise<void> {
  const ex = readNc29Exchange(file, step);
  const url = new URL(ex.request.url);
  const res = await call(ex.request.method, url.pathname + url.search, { user: capturedUser(ex.request.headers), body: ex.request.body ?? undefined });
  const ids = (s: string): string => s.replace(/"id":\d+/g, '"id":0');
  assert.equal(res.status, ex.response.status, `${step} status`);
  assert.equal(ids(res.text), ids(ex.response.body), `${step} body`);
}

function escapedTwice(s: string): string {
  return s.replaceAll('/', '\\\\\\/');
}

// --- OCS envelopes ---

describe('OCS envelopes', () => {
  it('answers v1 with HTTP 200, statuscode 100 and empty totalitems, byte for byte like capture 10', async () => {
    const res = await call('PUT', '/ocs/v1.php/apps/app_api/ex-app/status?format=json', { body: '{"progress":100}', omit: ['Accept'] });
    const captured = readNc29Exchange('10-init-progress-100.json');
    assert.equal(res.status, 200);
    assert.equal(res.text, captured.response.body);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
    assert.deepEqual(nc.statusReports, [{ progress: 100 }]);
  });

  it('answers v2 with the real status and statuscode, without totalitems', async () => {
    const res = await call('PUT', '/ocs/v2.php/apps/app_api/ex-app/status', { body: { progress: 40 } });
    assert.equal(res.status, 200);
    assert.equal(res.text, '{"ocs":{"meta":{"status":"ok","statuscode":200,"message":"OK"},"data":[]}}');
  });

  it('puts v1 failures inside HTTP 200 and v2 failures in the HTTP status (capture 92)', async () => {
    const v2 = await call('GET', '/ocs/v2.php/cloud/users/bob/groups?format=json', { user: 'alice' });
    assert.equal(v2.status, 404);
    assert.equal(v2.text, readNc29Exchange('92-ocs-users-groups.json', 'aliceBobsGroups').response.body);

    const v1 = await call('GET', '/ocs/v1.php/cloud/users/bob/groups?format=json', { user: 'alice' });
    assert.equal(v1.status, 200);
    assert.equal(v1.text, '{"ocs":{"meta":{"status":"failure","statuscode":998,"message":"","totalitems":"","itemsperpage":""},"data":[]}}');

    await replay('92-ocs-users-groups.json', 'aliceGroupsV1');
    await replay('85-appapi-ui-unregister.json', 'unregisterTopMenuAgain');
  });

  it('answers 412 {"message":"CSRF check failed"} without OCS-APIRequest, on v1 and v2 alike', async () => {
    const captured = readNc29Exchange('79-ocs-sharing-errors-v1-vs-v2.json', 'v2WithoutOcsApiRequestHeader');
    for (const v of ['v1', 'v2']) {
      const res = await call('GET', `/ocs/${v}.php/cloud/user?format=json`, { user: 'alice', omit: ['OCS-APIRequest'] });
      assert.equal(res.status, 412);
      assert.equal(res.text, captured.response.body);
    }
  });

  it('renders XML when JSON is not asked for, in the shape of capture 79', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/users/bob/groups', { user: 'alice', omit: ['Accept'] });
    const captured = readNc29Exchange('79-ocs-sharing-errors-v1-vs-v2.json', 'v2ShareWithNonexistentUserXml').response.body;
    const expected = captured
      .replace('<statuscode>404</statuscode>', '<statuscode>998</statuscode>')
      .replace('<message>Please specify a valid account to share with</message>', '<message></message>');
    assert.equal(res.status, 404);
    assert.equal(res.text, expected);
    assert.match(res.headers.get('content-type') ?? '', /^application\/xml/);
  });

  it('answers unknown OCS routes like ocs/v1.php (capture 50) and a wrong verb with 405', async () => {
    const res = await botCall('PUT', '/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o/message/136?format=json', 'x', 'edited', { message: 'edited' });
    assert.equal(res.status, 404);
    assert.equal(res.text, readNc29Exchange('50-bot-edit-attempts.json', 'botMessageEditRoute').response.body);

    const wrongVerb = await call('PUT', '/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o', { user: 'alice', body: {} });
    assert.equal(wrongVerb.status, 405);
    assert.equal(wrongVerb.text, '');
  });
});

// --- header contract ---

describe('AppAPI header contract', () => {
  it('records nothing for a compliant call and decodes the user', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice' });
    assert.equal(res.status, 200);
    assert.deepEqual(nc.headerViolations, []);
    const recorded = nc.calls.at(-1);
    assert.equal(recorded?.user, 'alice');
    assert.equal(recorded?.method, 'GET');
    assert.equal(recorded?.path, '/ocs/v2.php/cloud/user');
    assert.equal(recorded?.headers['ex-app-id'], APP_ID);
    assert.equal(recorded?.status, 200);
  });

  it('detects a missing EX-APP-VERSION; AppAPI routes then answer 401 997', async () => {
    const res = await call('GET', '/ocs/v1.php/apps/app_api/api/v1/users?format=json', { omit: ['EX-APP-VERSION'] });
    assert.equal(res.status, 401);
    assert.equal(
      res.text,
      '{"ocs":{"meta":{"status":"failure","statuscode":997,"message":"AppAPI authentication failed","totalitems":"","itemsperpage":""},"data":[]}}',
    );
    assert.equal(nc.headerViolations.length, 1);
    assert.match(nc.headerViolations[0] ?? '', /EX-APP-VERSION/);
    assert.equal(nc.calls.at(-1)?.user, null);
  });

  it('detects a wrong app id and treats the request as anonymous', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice', headers: { 'EX-APP-ID': 'other_app' } });
    assert.equal(res.status, 401);
    assert.match(nc.headerViolations[0] ?? '', /EX-APP-ID is "other_app"/);
  });

  it('continues a wrong secret anonymously like captures 75/79 and records it', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/user?format=json', { headers: { 'AUTHORIZATION-APP-API': b64('alice:not-the-secret') } });
    const captured = readNc29Exchange('79-ocs-sharing-errors-v1-vs-v2.json', 'v2BadAppApiSecretCloudUser');
    assert.equal(res.status, captured.response.status);
    assert.equal(res.text, captured.response.body);
    assert.match(nc.headerViolations[0] ?? '', /wrong secret/);
    assert.equal(nc.calls.at(-1)?.user, null);
  });

  it('flags an Authorization or Cookie header even when AppAPI auth succeeds', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/user', {
      user: 'alice',
      headers: { Authorization: 'Basic ' + b64('alice:pw'), Cookie: 'oc_sessionPassphrase=x' },
    });
    assert.equal(res.status, 200);
    assert.equal(nc.headerViolations.length, 1, 'one entry per call');
    assert.match(nc.headerViolations[0] ?? '', /Authorization header sent; Cookie header sent/);
  });

  it('flags a missing OCS-APIRequest (412) and a missing JSON request', async () => {
    await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice', omit: ['OCS-APIRequest'] });
    await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice', omit: ['Accept'] });
    assert.equal(nc.calls[0]?.status, 412);
    assert.match(nc.headerViolations[0] ?? '', /OCS-APIRequest/);
    assert.match(nc.headerViolations[1] ?? '', /no JSON requested/);
  });

  it('accepts format=json instead of an Accept header', async () => {
    await call('GET', '/ocs/v2.php/cloud/user?format=json', { user: 'alice', omit: ['Accept'] });
    assert.deepEqual(nc.headerViolations, []);
  });

  it('flags impersonation of an unknown user and treats it as anonymous', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/user', { user: 'mallory' });
    assert.equal(res.status, 401);
    assert.match(nc.headerViolations[0] ?? '', /unknown user "mallory"/);
  });

  it('requires bot endpoints to carry no AppAPI headers', async () => {
    const { secret } = await registerBot();
    acceptanceRoom();
    nc.enableBotInRoom('9yzpkz6o', '/talk_bot');
    nc.reset();
    const res = await botCall(
      'POST',
      '/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o/message',
      secret,
      'hi',
      { message: 'hi' },
      { headers: { 'EX-APP-ID': APP_ID, 'AUTHORIZATION-APP-API': b64(`:${SECRET}`) } },
    );
    assert.equal(res.status, 201);
    assert.equal(nc.headerViolations.length, 1);
    assert.match(nc.headerViolations[0] ?? '', /carries AppAPI header EX-APP-ID; bot endpoint carries AppAPI header AUTHORIZATION-APP-API/);
  });

  it('flags a bot random shorter than 32 characters and answers 400', async () => {
    const { secret } = await registerBot();
    acceptanceRoom();
    nc.enableBotInRoom('9yzpkz6o', 'talk_bot');
    nc.reset();
    const res = await botCall('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o/message', secret, 'hi', { message: 'hi' }, { random: 'short' });
    assert.equal(res.status, 400);
    assert.match(nc.headerViolations[0] ?? '', /shorter than 32/);
  });
});

// --- users ---

describe('users and groups', () => {
  it('serves cloud/user as the header user with the keys of capture 20', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/user?format=json', { user: 'alice' });
    const captured = JSON.parse(readNc29Exchange('20-ocs-cloud-user-as-alice.json').response.body);
    const data = res.json().ocs.data;
    assertSameShape(data, captured.ocs.data);
    assert.equal(data.id, 'alice');
    assert.equal(data.displayname, 'Alice');
    assert.deepEqual(data.groups, ['educai-students']);
    assert.equal(data.lastLogin, T0);

    const v1 = await call('GET', '/ocs/v1.php/cloud/user?format=json', { user: 'bob' });
    assert.equal(v1.json().ocs.meta.statuscode, 100);
    assert.equal(v1.json().ocs.data.id, 'bob');

    const system = await call('GET', '/ocs/v2.php/cloud/user', { user: '' });
    assert.equal(system.status, 401);
  });

  it('serves the captured capabilities with its own URL', async () => {
    const res = await call('GET', '/ocs/v2.php/cloud/capabilities?format=json', { user: 'alice' });
    assert.equal(res.status, 200);
    assert.equal(res.text, capturedCapabilitiesBody(nc.url));
    assert.ok(res.json().ocs.data.capabilities.spreed.features.includes('chat-get-context'));
  });

  it('answers the provisioning group endpoints like capture 92', async () => {
    for (const step of [
      'aliceOwnGroupsAppApi',
      'aliceBobsGroups',
      'aliceListsGroups',
      'appApiSystemUserGroups',
      'aliceGroupMembers',
      'aliceGetsUserBob',
      'aliceListsUsers',
    ]) {
      await replay('92-ocs-users-groups.json', step);
    }
    const admin = await call('GET', '/ocs/v2.php/cloud/groups?format=json', { user: 'admin' });
    assert.equal(admin.text, readNc29Exchange('92-ocs-users-groups.json', 'adminListsGroups').response.body);
    const adminAlice = await call('GET', '/ocs/v2.php/cloud/users/alice/groups?format=json', { user: 'admin' });
    assert.equal(adminAlice.text, readNc29Exchange('92-ocs-users-groups.json', 'adminAliceGroups').response.body);
  });

  it('lists users through AppAPI like capture 25 and knows users added later', async () => {
    const res = await call('GET', '/ocs/v1.php/apps/app_api/api/v1/users?format=json');
    assert.equal(res.text, readNc29Exchange('25-appapi-users-list-system.json').response.body);
    nc.addUser({ id: 'carol', displayName: 'Carol', groups: [] });
    const again = await call('GET', '/ocs/v1.php/apps/app_api/api/v1/users?format=json');
    assert.deepEqual(again.json().ocs.data, ['admin', 'alice', 'bob', 'carol']);
  });
});

// --- AppAPI ---

describe('AppAPI endpoints', () => {
  it('registers a Talk bot with the captured id, a 64-char secret, and the same secret again', async () => {
    const captured = readNc29Exchange('30-appapi-talk-bot-register.json');
    const first = await call('POST', '/ocs/v1.php/apps/app_api/api/v1/talk_bot?format=json', { body: captured.request.body ?? '' });
    const body = first.json();
    assertSameShape(body, JSON.parse(captured.response.body));
    assert.equal(body.ocs.data.id, JSON.parse(captured.response.body).ocs.data.id);
    assert.match(body.ocs.data.secret, /^[abcdefgijkmnopqrstwxyzABCDEFGHJKLMNPQRSTWXYZ23456789]{64}$/);
    assert.deepEqual(nc.talkBots.get('talk_bot'), { id: body.ocs.data.id, name: BOT_NAME, description: BOT_DESCRIPTION, secret: body.ocs.data.secret });

    const second = await registerBot();
    assert.equal(second.secret, body.ocs.data.secret);

    const removed = await call('DELETE', '/ocs/v1.php/apps/app_api/api/v1/talk_bot?format=json', { body: { route: '/talk_bot' } });
    assert.equal(removed.json().ocs.data, true);
    const gone = await call('DELETE', '/ocs/v1.php/apps/app_api/api/v1/talk_bot?format=json', { body: { route: '/talk_bot' } });
    assert.equal(gone.json().ocs.meta.statuscode, 404);
    const fresh = await registerBot();
    assert.notEqual(fresh.secret, body.ocs.data.secret);
  });

  it('reports init progress and rejects values out of range with the generic 996', async () => {
    const res = await call('PUT', '/ocs/v1.php/apps/app_api/ex-app/status?format=json', { body: { progress: 101 } });
    assert.equal(res.status, 200);
    assert.equal(res.text, readNc29Exchange('88-appapi-config-and-preferences.json', 'setPreferenceSystemUser').response.body);
    await call('PUT', '/ocs/v1.php/apps/app_api/ex-app/status?format=json', { body: { progress: 0, error: 'model missing' } });
    assert.deepEqual(nc.statusReports, [{ progress: 101 }, { progress: 0, error: 'model missing' }]);
  });

  it('logs like capture 89', async () => {
    for (const step of ['logInfo', 'logError', 'logInvalidLevel']) await replay('89-appapi-notification-and-log.json', step);
    assert.deepEqual(nc.logs, [
      { level: 1, message: 'EducAI capture-more log line (info)' },
      { level: 3, message: 'EducAI capture-more log line (error, as alice)' },
    ]);
  });

  it('sends notifications to the header user like capture 89', async () => {
    const captured = readNc29Exchange('89-appapi-notification-and-log.json', 'sendNotificationToAlice');
    const res = await call('POST', '/ocs/v1.php/apps/app_api/api/v1/notification?format=json', { user: 'alice', body: captured.request.body ?? '' });
    assertSameShape(res.json(), JSON.parse(captured.response.body));
    assert.equal(res.json().ocs.data.datetime, '2026-11-30T04:06:28+00:00');
    assert.equal(nc.notifications.length, 1);
    assert.equal(nc.notifications[0]?.user, 'alice');
    assert.deepEqual(nc.notifications[0]?.params, JSON.parse(captured.request.body ?? '{}').params);
    const system = await call('POST', '/ocs/v1.php/apps/app_api/api/v1/notification?format=json', { body: captured.request.body ?? '' });
    assert.equal(system.json().ocs.meta.statuscode, 996);
  });

  it('stores config and preferences like capture 88', async () => {
    nc.appConfig.set('educai_model', 'large');
    const steps = [
      'setAppConfig',
      'setAppConfigSensitive',
      'setAppConfigJsonValue',
      'getAppConfigValues',
      'deleteAppConfigValues',
      'deleteAppConfigValuesAgain',
      'setPreferenceAlice',
      'setPreferenceAliceNumber',
      'getPreferencesAlice',
      'getPreferencesBob',
      'setPreferenceSystemUser',
      'deletePreferencesAlice',
      'getConfigViaV2',
    ];
    for (const step of steps) await replay('88-appapi-config-and-preferences.json', step);
    assert.deepEqual([...nc.appConfig], [['educai_model', 'large']]);
    assert.deepEqual([...(nc.preferences.get('alice') ?? [])], []);
  });

  it('registers UI entries like capture 85 and removes scripts, styles and states with their menu', async () => {
    for (const step of [
      'registerTopMenu',
      'registerAdminTopMenu',
      'getTopMenu',
      'setInitialState',
      'getInitialState',
      'setScript',
      'getScript',
      'setStyle',
      'getStyle',
    ]) {
      await replay('85-appapi-ui-top-menu-initial-state-script-style.json', step);
    }
    assert.deepEqual([...nc.ui.topMenus.keys()], ['educai-main', 'educai-admin']);
    assert.deepEqual((nc.ui.initialStates.get('top_menu/educai-main/educai-config') as { value: unknown }).value, {
      course: 'Math 7b',
      maxTokens: 512,
      features: ['quiz', 'summary'],
    });
    for (const step of ['unregisterTopMenu', 'unregisterAdminTopMenu', 'unregisterTopMenuAgain', 'deleteInitialState', 'deleteScript', 'deleteStyle']) {
      await replay('85-appapi-ui-unregister.json', step);
    }
    assert.equal(nc.ui.scripts.size + nc.ui.styles.size + nc.ui.initialStates.size + nc.ui.topMenus.size, 0);
  });

  it('stores declarative settings forms like capture 86', async () => {
    for (const step of ['registerAdminForm', 'registerPersonalForm', 'getAdminForm']) await replay('86-appapi-declarative-settings.json', step);
    assert.deepEqual([...nc.ui.settingsForms.keys()], ['educai_admin_settings', 'educai_personal_settings']);
    await replay('85-appapi-ui-unregister.json', 'unregisterAdminForm');
    await replay('85-appapi-ui-unregister.json', 'unregisterPersonalForm');
    await replay('85-appapi-ui-unregister.json', 'unregisterFormAgain');
  });
});

// --- Talk ---

describe('Talk webhooks (the body AppAPI forwards)', () => {
  it('matches capture 40 field by field and byte for byte', async () => {
    await registerBot();
    acceptanceRoom();
    nc.enableBotInRoom('9yzpkz6o', '/talk_bot');
    const msg = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'Hello EducAI, what is 2+2?');
    const raw = nc.webhookBodyFor(msg);
    const captured = readNc29Text('40-webhook-1-raw-body.json').trim();

    const mine = JSON.parse(raw);
    const theirs = JSON.parse(captured);
    assertSameShape(mine, theirs);
    assert.equal(mine.appId, APP_ID);
    assert.equal(mine.route, 'talk_bot');
    assert.equal(mine._route, 'ocs.app_api.talkbot.proxytalkmessage');
    assert.equal(mine.type, 'Create');
    assert.deepEqual(mine.actor, theirs.actor);
    assert.equal(mine.object.id, String(msg.id));
    assert.equal(typeof mine.object.id, 'string');
    assert.deepEqual(JSON.parse(mine.object.content), { message: 'Hello EducAI, what is 2+2?', parameters: [] });
    assert.deepEqual(mine.target, theirs.target);
    assert.equal(raw, captured.replace('"id":"135"', `"id":"${msg.id}"`));

    // The same body was queued for the enabled bot.
    assert.deepEqual(
      nc.webhooks.map((w) => w.body),
      [raw],
    );
  });

  it('parses mentions like capture 61 when a user posts over HTTP, and delivers inside the request', async () => {
    await registerBot();
    acceptanceRoom('8yx2ci2g', 'EducAI more (public)', 3);
    nc.enableBotInRoom('8yx2ci2g', 'talk_bot');
    const delivered: string[] = [];
    nc.onWebhook((d) => {
      delivered.push(d.body);
    });
    const captured = readNc29Exchange('61-talk-webhook-mention.json', 'alicePostsMention');
    const res = await call('POST', '/ocs/v2.php/apps/spreed/api/v1/chat/8yx2ci2g?format=json', { user: 'alice', body: captured.request.body ?? '' });
    assert.equal(res.status, 201);
    assert.deepEqual(normalize(res.json()), normalize(JSON.parse(captured.response.body)));
    const id = res.json().ocs.data.id as number;
    assert.deepEqual(delivered, [readNc29WebhookRawBody('61-talk-webhook-mention.json').replace('"id":"141"', `"id":"${id}"`)]);
    assert.equal(res.headers.get('x-chat-last-common-read'), String(id));
  });

  it('sends file shares as Activity with string file ids (captures 62, 63)', async () => {
    await registerBot();
    acceptanceRoom('8yx2ci2g', 'EducAI more (public)', 3);
    nc.enableBotInRoom('8yx2ci2g', 'talk_bot');
    const file = {
      type: 'file',
      id: '38',
      name: 'EducAI-worksheet.txt',
      size: 23,
      path: 'EducAI-worksheet.txt',
      link: `${nc.url}/index.php/f/38`,
      etag: 'fdd051c0f59476645c9e62bcc05f379d',
      permissions: 27,
      mimetype: 'text/plain',
      'preview-available': 'yes',
    };
    const actor = { type: 'user', id: 'alice', name: 'Alice' };
    const msg = nc.postMessage('8yx2ci2g', { actorType: 'users', actorId: 'alice' }, 'Here is the worksheet', { parameters: { actor, file } });
    const raw = nc.webhookBodyFor(msg);
    const shareToken = /\/index\.php\/s\/([A-Za-z0-9]+)/.exec(JSON.parse(JSON.parse(raw).object.content).parameters.file.link)?.[1] ?? '';
    const expected = readNc29WebhookRawBody('62-talk-webhook-file-share.json')
      .replace('"id":"142"', `"id":"${msg.id}"`)
      .replace(escapedTwice('http://127.0.0.1:8080'), escapedTwice(nc.url))
      .replace('ogNdZDd5KR2Ea4s', shareToken);
    assert.equal(shareToken.length, 15);
    assert.equal(raw, expected);

    // The chat keeps linking the file by id (capture 62, chatAfterShare).
    const chat = await call('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/8yx2ci2g?lookIntoFuture=0&limit=1&format=json', { user: 'alice' });
    assert.equal(chat.json().ocs.data[0].messageParameters.file.link, `${nc.url}/index.php/f/38`);

    const voice = nc.postMessage('8yx2ci2g', { actorType: 'users', actorId: 'alice' }, '{file}', {
      parameters: { actor, file: { ...file, id: '223', name: 'EducAI-voice.wav', mimetype: 'audio/wav' } },
      messageType: 'voice-message',
    });
    const voiceBody = JSON.parse(nc.webhookBodyFor(voice));
    assert.equal(voiceBody.type, 'Activity');
    assert.equal(voiceBody.object.name, 'file_shared');
  });

  it('carries no parent for replies (capture 64), the JSON pair as one-to-one target name (65), and guests (66)', async () => {
    await registerBot();
    acceptanceRoom('8yx2ci2g', 'EducAI more (public)', 3);
    nc.enableBotInRoom('8yx2ci2g', 'talk_bot');
    const question = nc.postMessage('8yx2ci2g', { actorType: 'users', actorId: 'alice' }, 'question');
    const reply = nc.postMessage('8yx2ci2g', { actorType: 'users', actorId: 'bob' }, 'Replying to alice', { replyTo: question.id });
    assert.equal(nc.webhookBodyFor(reply), readNc29WebhookRawBody('64-talk-webhook-reply.json').replace('"id":"145"', `"id":"${reply.id}"`));

    nc.addParticipant('8yx2ci2g', { actorType: 'guests', actorId: '84ecdb0a2f99cee1dbc01337b5c5dbb3b6e88996', participantType: 4, displayName: 'Gina Guest' });
    const guest = nc.postMessage('8yx2ci2g', { actorType: 'guests', actorId: '84ecdb0a2f99cee1dbc01337b5c5dbb3b6e88996' }, 'Hello from a guest');
    assert.equal(nc.webhookBodyFor(guest), readNc29WebhookRawBody('66-talk-webhook-guest.json').replace('"id":"147"', `"id":"${guest.id}"`));

    nc.createRoom({
      token: 'wejpid6q',
      name: 'bob',
      type: 1,
      participants: [
        { actorId: 'alice', participantType: 1 },
        { actorId: 'bob', participantType: 1 },
      ],
    });
    nc.enableBotInRoom('wejpid6q', 'talk_bot');
    const direct = nc.postMessage('wejpid6q', { actorType: 'users', actorId: 'alice' }, 'Hi bob, this is a one-to-one chat');
    assert.equal(nc.webhookBodyFor(direct), readNc29WebhookRawBody('65-talk-webhook-one-to-one.json').replace('"id":"146"', `"id":"${direct.id}"`));
  });

  it('sends system messages as Activity (captures 40-2, 67) and nothing for added reactions', async () => {
    const { secret } = await registerBot();
    acceptanceRoom('8yx2ci2g', 'EducAI more (public)', 3);
    nc.enableBotInRoom('8yx2ci2g', 'talk_bot');
    nc.removeParticipant('8yx2ci2g', 'bob', 'alice');
    const removed = nc.webhooks.at(-1);
    assert.equal(removed?.body, readNc29WebhookRawBody('67-talk-webhook-user-removed.json').replace('"id":"148"', `"id":"${removed?.messageId}"`));
    nc.addParticipant('8yx2ci2g', { actorId: 'bob', participantType: 3 }, 'alice');
    const added = nc.webhooks.at(-1);
    assert.equal(added?.body, readNc29WebhookRawBody('67-talk-webhook-user-added.json').replace('"id":"149"', `"id":"${added?.messageId}"`));
    nc.removeParticipant('8yx2ci2g', 'bob');
    const left = nc.webhooks.at(-1);
    assert.equal(left?.body, readNc29WebhookRawBody('67-talk-webhook-bob-leaves-room.json').replace('"id":"152"', `"id":"${left?.messageId}"`));

    const msg = nc.postMessage('8yx2ci2g', { actorType: 'users', actorId: 'alice' }, 'react to me');
    const before = nc.webhooks.length;
    const add = await botCall('POST', `/ocs/v2.php/apps/spreed/api/v1/bot/8yx2ci2g/reaction/${msg.id}`, secret, '🎓', { reaction: '🎓' });
    assert.equal(add.status, 201);
    assert.equal(nc.webhooks.length, before, 'adding a reaction sends nothing');
    const remove = await botCall('DELETE', `/ocs/v2.php/apps/spreed/api/v1/bot/8yx2ci2g/reaction/${msg.id}`, secret, '🎓', { reaction: '🎓' });
    assert.equal(remove.status, 200);
    const revoked = nc.webhooks.at(-1);
    const expected = readNc29WebhookRawBody('69-talk-webhooks-after-bot-replies.json')
      .replace('"id":"159"', `"id":"${revoked?.messageId}"`)
      .replace('bot-76a97956f40f974f0b4346b9b4f6e7de1e8cce76', botActorId());
    assert.equal(revoked?.body, expected);

    nc.editMessage('8yx2ci2g', msg.id, 'edited text');
    const edited = nc.webhooks.at(-1);
    const expectedEdit = readNc29Text('40-webhook-2-raw-body.json')
      .trim()
      .replace('"id":"137"', `"id":"${edited?.messageId}"`)
      .replace('"id":"9yzpkz6o","name":"EducAI acceptance"', '"id":"8yx2ci2g","name":"EducAI more (public)"');
    assert.equal(edited?.body, expectedEdit);
  });

  it('never sends webhooks for bot messages, nor to bots not enabled in the room', async () => {
    const { secret } = await registerBot();
    acceptanceRoom();
    nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'before the bot');
    assert.equal(nc.webhooks.length, 0);
    nc.enableBotInRoom('9yzpkz6o', 'talk_bot');
    const reply = await botCall('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o/message', secret, 'bot says', { message: 'bot says' });
    assert.equal(reply.status, 201);
    assert.equal(nc.webhooks.length, 0);
  });
});

describe('Talk bot endpoints (captures 41, 69)', () => {
  let secret = '';
  let question: FakeChatMessage;

  beforeEach(async () => {
    secret = (await registerBot()).secret;
    acceptanceRoom('8yx2ci2g', 'EducAI more (public)', 3);
    nc.createRoom({
      token: 'wejpid6q',
      name: 'bob',
      type: 1,
      participants: [
        { actorId: 'alice', participantType: 1 },
        { actorId: 'bob', participantType: 1 },
      ],
    });
    nc.enableBotInRoom('8yx2ci2g', 'talk_bot');
    nc.enableBotInRoom('wejpid6q', 'talk_bot');
    question = nc.postMessage('8yx2ci2g', { actorType: 'users', actorId: 'alice' }, 'Hello EducAI, what is 2+2?');
    nc.reset();
  });

  const path = (token = '8yx2ci2g'): string => `/ocs/v2.php/apps/spreed/api/v1/bot/${token}/message?format=json`;
  const body69 = (step: string): string => readNc29Exchange('69-talk-bot-replies.json', step).response.body;

  it('accepts a correctly signed reply with 201 and empty data, and appends it as the bot', async () => {
    const res = await botCall('POST', path(), secret, 'EducAI bot echo', { message: 'EducAI bot echo', replyTo: question.id });
    assert.equal(res.status, 201);
    assert.equal(res.text, readNc29Exchange('41-bot-reply-1.json').response.body);
    assert.deepEqual(nc.headerViolations, []);
    const last = nc.room('8yx2ci2g').messages.at(-1);
    assert.equal(last?.actorType, 'bots');
    assert.equal(last?.actorId, botActorId());
    assert.equal(last?.actorDisplayName, `${BOT_NAME} (Bot)`);
    assert.equal(last?.replyTo, question.id);
    assert.deepEqual(nc.botMessages, [
      { token: '8yx2ci2g', message: 'EducAI bot echo', replyTo: question.id, referenceId: null, silent: false, signatureValid: true, status: 201, at: T0 },
    ]);
  });

  it('accepts an upper-case signature (Talk lower-cases it)', async () => {
    const random = randomBytes(32).toString('hex');
    const res = await botCall('POST', path(), secret, 'x', { message: 'x' }, { random, signature: sign(secret, random, 'x').toUpperCase() });
    assert.equal(res.status, 201);
  });

  it('answers a bad signature with 401 and an empty message, and records it', async () => {
    const res = await botCall('POST', path(), secret, 'x', { message: 'x' }, { signature: 'deadbeef'.repeat(8) });
    assert.equal(res.status, 401);
    assert.equal(res.text, body69('botReplyBadSignature'));
    assert.equal(nc.botMessages[0]?.signatureValid, false);
    assert.match(nc.headerViolations[0] ?? '', /X-Nextcloud-Talk-Bot-Signature is not HMAC-SHA256/);
  });

  it('rejects a signature over a different text', async () => {
    const res = await botCall('POST', path(), secret, 'what was signed', { message: 'what was sent' });
    assert.equal(res.status, 401);
  });

  it('answers empty with 400, 32001 code points with 413, and exactly 32000 with 201', async () => {
    const empty = await botCall('POST', path(), secret, '', { message: '' });
    assert.equal(empty.status, 400);
    assert.equal(empty.text, body69('botReplyEmpty'));
    const long = '🎓'.repeat(32001);
    const tooLong = await botCall('POST', path(), secret, long, { message: long });
    assert.equal(tooLong.status, 413);
    assert.equal(tooLong.text, body69('botReplyTooLong32001'));
    const max = '🎓'.repeat(32000);
    const exact = await botCall('POST', path(), secret, max, { message: max });
    assert.equal(exact.status, 201);
  });

  it('answers a reply to a message of another room with 400', async () => {
    const res = await botCall('POST', path('wejpid6q'), secret, 'cross-room reply', { message: 'cross-room reply', replyTo: question.id });
    assert.equal(res.status, 400);
    assert.equal(res.text, body69('botReplyToMessageInOtherRoom'));
  });

  it('answers 401 when the bot is not enabled in the room', async () => {
    nc.createRoom({ token: 'quietroom', name: 'Quiet', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] });
    const res = await botCall('POST', path('quietroom'), secret, 'hello', { message: 'hello' });
    assert.equal(res.status, 401);
    assert.match(nc.headerViolations[0] ?? '', /not enabled in room quietroom/);
  });

  it('shows silent and referenceId only where set, like capture 69', async () => {
    const captured = readNc29Exchange('69-talk-bot-replies.json', 'botReplySilentWithReferenceId');
    const sent = JSON.parse(captured.request.body ?? '{}');
    await botCall('POST', path(), secret, sent.message, { ...sent, replyTo: question.id });
    await botCall('POST', path(), secret, 'Bot reply (not silent)', { message: 'Bot reply (not silent)' });
    const chat = await call('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/8yx2ci2g?lookIntoFuture=0&limit=2&format=json', { user: 'alice' });
    const [plain, silent] = chat.json().ocs.data;
    assert.equal(plain.referenceId, '');
    assert.equal('silent' in plain, false);
    assert.equal(silent.silent, true);
    assert.equal(silent.referenceId, sent.referenceId);
    assert.equal(silent.parent.id, question.id);
    assert.equal(nc.botMessages[0]?.silent, true);
  });

  it('adds (201), repeats (200) and removes (200) reactions signed over the emoji', async () => {
    const reactionPath = `/ocs/v2.php/apps/spreed/api/v1/bot/8yx2ci2g/reaction/${question.id}?format=json`;
    assert.equal((await botCall('POST', reactionPath, secret, '🎓', { reaction: '🎓' })).text, body69('botReactionAdd'));
    assert.equal((await botCall('POST', reactionPath, secret, '🎓', { reaction: '🎓' })).text, body69('botReactionAddAgain'));
    assert.deepEqual([...question.reactions.keys()], ['🎓']);
    assert.equal((await botCall('DELETE', reactionPath, secret, '🎓', { reaction: '🎓' })).text, body69('botReactionRemove'));
    assert.equal(question.reactions.size, 0);
    assert.equal((await botCall('DELETE', reactionPath, secret, '🎓', { reaction: '🎓' })).status, 404);
    assert.equal((await botCall('POST', reactionPath, secret, 'not-signed', { reaction: '👍' })).status, 401);
    assert.deepEqual(
      nc.botReactions.map((r) => r.status),
      [201, 200, 200, 404, 401],
    );
  });
});

describe('Talk chat as a user', () => {
  it('reads the chat like captures 43 and 52 after a bot reply, an edit and a reaction', async () => {
    const { secret } = await registerBot();
    acceptanceRoom();
    nc.enableBotInRoom('9yzpkz6o', 'talk_bot');
    const question = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'Hello EducAI, what is 2+2?');
    const echo = 'EducAI bot echo: Hello EducAI, what is 2+2?';
    await botCall('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o/message', secret, echo, { message: echo, replyTo: question.id });

    const first = await call('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o?lookIntoFuture=0&limit=10&format=json', { user: 'alice' });
    assert.deepEqual(normalize(first.json()), normalize(readNc29Json('43-talk-read-chat-as-alice.json')));

    clock += 1000;
    const botMessageId = question.id + 1;
    const editStep = readNc29Exchange('50-bot-edit-attempts.json', 'chatEditWithAppApiAsAlice');
    const edit = await call('PUT', `/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o/${botMessageId}?format=json`, {
      user: 'alice',
      body: editStep.request.body ?? '',
    });
    assert.equal(edit.status, 202);
    assert.deepEqual(normalize(edit.json()), normalize(JSON.parse(editStep.response.body)));
    const react = await botCall('POST', `/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o/reaction/${botMessageId}`, secret, '👍', { reaction: '👍' });
    assert.equal(react.status, 201);

    const after = await call('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o?lookIntoFuture=0&limit=10&format=json', { user: 'alice' });
    assert.deepEqual(normalize(after.json()), normalize(readNc29Json('52-talk-read-chat-after-edit-attempts.json')));
    // PHP escapes the emoji in the JSON text, as in the capture.
    assert.ok(after.text.includes('"\\ud83d\\udc4d":1'));
    assert.equal(after.headers.get('x-chat-last-given'), String(after.json().ocs.data.at(-1).id));
  });

  it('refuses edits and deletes without a participant user (capture 50), and edits by non-moderators of others', async () => {
    acceptanceRoom();
    const msg = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'mine');
    const chatPath = `/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o/${msg.id}?format=json`;
    for (const user of [null, '']) {
      const put = await call('PUT', chatPath, { user, body: { message: 'x' } });
      assert.equal(put.status, 404);
      assert.equal(put.text, NOT_FOUND_404);
      const del = await call('DELETE', chatPath, { user });
      assert.equal(del.status, 404);
    }
    const byBob = await call('PUT', chatPath, { user: 'bob', body: { message: 'x' } });
    assert.equal(byBob.status, 403);
  });

  it('posts as the header user with replyTo, referenceId and silent', async () => {
    acceptanceRoom();
    const q = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'question');
    const res = await call('POST', '/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o?format=json', {
      user: 'bob',
      body: { message: 'answer', replyTo: q.id, referenceId: 'ref-1', silent: true },
    });
    assert.equal(res.status, 201);
    const data = res.json().ocs.data;
    assert.equal(data.actorId, 'bob');
    assert.equal(data.referenceId, 'ref-1');
    assert.equal(data.silent, true);
    assert.equal(data.parent.id, q.id);
    assert.ok(data.id > q.id, 'message ids increase');
    const other = nc.createRoom({ token: 'otherroom', name: 'Other', type: 2, participants: [{ actorId: 'bob', participantType: 1 }] });
    const cross = await call('POST', `/ocs/v2.php/apps/spreed/api/v1/chat/${other.token}?format=json`, { user: 'bob', body: { message: 'x', replyTo: q.id } });
    assert.equal(cross.status, 400);
    const outsider = await call('POST', `/ocs/v2.php/apps/spreed/api/v1/chat/${other.token}?format=json`, { user: 'alice', body: { message: 'x' } });
    assert.equal(outsider.status, 404);
    const tooLong = await call('POST', '/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o?format=json', { user: 'alice', body: { message: 'x'.repeat(32001) } });
    assert.equal(tooLong.status, 413);
    assert.equal(tooLong.text, readNc29Exchange('68-talk-long-message.json', 'alicePosts32001Chars').response.body);
  });

  it('pages history with lastKnownMessageId and answers 304 when nothing is left', async () => {
    acceptanceRoom();
    const a = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'a');
    const b = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'b');
    const page = await call('GET', `/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o?lookIntoFuture=0&limit=1&lastKnownMessageId=${b.id}&format=json`, {
      user: 'alice',
    });
    assert.deepEqual(
      page.json().ocs.data.map((m: { id: number }) => m.id),
      [a.id],
    );
    const future = await call('GET', `/ocs/v2.php/apps/spreed/api/v1/chat/9yzpkz6o?lookIntoFuture=1&lastKnownMessageId=${b.id}&format=json`, { user: 'alice' });
    assert.equal(future.status, 304);
  });
});

describe('Talk chat context', () => {
  const contextPath = (token: string, id: number, limit: number): string =>
    `/ocs/v2.php/apps/spreed/api/v1/chat/${token}/${id}/context?limit=${limit}&format=json`;

  it('returns the message with its neighbours, oldest first, in the chat-API shape with parent', async () => {
    acceptanceRoom();
    const ids = ['one', 'two', 'three', 'four', 'five'].map((t) => nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, t).id);
    const reply = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'bob' }, 'six', { replyTo: ids[0] });
    const res = await call('GET', contextPath('9yzpkz6o', ids[2] ?? 0, 2), { user: 'bob' });
    assert.equal(res.status, 200);
    const data = res.json().ocs.data;
    assert.deepEqual(
      data.map((m: { id: number }) => m.id),
      [ids[1], ids[2], ids[3], ids[4]],
    );
    const chatShape = readNc29Json<{ ocs: { data: unknown[] } }>('43-talk-read-chat-as-alice.json').ocs.data[1];
    assertSameShape(data[0], chatShape);

    const around = await call('GET', contextPath('9yzpkz6o', reply.id, 1), { user: 'alice' });
    const last = around.json().ocs.data.at(-1);
    assert.equal(last.id, reply.id);
    assert.equal(last.parent.id, ids[0]);
    assert.equal(last.parent.message, 'one');
  });

  it('answers 404 for a message of another room, an unknown message, a non-participant and the system user', async () => {
    acceptanceRoom();
    nc.createRoom({ token: 'otherroom', name: 'Other', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] });
    const inOther = nc.postMessage('otherroom', { actorType: 'users', actorId: 'alice' }, 'elsewhere');
    const here = nc.postMessage('9yzpkz6o', { actorType: 'users', actorId: 'alice' }, 'here');
    nc.addUser({ id: 'carol', displayName: 'Carol', groups: [] });
    const cases: Array<[string, number, string]> = [
      ['9yzpkz6o', inOther.id, 'alice'],
      ['9yzpkz6o', inOther.id + 1000, 'alice'],
      ['9yzpkz6o', here.id, 'carol'],
      ['otherroom', inOther.id, 'bob'],
      ['9yzpkz6o', here.id, ''],
    ];
    for (const [token, id, user] of cases) {
      const res = await call('GET', contextPath(token, id, 5), { user });
      assert.equal(res.status, 404, `${token}/${id} as "${user}"`);
      assert.equal(res.text, NOT_FOUND_404);
    }
  });
});

describe('Talk rooms and bot management', () => {
  it('lists rooms with the keys of capture 32 and names one-to-one rooms after the other user', async () => {
    acceptanceRoom();
    nc.createRoom({
      token: 'wejpid6q',
      name: 'bob',
      type: 1,
      participants: [
        { actorId: 'alice', participantType: 1 },
        { actorId: 'bob', participantType: 1 },
      ],
    });
    nc.createRoom({ token: 'fresh', name: 'Fresh', type: 2, participants: [{ actorId: 'alice', participantType: 1 }] });
    const res = await call('GET', '/ocs/v2.php/apps/spreed/api/v4/room?format=json', { user: 'alice' });
    const [group, direct, fresh] = res.json().ocs.data;
    // Capture 32 is a room just created: its lastMessage is "conversation_created".
    const captured = readNc29Json<{ ocs: { data: Record<string, unknown> } }>('32-talk-create-room.json').ocs.data;
    assertSameShape(fresh, captured);
    assert.deepEqual(normalize(fresh.lastMessage), normalize({ ...(captured['lastMessage'] as object), token: 'fresh' }));
    assert.equal(group.token, '9yzpkz6o');
    assert.equal(group.type, 2);
    assert.equal(group.participantType, 1);
    assert.equal(group.lastMessage.systemMessage, 'user_added');
    assert.equal(direct.name, 'bob');
    assert.equal(direct.displayName, 'Bob');
    const asBob = await call('GET', '/ocs/v2.php/apps/spreed/api/v4/room/wejpid6q?format=json', { user: 'bob' });
    assert.equal(asBob.json().ocs.data.name, 'alice');
    assert.equal(asBob.json().ocs.data.displayName, 'Alice');

    const single = await call('GET', '/ocs/v2.php/apps/spreed/api/v4/room/9yzpkz6o?format=json', { user: 'bob' });
    assert.equal(single.json().ocs.data.participantType, 3);
    nc.addUser({ id: 'carol', displayName: 'Carol', groups: [] });
    assert.equal((await call('GET', '/ocs/v2.php/apps/spreed/api/v4/room/9yzpkz6o', { user: 'carol' })).status, 404);
    assert.equal((await call('GET', '/ocs/v2.php/apps/spreed/api/v4/room', { user: '' })).status, 401);

    const participants = await call('GET', '/ocs/v2.php/apps/spreed/api/v4/room/9yzpkz6o/participants?format=json', { user: 'bob' });
    assert.deepEqual(
      participants.json().ocs.data.map((p: { actorId: string; participantType: number }) => [p.actorId, p.participantType]),
      [
        ['alice', 1],
        ['bob', 3],
      ],
    );
  });

  it('lets a moderator enable and disable the bot like captures 33 and 60', async () => {
    await registerBot();
    acceptanceRoom();
    const botsPath = '/ocs/v2.php/apps/spreed/api/v1/bot/9yzpkz6o';
    const list = await call('GET', `${botsPath}?format=json`, { user: 'alice' });
    assert.deepEqual(normalize(list.json()), normalize(readNc29Json('33-talk-room-bot-list.json')));
    const talkBotId = list.json().ocs.data[0].id as number;

    const enable = await call('POST', `${botsPath}/${talkBotId}?format=json`, { user: 'alice' });
    assert.equal(enable.status, 201);
    assert.deepEqual(normalize(enable.json()), normalize(readNc29Json('33-talk-enable-bot.json')));
    assert.equal((await call('POST', `${botsPath}/${talkBotId}`, { user: 'alice' })).status, 200);
    assert.equal((await call('POST', `${botsPath}/${talkBotId}`, { user: 'bob' })).status, 403);
    assert.equal((await call('POST', `${botsPath}/999`, { user: 'alice' })).json().ocs.data.error, 'bot');
    assert.deepEqual([...nc.room('9yzpkz6o').enabledBots], [talkBotId]);

    const disable = await call('DELETE', `${botsPath}/${talkBotId}?format=json`, { user: 'alice' });
    assert.equal(disable.json().ocs.data.state, 0);
    assert.equal(nc.room('9yzpkz6o').enabledBots.size, 0);

    const admin = await call('GET', '/ocs/v2.php/apps/spreed/api/v1/bot/admin?format=json', { user: 'admin' });
    const adminList = admin.json().ocs.data;
    assertSameShape(adminList, readNc29Json<{ ocs: { data: unknown } }>('31-talk-bot-admin-list.json').ocs.data);
    assert.equal(adminList[0].url, `${nc.url}/ocs/v2.php/apps/app_api/api/v1/talk_proxy/${APP_ID}/talk_bot`);
  });
});

describe('failure injection and recording', () => {
  it('fails the next matching calls, then answers normally', async () => {
    nc.failNext({ method: 'GET', path: /\/cloud\/user$/ }, { status: 503, body: 'maintenance' }, 2);
    const a = await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice' });
    const b = await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice' });
    const c = await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice' });
    assert.deepEqual([a.status, a.text, b.status, c.status], [503, 'maintenance', 503, 200]);
    assert.deepEqual(
      nc.calls.map((x) => x.status),
      [503, 503, 200],
    );
  });

  it('only fails calls that match method and path', async () => {
    nc.failNext({ method: 'POST', path: /\/cloud\/user$/ }, { status: 500 });
    assert.equal((await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice' })).status, 200);
  });

  it('still answers delayed calls correctly', async () => {
    nc.delay({ path: /\/cloud\/user$/ }, 5);
    nc.failNext({ path: /\/cloud\/capabilities$/ }, { status: 502, delayMs: 5 });
    assert.equal((await call('GET', '/ocs/v2.php/cloud/user', { user: 'alice' })).status, 200);
    assert.equal((await call('GET', '/ocs/v2.php/cloud/capabilities', { user: 'alice' })).status, 502);
  });

  it('records the body and query, and reset() clears calls and violations', async () => {
    await call('PUT', '/ocs/v1.php/apps/app_api/ex-app/status?format=json', { body: { progress: 5 }, omit: ['EX-APP-VERSION'] });
    const recorded = nc.calls[0];
    assert.equal(recorded?.body, '{"progress":5}');
    assert.equal(recorded?.query.get('format'), 'json');
    assert.equal(nc.headerViolations.length, 1);
    nc.reset();
    assert.equal(nc.calls.length, 0);
    assert.equal(nc.headerViolations.length, 0);
  });
});
