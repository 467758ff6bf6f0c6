// The one fake Nextcloud of the test suite: a real HTTP server that checks the AppAPI
// header contract on every call, records everything, and answers like NC 29 / AppAPI 3.2.3 / Talk 19.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, timingSafeEqual } from 'node:crypto';
import { FakeAppApi } from './appapi.ts';
import { FakeWebhookListeners } from './webhook-listeners.ts';
import type { FakeUiRegistry, RegisteredTalkBot } from './appapi.ts';
import { capturedCapabilitiesBody } from './fixtures.ts';
import { csrfFailed, invalidQuery, methodNotAllowed, notLoggedIn, ocsFailure, ocsFormatOf, ocsVersionOf } from './ocs.ts';
import type { FakeReply, OcsFormat, OcsVersion } from './ocs.ts';
import { FakeTalk } from './talk.ts';
import type {
  BotMessageRecord,
  BotReactionRecord,
  CreateRoomOptions,
  FakeChatMessage,
  FakeParticipant,
  FakeRoom,
  MessageActor,
  ParticipantType,
  PostMessageOptions,
  WebhookDelivery,
  WebhookHandler,
} from './talk.ts';
import { DEFAULT_USERS, UserDirectory, userRoutes } from './users.ts';
import { teamsGroupsRoutes } from './teams-groups.ts';
import { FakeDav } from './dav.ts';
import { FakeDeck } from './deck.ts';
import { FakeCollectivesStore } from './collectives-store.ts';
import { handleCollectivesV2, handlesCollectivesWeb } from './collectives-v2.ts';
import { collectivesV3Routes } from './collectives-v3.ts';
import { FakeWebSessions } from './web-sessions.ts';
import type { FakeUser } from './users.ts';

export { FakeRoom, botSignature, sha1Hex, MAX_CHAT_LENGTH } from './talk.ts';
export type {
  FakeChatMessage,
  FakeParticipant,
  TalkBot,
  BotMessageRecord,
  BotReactionRecord,
  WebhookDelivery,
  WebhookHandler,
  CreateRoomOptions,
  PostMessageOptions,
  MessageActor,
} from './talk.ts';
export type { FakeUser } from './users.ts';
export type { FakeUiRegistry, RegisteredTalkBot } from './appapi.ts';
export type { FakeReply } from './ocs.ts';

export interface RecordedCall {
  method: string;
  /** Path without the query string. */
  path: string;
  query: URLSearchParams;
  /** Decoded from AUTHORIZATION-APP-API ('' = no user); null if absent or invalid. */
  user: string | null;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
  status: number;
}

export interface RouteContext {
  version: OcsVersion;
  format: OcsFormat;
  /** The AppAPI user when the header was valid ('' = no user), else null (anonymous). */
  user: string | null;
  /** Query parameters merged with the decoded body, like Nextcloud's IRequest. */
  params: Record<string, unknown>;
  query: URLSearchParams;
  headers: Record<string, string>;
  rawBody: string;
  now: () => number;
  /** Adds a contract problem found while handling (e.g. a bad bot signature). */
  violation: (problem: string) => void;
}

export interface FakeRoute {
  method: string;
  /** Matched against the path after /ocs/v1.php or /ocs/v2.php. */
  path: RegExp;
  /**
   * appapi: AppAPI's own #[AppAPIAuth] routes; login: needs a logged-in user;
   * public: #[PublicPage] (Talk then checks participation); bot: Talk bot endpoints.
   */
  access: 'appapi' | 'login' | 'public' | 'bot';
  /** Whether the route needs the CSRF bypass (OCS-APIRequest). */
  csrf: boolean;
  handle: (ctx: RouteContext, match: RegExpExecArray) => FakeReply | Promise<FakeReply>;
}

export interface FakeNextcloudOptions {
  appId: string;
  appSecret: string;
  appVersion?: string;
  /** Defaults to the captures' admin, alice and bob. */
  users?: FakeUser[];
  /** Clock in ms for message timestamps and records; defaults to Date.now. */
  now?: () => number;
  /**
   * Which real server the fake answers like where they differ (docs/NEXTCLOUD_VERSIONS.md):
   * 29 (default; test/fixtures/nextcloud29/: Talk 19, Deck 1.13, no Collectives) or 33
   * (test/fixtures/nextcloud33/: Talk 21 webhooks, Deck 1.17, Collectives 4.5 mounted at `.Collectives`,
   * NC 33 capabilities, an existing share returned for a repeated create).
   */
  version?: NextcloudVersion;
}

export type NextcloudVersion = 29 | 33;

export interface RequestMatch {
  method?: string;
  /** Tested against the path without the query string. */
  path: RegExp;
}

export interface InjectedResponse {
  status: number;
  body?: string;
  delayMs?: number;
}

const BOT_ENDPOINT = /^\/ocs\/v[12]\.php\/apps\/spreed\/api\/v1\/bot\/[^/]+\/(message|reaction\/\d+)$/;
const APPAPI_HEADERS = ['ex-app-id', 'ex-app-version', 'authorization-app-api'];

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected)) && given.length === expected.length;
}

function flattenHeaders(raw: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function paramsFrom(query: URLSearchParams, headers: Record<string, string>, rawBody: string): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  const addPair = (k: string, v: string): void => {
    if (k.endsWith('[]')) {
      const key = k.slice(0, -2);
      const list = Array.isArray(params[key]) ? (params[key] as unknown[]) : [];
      list.push(v);
      params[key] = list;
    } else {
      params[k] = v;
    }
  };
  for (const [k, v] of query) addPair(k, v);
  const type = headers['content-type'] ?? '';
  if (rawBody !== '' && type.includes('application/json')) {
    try {
      const parsed: unknown = JSON.parse(rawBody);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(params, parsed);
    } catch {
      // Nextcloud ignores a body it cannot decode.
    }
  } else if (rawBody !== '' && type.includes('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(rawBody)) addPair(k, v);
  }
  return params;
}

function matches(m: RequestMatch, method: string, path: string): boolean {
  if (m.method !== undefined && m.method.toUpperCase() !== method) return false;
  m.path.lastIndex = 0;
  return m.path.test(path);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class FakeNextcloud {
  readonly url: string;
  readonly appId: string;
  readonly appVersion: string;
  readonly version: NextcloudVersion;
  readonly calls: RecordedCall[] = [];
  /** Benchmarks switch this off: thousands of recorded calls only cost the fake memory and GC. */
  recordCalls = true;
  readonly headerViolations: string[] = [];
  readonly users: UserDirectory;
  readonly appApi: FakeAppApi;
  readonly talk: FakeTalk;
  readonly dav: FakeDav;
  readonly deck: FakeDeck;
  /** Web sessions (csrftoken, capture 91) and the Collectives app; `collectives.generation` picks 2.x, 3.x or none. */
  readonly webSessions = new FakeWebSessions();
  readonly collectives: FakeCollectivesStore;
  /** webhook_listeners (NC 30+): off by default like NC 29; `available = true` offers it. */
  readonly webhookListeners: FakeWebhookListeners;

  readonly #server: http.Server;
  readonly #secret: string;
  readonly #now: () => number;
  readonly #routes: FakeRoute[];
  readonly #failures: Array<{ match: RequestMatch; response: InjectedResponse; remaining: number }> = [];
  readonly #delays: Array<{ match: RequestMatch; ms: number }> = [];
  #capabilities: unknown = null;

  private constructor(opts: FakeNextcloudOptions, server: http.Server, url: string) {
    this.url = url;
    this.appId = opts.appId;
    this.appVersion = opts.appVersion ?? '1.0.0';
    this.version = opts.version ?? 29;
    this.#server = server;
    this.#secret = opts.appSecret;
    this.#now = opts.now ?? Date.now;
    this.users = new UserDirectory();
    for (const u of opts.users ?? DEFAULT_USERS) this.users.add(u);
    this.talk = new FakeTalk(this.users, opts.appId, this.#now);
    this.appApi = new FakeAppApi(opts.appId, this.talk, this.users, this.#now);
    this.dav = new FakeDav(this.users, this.#now, () => this.url);
    this.deck = new FakeDeck(this.users, this.#now);
    this.collectives = new FakeCollectivesStore(this.dav.files, this.users, this.#now);
    this.webhookListeners = new FakeWebhookListeners(this.users, { id: opts.appId, version: this.appVersion, secret: opts.appSecret }, this.#now);
    this.dav.files.onNodeEvent = (e) => this.webhookListeners.nodeEvent(e);
    if (this.version === 33) {
      this.talk.talkVersion = 21;
      this.deck.version = '1.17.4';
      this.collectives.generation = 3;
      this.collectives.defaultUserFolder = '.Collectives';
      this.dav.sharing.returnsExistingShare = true;
    }
    this.#routes = [
      ...this.appApi.routes(() => this.url),
      ...teamsGroupsRoutes(this.users, this.talk, this.#now),
      ...userRoutes(this.users, () => this.#capabilitiesData()),
      ...this.talk.routes(),
      ...this.dav.ocsRoutes(),
      ...this.deck.ocsRoutes(),
      ...collectivesV3Routes(this.collectives),
      ...this.webhookListeners.routes(),
    ];
  }

  static async start(opts: FakeNextcloudOptions): Promise<FakeNextcloud> {
    let fake: FakeNextcloud | null = null;
    const server = http.createServer((req, res) => {
      if (!fake) {
        res.writeHead(503).end();
        return;
      }
      fake.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`fake nextcloud crashed: ${err instanceof Error ? err.stack : String(err)}`);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    fake = new FakeNextcloud(opts, server, `http://127.0.0.1:${port}`);
    return fake;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  /** The AUTHORIZATION-APP-API value a correct ExApp sends for `uid` ('' = no user). */
  authHeaderFor(uid: string): string {
    return Buffer.from(`${uid}:${this.#secret}`, 'utf8').toString('base64');
  }

  addUser(u: FakeUser): void {
    this.users.add(u);
  }

  // --- AppAPI state ---

  get statusReports(): Array<{ progress: number; error?: string }> {
    return this.appApi.statusReports;
  }
  get logs(): Array<{ level: number; message: string }> {
    return this.appApi.logs;
  }
  get talkBots(): Map<string, RegisteredTalkBot> {
    return this.appApi.talkBots;
  }
  get ui(): FakeUiRegistry {
    return this.appApi.ui;
  }
  get appConfig(): Map<string, string> {
    return this.appApi.appConfig;
  }
  get preferences(): Map<string, Map<string, string>> {
    return this.appApi.preferences;
  }
  get notifications(): Array<{ user: string; params: object }> {
    return this.appApi.notifications;
  }

  // --- Talk ---

  createRoom(opts: CreateRoomOptions): FakeRoom {
    return this.talk.createRoom(opts);
  }
  room(token: string): FakeRoom {
    return this.talk.room(token);
  }
  addParticipant(
    token: string,
    p: { actorType?: 'users' | 'guests'; actorId: string; participantType: ParticipantType; displayName?: string },
    addedBy?: string,
  ): FakeParticipant {
    return this.talk.addParticipant(token, p, addedBy);
  }
  removeParticipant(token: string, actorId: string, removedBy?: string): void {
    this.talk.removeParticipant(token, actorId, removedBy);
  }
  postMessage(token: string, actor: MessageActor, message: string, opts?: PostMessageOptions): FakeChatMessage {
    return this.talk.postMessage(token, actor, message, opts);
  }
  editMessage(token: string, messageId: number, newText: string, editor?: { actorType?: 'users'; actorId: string }): void {
    this.talk.editMessage(token, messageId, newText, editor);
  }
  webhookBodyFor(msg: FakeChatMessage, opts?: { route?: string }): string {
    return this.talk.webhookBodyFor(msg, opts);
  }
  enableBotInRoom(token: string, route: string): void {
    this.talk.enableBotInRoom(token, route);
  }
  get botMessages(): BotMessageRecord[] {
    return this.talk.botMessages;
  }
  get botReactions(): BotReactionRecord[] {
    return this.talk.botReactions;
  }
  /** Every webhook Talk would have sent to an enabled bot, in order. */
  get webhooks(): WebhookDelivery[] {
    return this.talk.webhooks;
  }
  /** Deliver webhooks as they happen (awaited inside the poster's HTTP request, like Talk). */
  onWebhook(handler: WebhookHandler | null): void {
    this.talk.webhookHandler = handler;
  }

  // --- failure injection ---

  failNext(match: RequestMatch, response: InjectedResponse, times = 1): void {
    this.#failures.push({ match, response, remaining: times });
  }

  delay(match: RequestMatch, ms: number): void {
    this.#delays.push({ match, ms });
  }

  clearInjections(): void {
    this.#failures.length = 0;
    this.#delays.length = 0;
  }

  reset(): void {
    this.calls.length = 0;
    this.headerViolations.length = 0;
  }

  // --- request handling ---

  #capabilitiesData(): unknown {
    if (this.#capabilities === null) {
      this.#capabilities = (JSON.parse(capturedCapabilitiesBody(this.url, this.version)) as { ocs: { data: unknown } }).ocs.data;
    }
    return this.#capabilities;
  }

  #authenticate(h: Record<string, string>): { user: string | null; problems: string[] } {
    const problems: string[] = [];
    const id = h['ex-app-id'];
    const version = h['ex-app-version'];
    const auth = h['authorization-app-api'];
    if (id === undefined) problems.push('EX-APP-ID missing');
    else if (id !== this.appId) problems.push(`EX-APP-ID is "${id}", expected "${this.appId}"`);
    if (version === undefined || version.trim() === '') problems.push('EX-APP-VERSION missing or empty');
    let uid: string | null = null;
    if (auth === undefined || auth === '') {
      problems.push('AUTHORIZATION-APP-API missing');
    } else {
      const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(auth) ? Buffer.from(auth, 'base64').toString('utf8') : '';
      const colon = decoded.indexOf(':');
      if (colon < 0) {
        problems.push('AUTHORIZATION-APP-API is not base64("<uid>:<secret>")');
      } else if (!sameSecret(decoded.slice(colon + 1), this.#secret)) {
        problems.push('AUTHORIZATION-APP-API carries a wrong secret');
      } else {
        uid = decoded.slice(0, colon);
        if (uid !== '' && !this.users.has(uid)) {
          problems.push(`AUTHORIZATION-APP-API names unknown user "${uid}"`);
          uid = null;
        }
      }
    }
    // AppAPI's validateExAppRequestToNC fails as a whole: the request continues anonymously.
    return { user: problems.length === 0 ? uid : null, problems };
  }

  #contractProblems(path: string, url: URL, h: Record<string, string>, isBot: boolean, authProblems: string[]): string[] {
    const problems: string[] = [];
    const ocs = ocsVersionOf(path) !== null;
    if (isBot) {
      for (const name of APPAPI_HEADERS) if (h[name] !== undefined) problems.push(`bot endpoint carries AppAPI header ${name.toUpperCase()}`);
      const random = h['x-nextcloud-talk-bot-random'];
      if (random === undefined) problems.push('X-Nextcloud-Talk-Bot-Random missing');
      else if (Buffer.byteLength(random, 'utf8') < 32) problems.push('X-Nextcloud-Talk-Bot-Random shorter than 32 characters');
      if (h['x-nextcloud-talk-bot-signature'] === undefined) problems.push('X-Nextcloud-Talk-Bot-Signature missing');
    } else {
      problems.push(...authProblems);
    }
    if (ocs && h['ocs-apirequest'] !== 'true') problems.push('OCS-APIRequest: true missing');
    if (ocs && url.searchParams.get('format') !== 'json' && !(h['accept'] ?? '').includes('application/json')) {
      problems.push('no JSON requested (Accept: application/json or format=json)');
    }
    if (h['authorization'] !== undefined) problems.push('Authorization header sent');
    if (h['cookie'] !== undefined && !this.webSessions.allowsCookie(path, h['cookie'])) problems.push('Cookie header sent');
    return problems;
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const method = (req.method ?? 'GET').toUpperCase();
    const url = new URL(req.url ?? '/', this.url);
    const path = url.pathname;
    const headers = flattenHeaders(req.headers);
    const isBot = BOT_ENDPOINT.test(path);

    const auth = this.#authenticate(headers);
    const problems = this.#contractProblems(path, url, headers, isBot, auth.problems);
    const user = isBot ? null : auth.user;

    for (const d of this.#delays) if (matches(d.match, method, path)) await sleep(d.ms);

    let reply: FakeReply;
    const injected = this.#failures.find((f) => f.remaining > 0 && matches(f.match, method, path));
    if (injected) {
      injected.remaining--;
      if (injected.response.delayMs) await sleep(injected.response.delayMs);
      const body = injected.response.body ?? '';
      const type = /^\s*[[{]/.test(body) ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8';
      reply = { status: injected.response.status, headers: { 'content-type': type }, body };
    } else {
      const web = this.webSessions.check(headers['cookie'], user);
      if (web.kind === 'foreign') {
        // A controller would act as the session's user: never let a stale jar run as someone else.
        this.webSessions.refused.push({ session: web.session.id, owner: web.session.uid, sentAs: user, path });
        problems.push(`session cookie of ${web.session.uid} sent as ${user ?? 'nobody'}`);
        reply = { status: 401, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"message":"Current user is not logged in"}' };
      } else {
        reply = await this.#dispatch(method, path, url, headers, rawBody, user, auth.problems.length === 0, problems);
      }
    }

    if (problems.length > 0) this.headerViolations.push(`${method} ${path}: ${problems.join('; ')}`);
    if (this.recordCalls) this.calls.push({ method, path, query: url.searchParams, user, headers, body: rawBody, status: reply.status });
    res.writeHead(reply.status, reply.setCookies ? { ...reply.headers, 'set-cookie': reply.setCookies } : reply.headers);
    res.end(reply.status === 304 || reply.status === 204 ? undefined : reply.body);
  }

  async #dispatch(
    method: string,
    path: string,
    url: URL,
    headers: Record<string, string>,
    rawBody: string,
    user: string | null,
    appApiValid: boolean,
    problems: string[],
  ): Promise<FakeReply> {
    if (this.dav.handles(path)) return this.dav.handle(method, path, headers, rawBody, user);
    if (this.deck.handles(path)) return this.deck.handleRest(method, path, headers, rawBody, user, (p) => problems.push(p));
    if (path === '/index.php/csrftoken') return this.webSessions.handleCsrfToken(method, user, headers['cookie']);
    if (handlesCollectivesWeb(path)) return handleCollectivesV2(this.collectives, this.webSessions, method, path, headers, rawBody, user);
    const version = ocsVersionOf(path);
    if (version === null) {
      return { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `not served by the fake Nextcloud: ${path}` };
    }
    const format = ocsFormatOf(url.searchParams, headers['accept']);
    const inner = path.slice('/ocs/v1.php'.length);
    let pathKnown = false;
    for (const route of this.#routes) {
      route.path.lastIndex = 0;
      const m = route.path.exec(inner);
      if (!m) continue;
      pathKnown = true;
      if (route.method !== method) continue;
      // SecurityMiddleware order: login first, then the CSRF check; AppAPI's own middleware after it.
      if (route.access === 'login' && (user === null || user === '')) {
        return notLoggedIn(version, format);
      }
      if (route.csrf && (headers['ocs-apirequest'] ?? '') === '') return csrfFailed();
      if (route.access === 'appapi' && !appApiValid) return ocsFailure(version, format, 997, 'AppAPI authentication failed');
      const ctx: RouteContext = {
        version,
        format,
        user,
        params: paramsFrom(url.searchParams, headers, rawBody),
        query: url.searchParams,
        headers,
        rawBody,
        now: this.#now,
        violation: (p) => problems.push(p),
      };
      return route.handle(ctx, m);
    }
    return pathKnown ? methodNotAllowed(format) : invalidQuery(version, format);
  }
}
