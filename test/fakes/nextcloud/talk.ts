// Talk (spreed 19): rooms, chat, bots, and the webhook AppAPI forwards (captures 24, 32–34, 40–43, 50–52, 60–69).
// Reactions by users, and the Like/Undo webhooks of a bot with the `reaction` feature, as Talk 21 does them
// (test/fixtures/nextcloud33/talk-21-reactions.json).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ocsData, ocsFailure, phpJson } from './ocs.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';
import type { UserDirectory } from './users.ts';

export type ActorType = 'users' | 'guests' | 'bots';
export type ParticipantType = 1 | 2 | 3 | 4 | 5 | 6;
// 1 one-to-one, 2 group, 3 public, 5 former one-to-one (Room::TYPE_*).
export type RoomType = 1 | 2 | 3 | 5;

export interface FakeParticipant {
  attendeeId: number;
  actorType: 'users' | 'guests';
  actorId: string;
  displayName: string;
  participantType: ParticipantType;
}

export interface FakeChatMessage {
  readonly id: number;
  readonly token: string;
  readonly actorType: ActorType;
  readonly actorId: string;
  /** Stored name; users are rendered with their current display name. */
  readonly actorDisplayName: string;
  /** Seconds, like Talk. */
  readonly timestamp: number;
  /** As stored: system messages in the third person ("{actor} added {user}"). */
  message: string;
  messageParameters: Record<string, unknown>;
  /** '' for comments and file shares. */
  systemMessage: string;
  /** 'comment', 'system' or 'voice-message'. */
  messageType: string;
  readonly referenceId: string;
  readonly replyTo: number | null;
  readonly silent: boolean;
  /** emoji → actor keys ("users/alice", "bots/bot-…"). */
  readonly reactions: Map<string, Set<string>>;
  lastEdit: { actorType: ActorType; actorId: string; actorDisplayName: string; timestamp: number } | null;
}

export interface TalkBot {
  /** Talk's numeric bot id (not AppAPI's sha1 id). */
  talkId: number;
  appApiId: string;
  /** Without the leading slash, as AppAPI stores it. */
  route: string;
  name: string;
  description: string;
  secret: string;
  url: string;
  urlHash: string;
  /** Talk's bot features; AppAPI registers `webhook` and `response` (capture talk-21-reactions.json). */
  features: Set<'webhook' | 'response' | 'event' | 'reaction'>;
}

export interface BotMessageRecord {
  token: string;
  message: string;
  replyTo: number | null;
  referenceId: string | null;
  silent: boolean;
  signatureValid: boolean;
  status: number;
  at: number;
}

export interface BotReactionRecord {
  token: string;
  messageId: number;
  reaction: string;
  method: 'POST' | 'DELETE';
  signatureValid: boolean;
  status: number;
  at: number;
}

export interface WebhookDelivery {
  route: string;
  token: string;
  messageId: number;
  body: string;
  /** Set when the delivery handler threw or rejected. */
  error?: string;
}

export type WebhookHandler = (delivery: WebhookDelivery) => void | Promise<void>;

export interface CreateRoomOptions {
  token?: string;
  name: string;
  type: RoomType;
  participants: Array<{ actorType?: 'users' | 'guests'; actorId: string; participantType: ParticipantType; displayName?: string }>;
}

export interface PostMessageOptions {
  parameters?: object;
  replyTo?: number;
  referenceId?: string;
  systemMessage?: string;
  messageType?: string;
  silent?: boolean;
}

export type MessageActor = { actorType: ActorType; actorId: string; displayName?: string };

export const MAX_CHAT_LENGTH = 32000;
const MODERATOR_TYPES: ReadonlySet<number> = new Set([1, 2, 6]);
// System messages that do not reach bots (capture 67: adding a reaction sends nothing).
const NO_WEBHOOK_SYSTEM = new Set(['reaction', 'reaction_deleted']);
// System messages that do not become a room's lastMessage.
const NOT_LAST_MESSAGE = new Set(['reaction', 'reaction_deleted', 'reaction_revoked', 'message_edited', 'message_deleted']);

export function sha1Hex(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('hex');
}

export function botSignature(secret: string, random: string, signed: string): string {
  return createHmac('sha256', secret)
    .update(random + signed, 'utf8')
    .digest('hex');
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function isEmptyObject(o: object): boolean {
  return Object.keys(o).length === 0;
}

/** PHP renders an empty array as [] where Talk means "no parameters". */
function phpParams(o: Record<string, unknown>): Record<string, unknown> | never[] {
  return isEmptyObject(o) ? [] : o;
}

function randomToken(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(8);
  let out = '';
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

function actorKey(actorType: string, actorId: string): string {
  return `${actorType}/${actorId}`;
}

function truthy(v: unknown): boolean {
  return v === true || v === 1 || v === '1' || v === 'true';
}

function intParam(v: unknown, fallback: number): number {
  if (v === undefined || v === null || v === '') return fallback;
  const n = typeof v === 'number' ? v : Number.parseInt(String(v), 10);
  return Number.isFinite(n) ? Math.trunc(n) : fallback;
}

function isFileShare(msg: FakeChatMessage): boolean {
  const file = msg.messageParameters['file'] as { type?: unknown } | undefined;
  return msg.systemMessage === '' && (msg.messageType === 'voice-message' || file?.type === 'file');
}

export class FakeRoom {
  readonly id: number;
  readonly token: string;
  name: string;
  readonly type: RoomType;
  readonly createdAt: number;
  readonly participants: FakeParticipant[] = [];
  /** Ascending by id. */
  readonly messages: FakeChatMessage[] = [];
  /** Talk ids of the bots enabled in this room. */
  readonly enabledBots = new Set<number>();

  constructor(id: number, token: string, name: string, type: RoomType, createdAt: number) {
    this.id = id;
    this.token = token;
    this.name = name;
    this.type = type;
    this.createdAt = createdAt;
  }

  participant(actorId: string, actorType: 'users' | 'guests' = 'users'): FakeParticipant | undefined {
    return this.participants.find((p) => p.actorType === actorType && p.actorId === actorId);
  }

  isModerator(uid: string): boolean {
    const p = this.participant(uid);
    return p !== undefined && MODERATOR_TYPES.has(p.participantType);
  }

  message(id: number): FakeChatMessage | undefined {
    return this.messages.find((m) => m.id === id);
  }

  /** The stored name: a one-to-one room keeps its two user ids as JSON (capture 65). */
  get storedName(): string {
    if (this.type !== 1) return this.name;
    return JSON.stringify(
      this.participants
        .filter((p) => p.actorType === 'users')
        .map((p) => p.actorId)
        .sort(),
    );
  }
}

export class FakeTalk {
  readonly rooms = new Map<string, FakeRoom>();
  readonly bots = new Map<number, TalkBot>();
  readonly botMessages: BotMessageRecord[] = [];
  readonly botReactions: BotReactionRecord[] = [];
  readonly webhooks: WebhookDelivery[] = [];
  webhookHandler: WebhookHandler | null = null;
  /** When each reaction was added: `<message id>/<emoji>/<actor key>` → seconds. */
  readonly #reactedAt = new Map<string, number>();
  /**
   * Which Talk the webhooks follow: 19 (test/fixtures/nextcloud29/) or 21 (test/fixtures/nextcloud33/:
   * `talkParticipantType`, `inReplyTo`, string sizes, `mention-id`, Join/Leave on bot enable/disable).
   */
  talkVersion: 19 | 21 = 19;

  readonly #users: UserDirectory;
  readonly #appId: string;
  readonly #now: () => number;
  #nextMessageId = 1;
  #nextRoomId = 1;
  #nextAttendeeId = 1;
  #nextBotId = 1;

  constructor(users: UserDirectory, appId: string, now: () => number) {
    this.#users = users;
    this.#appId = appId;
    this.#now = now;
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  // --- bots (installed by AppAPI's talk_bot registration) ---

  installBot(opts: { route: string; name: string; description: string; secret: string; baseUrl: string }): TalkBot {
    const existing = this.botByRoute(opts.route);
    if (existing) {
      existing.name = opts.name;
      existing.description = opts.description;
      return existing;
    }
    const url = `${opts.baseUrl}/ocs/v2.php/apps/app_api/api/v1/talk_proxy/${this.#appId}/${opts.route}`;
    const bot: TalkBot = {
      talkId: this.#nextBotId++,
      appApiId: sha1Hex(`${this.#appId}_${opts.route}`),
      route: opts.route,
      name: opts.name,
      description: opts.description,
      secret: opts.secret,
      url,
      urlHash: sha1Hex(url),
      features: new Set(['webhook', 'response']),
    };
    this.bots.set(bot.talkId, bot);
    return bot;
  }

  uninstallBot(route: string): boolean {
    const bot = this.botByRoute(route);
    if (!bot) return false;
    this.bots.delete(bot.talkId);
    for (const room of this.rooms.values()) room.enabledBots.delete(bot.talkId);
    return true;
  }

  botByRoute(route: string): TalkBot | undefined {
    const r = route.replace(/^\/+/, '');
    return [...this.bots.values()].find((b) => b.route === r);
  }

  /** `occ talk:bot:state <id> 1 -f …`: the bot's features (only `reaction` changes what it receives here). */
  setBotFeatures(route: string, features: Array<'webhook' | 'response' | 'event' | 'reaction'>): void {
    const bot = this.botByRoute(route);
    if (!bot) throw new Error(`no Talk bot registered for route ${route}`);
    bot.features = new Set(features);
  }

  enableBotInRoom(token: string, route: string): void {
    const bot = this.botByRoute(route);
    if (!bot) throw new Error(`no Talk bot registered for route ${route}`);
    const room = this.room(token);
    if (room.enabledBots.has(bot.talkId)) return;
    room.enabledBots.add(bot.talkId);
    // occ talk:bot:setup sends Join on Talk 21 too (talk-21-webhook-bot-enabled-join.json, the direct bot).
    this.#botMembership(room, bot, 'Join');
  }

  // --- rooms ---

  createRoom(opts: CreateRoomOptions): FakeRoom {
    const token = opts.token ?? randomToken();
    if (this.rooms.has(token)) throw new Error(`room ${token} exists`);
    if (opts.type === 1 && opts.participants.filter((p) => (p.actorType ?? 'users') === 'users').length !== 2) {
      throw new Error('a one-to-one room needs exactly two users');
    }
    const room = new FakeRoom(this.#nextRoomId++, token, opts.name, opts.type, this.#seconds());
    this.rooms.set(token, room);
    for (const p of opts.participants) {
      const actorType = p.actorType ?? 'users';
      if (actorType === 'users' && !this.#users.has(p.actorId)) throw new Error(`unknown user ${p.actorId}`);
      room.participants.push({
        attendeeId: this.#nextAttendeeId++,
        actorType,
        actorId: p.actorId,
        displayName: p.displayName ?? (actorType === 'users' ? this.#users.displayName(p.actorId) : ''),
        participantType: p.participantType,
      });
    }
    // Like Talk: the creator's "conversation_created", then "user_added" for everyone invited.
    const owner = room.participants.find((p) => p.participantType === 1 && p.actorType === 'users');
    if (owner) {
      const actor = { actorType: 'users' as const, actorId: owner.actorId };
      this.#append(room, actor, '{actor} created the conversation', {
        systemMessage: 'conversation_created',
        parameters: { actor: this.#userParam(owner.actorId) },
      });
      if (room.type !== 1) {
        for (const p of room.participants) {
          if (p === owner || p.actorType !== 'users') continue;
          this.#append(room, actor, '{actor} added {user}', {
            systemMessage: 'user_added',
            parameters: { actor: this.#userParam(owner.actorId), user: this.#userParam(p.actorId) },
          });
        }
      }
    }
    return room;
  }

  room(token: string): FakeRoom {
    const room = this.rooms.get(token);
    if (!room) throw new Error(`no room ${token}`);
    return room;
  }

  addParticipant(
    token: string,
    p: { actorType?: 'users' | 'guests'; actorId: string; participantType: ParticipantType; displayName?: string },
    addedBy?: string,
  ): FakeParticipant {
    const room = this.room(token);
    const actorType = p.actorType ?? 'users';
    if (room.participant(p.actorId, actorType)) throw new Error(`${p.actorId} is already in ${token}`);
    const participant: FakeParticipant = {
      attendeeId: this.#nextAttendeeId++,
      actorType,
      actorId: p.actorId,
      displayName: p.displayName ?? (actorType === 'users' ? this.#users.displayName(p.actorId) : ''),
      participantType: p.participantType,
    };
    room.participants.push(participant);
    if (actorType === 'users') {
      const by = addedBy ?? p.actorId;
      const msg = this.#append(room, { actorType: 'users', actorId: by }, by === p.actorId ? '{actor} joined the conversation' : '{actor} added {user}', {
        systemMessage: 'user_added',
        parameters: by === p.actorId ? { actor: this.#userParam(by) } : { actor: this.#userParam(by), user: this.#userParam(p.actorId) },
      });
      this.#fire(room, msg);
    }
    return participant;
  }

  removeParticipant(token: string, actorId: string, removedBy?: string): void {
    const room = this.room(token);
    const index = room.participants.findIndex((p) => p.actorId === actorId);
    if (index < 0) throw new Error(`${actorId} is not in ${token}`);
    const [removed] = room.participants.splice(index, 1);
    if (removed?.actorType !== 'users') return;
    const by = removedBy ?? actorId;
    const msg = this.#append(room, { actorType: 'users', actorId: by }, by === actorId ? '{actor} left the conversation' : '{actor} removed {user}', {
      systemMessage: 'user_removed',
      parameters: { actor: this.#userParam(by), user: this.#userParam(actorId) },
    });
    this.#fire(room, msg);
  }

  // --- chat ---

  #userParam(uid: string): Record<string, unknown> {
    return { type: 'user', id: uid, name: this.#users.displayName(uid) };
  }

  #botDisplayName(bot: TalkBot): string {
    return `${bot.name} (Bot)`;
  }

  #displayNameFor(room: FakeRoom, actor: MessageActor): string {
    if (actor.displayName !== undefined) return actor.displayName;
    if (actor.actorType === 'users') return this.#users.displayName(actor.actorId);
    if (actor.actorType === 'bots') {
      const bot = [...this.bots.values()].find((b) => `bot-${b.urlHash}` === actor.actorId);
      return bot ? this.#botDisplayName(bot) : actor.actorId;
    }
    return room.participant(actor.actorId, 'guests')?.displayName ?? '';
  }

  #append(room: FakeRoom, actor: MessageActor, message: string, opts: PostMessageOptions = {}): FakeChatMessage {
    const systemMessage = opts.systemMessage ?? '';
    const msg: FakeChatMessage = {
      id: this.#nextMessageId++,
      token: room.token,
      actorType: actor.actorType,
      actorId: actor.actorId,
      actorDisplayName: this.#displayNameFor(room, actor),
      timestamp: this.#seconds(),
      message,
      messageParameters: { ...((opts.parameters as Record<string, unknown> | undefined) ?? {}) },
      systemMessage,
      messageType: opts.messageType ?? (systemMessage === '' ? 'comment' : 'system'),
      referenceId: opts.referenceId ?? '',
      replyTo: opts.replyTo !== undefined && opts.replyTo !== 0 ? opts.replyTo : null,
      silent: opts.silent ?? false,
      reactions: new Map(),
      lastEdit: null,
    };
    room.messages.push(msg);
    return msg;
  }

  /**
   * Talk's mention parsing: every `@uid` / `@"uid"` of an existing user becomes
   * {mention-userN}; a second mention of the same user keeps its own parameter
   * but nothing left to replace (capture 61).
   */
  parseMentions(text: string): { message: string; parameters: Record<string, unknown> } {
    const found: string[] = [];
    for (const m of text.matchAll(/@"([^"]+)"|@([A-Za-z0-9_.@\-']+)/g)) {
      const raw = m[0];
      const id = m[1] ?? m[2] ?? '';
      if (!found.includes(raw) && this.#users.has(id)) found.push(raw);
    }
    const ids = found.map((raw) => (raw.startsWith('@"') ? raw.slice(2, -1) : raw.slice(1)));
    const order = ids.map((id, i) => ({ id, i })).sort((a, b) => b.id.length - a.id.length || a.i - b.i);
    let message = text;
    const parameters: Record<string, unknown> = {};
    let n = 0;
    for (const { id } of order) {
      n++;
      const key = `mention-user${n}`;
      parameters[key] = this.#userParam(id);
      message = message.split(`@"${id}"`).join(`{${key}}`);
      message = message.split(`@${id}`).join(`{${key}}`);
    }
    return { message, parameters };
  }

  postMessage(token: string, actor: MessageActor, message: string, opts: PostMessageOptions = {}): FakeChatMessage {
    const room = this.room(token);
    if (actor.actorType === 'users' && !room.participant(actor.actorId)) throw new Error(`${actor.actorId} is not a participant of ${token}`);
    if (codePoints(message) > MAX_CHAT_LENGTH) throw new Error('message longer than Talk allows');
    if (opts.replyTo !== undefined && opts.replyTo !== 0 && !room.message(opts.replyTo)) throw new Error(`no message ${opts.replyTo} in ${token}`);
    let text = message;
    let params = opts.parameters;
    if (params === undefined && (opts.systemMessage ?? '') === '') {
      const parsed = this.parseMentions(message);
      text = parsed.message;
      params = parsed.parameters;
    }
    const msg = this.#append(room, actor, text, { ...opts, parameters: params ?? {} });
    this.#fire(room, msg);
    return msg;
  }

  /** A moderator's or author's edit: lastEdit* on the message plus a "message_edited" system message (captures 40-2, 50, 52). */
  editMessage(token: string, messageId: number, newText: string, editor?: { actorType?: 'users'; actorId: string }): FakeChatMessage {
    const room = this.room(token);
    const target = room.message(messageId);
    if (!target) throw new Error(`no message ${messageId} in ${token}`);
    const editorId =
      editor?.actorId ?? (target.actorType === 'users' ? target.actorId : room.participants.find((p) => MODERATOR_TYPES.has(p.participantType))?.actorId);
    if (editorId === undefined) throw new Error('nobody to edit as');
    const system = this.#edit(room, target, newText, editorId);
    this.#fire(room, system);
    return system;
  }

  /**
   * A user's reaction as `POST`/`DELETE reaction/{token}/{messageId}` does it: 201 added, 200 already
   * there (POST) or removed (DELETE), 404 unknown or not reacted, 400 on a system message.
   */
  async userReaction(
    token: string,
    uid: string,
    messageId: number,
    reaction: string,
    method: 'POST' | 'DELETE',
  ): Promise<{ status: number; data?: Record<string, unknown> }> {
    const room = this.room(token);
    if (!room.participant(uid)) return { status: 404 };
    const target = room.message(messageId);
    if (!target) return { status: 404 };
    if (target.messageType === 'system' || target.messageType === 'comment_deleted' || reaction === '') return { status: 400 };
    const key = actorKey('users', uid);
    const actors = target.reactions.get(reaction) ?? new Set<string>();
    const actor = { actorType: 'users' as const, actorId: uid };
    if (method === 'POST') {
      if (actors.has(key)) return { status: 200, data: this.reactionsOf(target) };
      actors.add(key);
      target.reactions.set(reaction, actors);
      this.#reactedAt.set(`${target.id}/${reaction}/${key}`, this.#seconds());
      // The "reaction" system message reaches no bot; a bot with the reaction feature gets a Like.
      this.#append(room, actor, reaction, { systemMessage: 'reaction', replyTo: target.id });
      await this.#deliver(this.#queueReaction(room, target, reaction, true));
      return { status: 201, data: this.reactionsOf(target) };
    }
    if (!actors.has(key)) return { status: 404 };
    actors.delete(key);
    if (actors.size === 0) target.reactions.delete(reaction);
    this.#reactedAt.delete(`${target.id}/${reaction}/${key}`);
    const original = room.messages.find((x) => x.systemMessage === 'reaction' && x.replyTo === target.id && x.actorId === uid && x.message === reaction);
    if (original) {
      original.systemMessage = 'reaction_deleted';
      original.message = 'Reaction deleted by author';
      original.messageParameters = {};
    }
    // Activity reaction_revoked (as the user), then Undo (as the author): capture talk-21-reactions.json, step 17.
    const revoked = this.#append(room, actor, '{actor} deleted a reaction', {
      systemMessage: 'reaction_revoked',
      parameters: { actor: this.#userParam(uid) },
      replyTo: target.id,
    });
    await this.#fireAndWait(room, revoked);
    await this.#deliver(this.#queueReaction(room, target, reaction, false));
    return { status: 200, data: this.reactionsOf(target) };
  }

  /** `GET reaction/{token}/{messageId}`: emoji → who, newest first (capture talk-21-reactions.json, step 05). */
  reactionsOf(target: FakeChatMessage, only?: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [emoji, actors] of target.reactions) {
      if (actors.size === 0 || (only !== undefined && only !== emoji)) continue;
      out[emoji] = [...actors].reverse().map((k) => {
        const slash = k.indexOf('/');
        const actorType = k.slice(0, slash);
        const actorId = k.slice(slash + 1);
        const bot = actorType === 'bots' ? [...this.bots.values()].find((b) => `bot-${b.urlHash}` === actorId) : undefined;
        const actorDisplayName = actorType === 'users' ? this.#users.displayName(actorId) : bot ? this.#botDisplayName(bot) : actorId;
        return { actorType, actorId, actorDisplayName, timestamp: this.#reactedAt.get(`${target.id}/${emoji}/${k}`) ?? 0 };
      });
    }
    return out;
  }

  #edit(room: FakeRoom, target: FakeChatMessage, newText: string, editorId: string): FakeChatMessage {
    if (isFileShare(target)) {
      target.message = newText;
    } else {
      const parsed = this.parseMentions(newText);
      target.message = parsed.message;
      target.messageParameters = parsed.parameters;
    }
    target.lastEdit = { actorType: 'users', actorId: editorId, actorDisplayName: this.#users.displayName(editorId), timestamp: this.#seconds() };
    return this.#append(room, { actorType: 'users', actorId: editorId }, '{actor} edited a message', {
      systemMessage: 'message_edited',
      parameters: { actor: this.#userParam(editorId) },
      replyTo: target.id,
    });
  }

  // --- webhooks ---

  #wantsWebhook(msg: FakeChatMessage): boolean {
    if (msg.systemMessage === '') return msg.actorType !== 'bots';
    return !NO_WEBHOOK_SYSTEM.has(msg.systemMessage);
  }

  /** Queues the webhook for every bot enabled in the room; returns the deliveries. */
  #queue(room: FakeRoom, msg: FakeChatMessage): WebhookDelivery[] {
    if (!this.#wantsWebhook(msg)) return [];
    const out: WebhookDelivery[] = [];
    for (const talkId of room.enabledBots) {
      const bot = this.bots.get(talkId);
      if (!bot) continue;
      const delivery: WebhookDelivery = { route: bot.route, token: room.token, messageId: msg.id, body: this.webhookBodyFor(msg, { route: bot.route }) };
      this.webhooks.push(delivery);
      out.push(delivery);
    }
    return out;
  }

  /**
   * Like (a reaction added) and Undo (removed), only to bots with the `reaction` feature. Talk 21's
   * BotService::afterReactionAdded names the reacted message's AUTHOR as the actor, never who reacted
   * (capture talk-21-reactions.json, step 17).
   */
  #queueReaction(room: FakeRoom, target: FakeChatMessage, reaction: string, added: boolean): WebhookDelivery[] {
    const out: WebhookDelivery[] = [];
    for (const talkId of room.enabledBots) {
      const bot = this.bots.get(talkId);
      if (!bot?.features.has('reaction')) continue;
      const actorName = target.actorType === 'users' ? this.#users.displayName(target.actorId) : target.actorDisplayName;
      const actor = { type: 'Person', id: `${target.actorType}/${target.actorId}`, name: actorName };
      const note = {
        type: 'Note',
        id: String(target.id),
        name: '',
        content: phpJson({ message: target.message, parameters: phpParams(target.messageParameters) }),
        mediaType: 'text/markdown',
      };
      const collection = { type: 'Collection', id: room.token, name: room.storedName };
      const like = { type: 'Like', actor, object: note, target: collection, content: reaction };
      const event = added ? like : { type: 'Undo', actor, object: like, target: collection };
      const body = phpJson({ appId: this.#appId, route: bot.route, _route: 'ocs.app_api.talkbot.proxytalkmessage', ...event });
      const delivery: WebhookDelivery = { route: bot.route, token: room.token, messageId: target.id, body };
      this.webhooks.push(delivery);
      out.push(delivery);
    }
    return out;
  }

  async #deliver(deliveries: WebhookDelivery[]): Promise<void> {
    const handler = this.webhookHandler;
    if (!handler) return;
    for (const d of deliveries) {
      try {
        await handler(d);
      } catch (err) {
        d.error = err instanceof Error ? err.message : String(err);
      }
    }
  }

  /** For programmatic posts: queue and hand to the handler without blocking the caller. */
  #fire(room: FakeRoom, msg: FakeChatMessage): void {
    void this.#deliver(this.#queue(room, msg));
  }

  /** For HTTP posts: Talk delivers inside the poster's request, so the answer waits. */
  async #fireAndWait(room: FakeRoom, msg: FakeChatMessage): Promise<void> {
    await this.#deliver(this.#queue(room, msg));
  }

  #defaultRoute(room: FakeRoom | undefined): string {
    for (const id of room?.enabledBots ?? []) {
      const bot = this.bots.get(id);
      if (bot) return bot.route;
    }
    return [...this.bots.values()][0]?.route ?? 'talk_bot';
  }

  #webhookParameters(msg: FakeChatMessage): Record<string, unknown> {
    const out: Record<string, unknown> = { ...msg.messageParameters };
    const file = out['file'] as Record<string, unknown> | undefined;
    if (file && typeof file['link'] === 'string') {
      // The chat links files by id (/f/<id>); the webhook carries the share link (/s/<token>) (capture 62).
      const link = file['link'].replace(/\/index\.php\/f\/([^/?#]+)$/, (_m, id: string) => `/index.php/s/${sha1Hex(`share-${id}`).slice(0, 15)}`);
      out['file'] = { ...file, link };
    }
    if (this.talkVersion < 21) return out;
    // Talk 21: numbers as strings, `hide-download`, and `mention-id` on users (talk-21-webhook-file-share.json, -mention.json).
    for (const [key, value] of Object.entries(out)) {
      const p = { ...(value as Record<string, unknown>) };
      if (p['type'] === 'user' && p['mention-id'] === undefined) p['mention-id'] = p['id'];
      if (p['type'] === 'file') {
        for (const n of ['size', 'permissions']) if (typeof p[n] === 'number') p[n] = String(p[n]);
        p['hide-download'] ??= 'no';
      }
      out[key] = p;
    }
    return out;
  }

  #webhookNote(msg: FakeChatMessage, name: string): Record<string, unknown> {
    const content = phpJson({ message: msg.message, parameters: phpParams(this.#webhookParameters(msg)) });
    return { type: 'Note', id: String(msg.id), name, content, mediaType: 'text/markdown' };
  }

  #webhookActor(msg: FakeChatMessage, room: FakeRoom | undefined, withParticipantType: boolean): Record<string, unknown> {
    const name = msg.actorType === 'users' ? this.#users.displayName(msg.actorId) : msg.actorDisplayName;
    const actor: Record<string, unknown> = { type: 'Person', id: `${msg.actorType}/${msg.actorId}`, name };
    const participant = room?.participant(msg.actorId, msg.actorType === 'guests' ? 'guests' : 'users');
    if (withParticipantType && participant) actor['talkParticipantType'] = String(participant.participantType);
    return actor;
  }

  /** Talk 21's Join / Leave when a moderator enables or disables the bot (talk-21-webhook-bot-*.json). */
  #botMembership(room: FakeRoom, bot: TalkBot, type: 'Join' | 'Leave'): void {
    if (this.talkVersion < 21) return;
    const body = phpJson({
      appId: this.#appId,
      route: bot.route,
      _route: 'ocs.app_api.talkbot.proxytalkmessage',
      type,
      actor: { type: 'Application', id: `bots/bot-${bot.urlHash}`, name: bot.name },
      object: { type: 'Collection', id: room.token, name: room.storedName },
    });
    const delivery: WebhookDelivery = { route: bot.route, token: room.token, messageId: 0, body };
    this.webhooks.push(delivery);
    void this.#deliver([delivery]);
  }

  /** The exact raw body AppAPI forwards to the ExApp (captures 40, 61–67, 69). */
  webhookBodyFor(msg: FakeChatMessage, opts: { route?: string } = {}): string {
    const room = this.rooms.get(msg.token);
    const route = (opts.route ?? this.#defaultRoute(room)).replace(/^\/+/, '');
    const share = isFileShare(msg);
    const type = msg.systemMessage === '' && !share ? 'Create' : 'Activity';
    const name = share ? (msg.messageType === 'voice-message' ? 'file_shared' : '') : msg.systemMessage === '' ? 'message' : msg.systemMessage;
    const talk21 = this.talkVersion >= 21;
    const object = this.#webhookNote(msg, name);
    const parent = type === 'Create' && msg.replyTo !== null ? room?.message(msg.replyTo) : undefined;
    // Talk 21 quotes the replied-to message (talk-21-webhook-reply.json); Talk 19 sends no parent (capture 64).
    if (talk21 && parent) object['inReplyTo'] = { type: 'Note', actor: this.#webhookActor(parent, room, false), object: this.#webhookNote(parent, 'message') };
    return phpJson({
      appId: this.#appId,
      route,
      _route: 'ocs.app_api.talkbot.proxytalkmessage',
      type,
      actor: this.#webhookActor(msg, room, talk21 && type === 'Create'),
      object,
      target: { type: 'Collection', id: msg.token, name: room?.storedName ?? '' },
    });
  }

  // --- rendering (chat API, rooms) ---

  #renderText(msg: FakeChatMessage, viewer: string | null): string {
    if (msg.systemMessage === '' || viewer === null) return msg.message;
    let text = msg.message;
    const actor = msg.messageParameters['actor'] as { type?: string; id?: string } | undefined;
    if (actor?.type === 'user' && actor.id === viewer && text.startsWith('{actor} ')) text = 'You ' + text.slice('{actor} '.length);
    const user = msg.messageParameters['user'] as { type?: string; id?: string } | undefined;
    if (user?.type === 'user' && user.id === viewer) text = text.replace('{user}', 'you');
    return text;
  }

  formatMessage(msg: FakeChatMessage, viewer: string | null, withParent = true): Record<string, unknown> {
    const system = msg.messageType === 'system' || msg.messageType === 'comment_deleted';
    const reactions: Record<string, number> = {};
    const self: string[] = [];
    for (const [emoji, actors] of msg.reactions) {
      if (actors.size === 0) continue;
      reactions[emoji] = actors.size;
      if (viewer !== null && actors.has(actorKey('users', viewer))) self.push(emoji);
    }
    const out: Record<string, unknown> = {
      id: msg.id,
      token: msg.token,
      actorType: msg.actorType,
      actorId: msg.actorId,
      actorDisplayName: msg.actorType === 'users' ? this.#users.displayName(msg.actorId) : msg.actorDisplayName,
      timestamp: msg.timestamp,
      message: this.#renderText(msg, viewer),
      messageParameters: phpParams(msg.messageParameters),
      systemMessage: msg.systemMessage,
      messageType: msg.messageType,
      isReplyable: !system,
      referenceId: msg.referenceId,
      reactions,
      expirationTimestamp: 0,
      markdown: !system,
    };
    if (self.length > 0) out['reactionsSelf'] = self;
    if (msg.lastEdit) {
      out['lastEditActorType'] = msg.lastEdit.actorType;
      out['lastEditActorId'] = msg.lastEdit.actorId;
      out['lastEditActorDisplayName'] = msg.lastEdit.actorDisplayName;
      out['lastEditTimestamp'] = msg.lastEdit.timestamp;
    }
    if (msg.silent) out['silent'] = true;
    if (withParent && msg.replyTo !== null) {
      const parent = this.rooms.get(msg.token)?.message(msg.replyTo);
      if (parent) out['parent'] = this.formatMessage(parent, viewer, false);
    }
    return out;
  }

  #lastMessage(room: FakeRoom): FakeChatMessage | undefined {
    for (let i = room.messages.length - 1; i >= 0; i--) {
      const m = room.messages[i];
      if (m && !NOT_LAST_MESSAGE.has(m.systemMessage)) return m;
    }
    return undefined;
  }

  /** A room as `GET room` shows it to `uid` (captures 24, 32, 60). */
  formatRoom(room: FakeRoom, uid: string): Record<string, unknown> {
    const me = room.participant(uid);
    const moderator = me !== undefined && MODERATOR_TYPES.has(me.participantType);
    const other = room.type === 1 ? room.participants.find((p) => p.actorType === 'users' && p.actorId !== uid) : undefined;
    const last = this.#lastMessage(room);
    const lastId = room.messages.at(-1)?.id ?? 0;
    return {
      id: room.id,
      token: room.token,
      type: room.type,
      name: other ? other.actorId : room.name,
      displayName: other ? this.#users.displayName(other.actorId) : room.name,
      objectType: '',
      objectId: '',
      participantType: me?.participantType ?? 3,
      participantFlags: 0,
      readOnly: 0,
      hasPassword: false,
      hasCall: false,
      callStartTime: 0,
      callRecording: 0,
      canStartCall: true,
      lastActivity: last?.timestamp ?? room.createdAt,
      lastReadMessage: lastId,
      unreadMessages: 0,
      unreadMention: false,
      unreadMentionDirect: false,
      isFavorite: false,
      canLeaveConversation: true,
      canDeleteConversation: moderator && room.type !== 1,
      notificationLevel: room.type === 1 ? 1 : 2,
      notificationCalls: 1,
      lobbyState: 0,
      lobbyTimer: 0,
      lastPing: 0,
      sessionId: '0',
      lastMessage: last ? this.formatMessage(last, uid, false) : [],
      sipEnabled: 0,
      actorType: 'users',
      actorId: uid,
      attendeeId: me?.attendeeId ?? 0,
      permissions: moderator ? 254 : 246,
      attendeePermissions: 0,
      callPermissions: 0,
      defaultPermissions: 0,
      canEnableSIP: false,
      attendeePin: '',
      description: '',
      lastCommonReadMessage: lastId,
      listable: 0,
      callFlag: 0,
      messageExpiration: 0,
      avatarVersion: sha1Hex(`avatar-${room.token}`).slice(0, 8),
      isCustomAvatar: false,
      breakoutRoomMode: 0,
      breakoutRoomStatus: 0,
      recordingConsent: 0,
    };
  }

  #formatParticipant(room: FakeRoom, p: FakeParticipant): Record<string, unknown> {
    return {
      roomToken: room.token,
      inCall: 0,
      lastPing: 0,
      sessionIds: [],
      participantType: p.participantType,
      attendeeId: p.attendeeId,
      actorId: p.actorId,
      actorType: p.actorType,
      displayName: p.actorType === 'users' ? this.#users.displayName(p.actorId) : p.displayName,
      permissions: MODERATOR_TYPES.has(p.participantType) ? 254 : 246,
      attendeePermissions: 0,
      attendeePin: '',
    };
  }

  #formatBot(bot: TalkBot, state: number): Record<string, unknown> {
    return { id: bot.talkId, name: bot.name, description: bot.description, state };
  }

  // --- bot request verification (BotController::getBotFromHeaders) ---

  #verifyBot(ctx: RouteContext, room: FakeRoom | undefined, signed: string): { status: 0 | 400 | 401; bot?: TalkBot } {
    const random = ctx.headers['x-nextcloud-talk-bot-random'] ?? '';
    const signature = ctx.headers['x-nextcloud-talk-bot-signature'] ?? '';
    if (Buffer.byteLength(random, 'utf8') < 32) return { status: 400 };
    if (signature === '') return { status: 400 };
    const given = Buffer.from(signature.toLowerCase(), 'utf8');
    const signedBy = (bot: TalkBot): boolean => {
      const expected = Buffer.from(botSignature(bot.secret, random, signed), 'utf8');
      return given.length === expected.length && timingSafeEqual(given, expected);
    };
    for (const talkId of room?.enabledBots ?? []) {
      const bot = this.bots.get(talkId);
      if (bot && signedBy(bot)) return { status: 0, bot };
    }
    const elsewhere = [...this.bots.values()].find(signedBy);
    ctx.violation(
      elsewhere
        ? `bot "${elsewhere.name}" is not enabled in room ${room?.token ?? '(unknown room)'}`
        : 'X-Nextcloud-Talk-Bot-Signature is not HMAC-SHA256(bot secret, random + signed text) of any bot of this room',
    );
    return { status: 401 };
  }

  // --- routes ---

  routes(): FakeRoute[] {
    const participantRoom = (ctx: RouteContext, token: string): FakeRoom | null => {
      const room = this.rooms.get(token);
      if (!room || ctx.user === null || ctx.user === '' || !room.participant(ctx.user)) return null;
      return room;
    };
    const notFound = (ctx: RouteContext): FakeReply => ocsFailure(ctx.version, ctx.format, 404, '');
    const commonRead = (room: FakeRoom): Record<string, string> => ({ 'x-chat-last-common-read': String(room.messages.at(-1)?.id ?? 0) });
    const moderatorRoom = (ctx: RouteContext, token: string): FakeRoom | FakeReply => {
      const room = participantRoom(ctx, token);
      if (!room) return notFound(ctx);
      if (!room.isModerator(ctx.user ?? '')) return ocsFailure(ctx.version, ctx.format, 403, '');
      return room;
    };
    const S = '/apps/spreed/api';

    return [
      {
        method: 'GET',
        path: new RegExp(`^${S}/v4/room$`),
        access: 'login',
        csrf: true,
        handle: (ctx) => {
          const uid = ctx.user ?? '';
          const rooms = [...this.rooms.values()].filter((r) => r.participant(uid)).map((r) => this.formatRoom(r, uid));
          return ocsData(ctx.version, ctx.format, rooms);
        },
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v4/room/([^/]+)$`),
        access: 'public',
        csrf: true,
        handle: (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          return room ? ocsData(ctx.version, ctx.format, this.formatRoom(room, ctx.user ?? '')) : notFound(ctx);
        },
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v4/room/([^/]+)/participants$`),
        access: 'public',
        csrf: true,
        handle: (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          return ocsData(
            ctx.version,
            ctx.format,
            room.participants.map((p) => this.#formatParticipant(room, p)),
          );
        },
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v1/chat/([^/]+)$`),
        access: 'public',
        csrf: true,
        handle: (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          const future = truthy(ctx.params['lookIntoFuture']);
          const limit = Math.min(200, Math.max(1, intParam(ctx.params['limit'], 100)));
          const lastKnown = intParam(ctx.params['lastKnownMessageId'], 0);
          const inclusive = truthy(ctx.params['includeLastKnown']);
          let picked: FakeChatMessage[];
          if (future) {
            picked = room.messages.filter((x) => (inclusive ? x.id >= lastKnown : x.id > lastKnown)).slice(0, limit);
          } else {
            const older = lastKnown === 0 ? room.messages : room.messages.filter((x) => (inclusive ? x.id <= lastKnown : x.id < lastKnown));
            picked = older.slice(-limit).reverse();
          }
          if (picked.length === 0) return { status: 304, headers: commonRead(room), body: '' };
          const headers = { ...commonRead(room), 'x-chat-last-given': String(picked.at(-1)?.id ?? 0) };
          return ocsData(
            ctx.version,
            ctx.format,
            picked.map((x) => this.formatMessage(x, ctx.user)),
            200,
            headers,
          );
        },
      },
      {
        method: 'POST',
        path: new RegExp(`^${S}/v1/chat/([^/]+)$`),
        access: 'public',
        csrf: true,
        handle: async (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          const uid = ctx.user ?? '';
          const text = String(ctx.params['message'] ?? '');
          if (text.trim() === '') return ocsFailure(ctx.version, ctx.format, 400, '');
          const replyTo = intParam(ctx.params['replyTo'], 0);
          if (replyTo !== 0) {
            const parent = room.message(replyTo);
            if (!parent || parent.messageType === 'system' || parent.messageType === 'comment_deleted') return ocsFailure(ctx.version, ctx.format, 400, '');
          }
          if (codePoints(text) > MAX_CHAT_LENGTH) return ocsFailure(ctx.version, ctx.format, 413, '');
          const parsed = this.parseMentions(text);
          const msg = this.#append(room, { actorType: 'users', actorId: uid }, parsed.message, {
            parameters: parsed.parameters,
            replyTo,
            referenceId: String(ctx.params['referenceId'] ?? ''),
            silent: truthy(ctx.params['silent']),
          });
          await this.#fireAndWait(room, msg);
          return ocsData(ctx.version, ctx.format, this.formatMessage(msg, uid), 201, commonRead(room));
        },
      },
      {
        method: 'PUT',
        path: new RegExp(`^${S}/v1/chat/([^/]+)/(\\d+)$`),
        access: 'public',
        csrf: true,
        handle: async (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          const uid = ctx.user ?? '';
          const target = room.message(Number(m[2]));
          if (!target) return notFound(ctx);
          if (target.messageType === 'system' || target.messageType === 'comment_deleted') return ocsFailure(ctx.version, ctx.format, 400, '');
          const own = target.actorType === 'users' && target.actorId === uid;
          if (!own && !room.isModerator(uid)) return ocsFailure(ctx.version, ctx.format, 403, '');
          const text = String(ctx.params['message'] ?? '');
          if (text.trim() === '') return ocsFailure(ctx.version, ctx.format, 400, '');
          if (codePoints(text) > MAX_CHAT_LENGTH) return ocsFailure(ctx.version, ctx.format, 413, '');
          const system = this.#edit(room, target, text, uid);
          await this.#fireAndWait(room, system);
          // ChatController::editMessage: 202 when the room has a webhook bot (or a bridge), else 200.
          return ocsData(ctx.version, ctx.format, this.formatMessage(system, uid), room.enabledBots.size > 0 ? 202 : 200, commonRead(room));
        },
      },
      {
        method: 'DELETE',
        path: new RegExp(`^${S}/v1/chat/([^/]+)/(\\d+)$`),
        access: 'public',
        csrf: true,
        handle: async (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          const uid = ctx.user ?? '';
          const target = room.message(Number(m[2]));
          if (!target || target.messageType === 'comment_deleted') return notFound(ctx);
          if (target.messageType === 'system') return ocsFailure(ctx.version, ctx.format, 400, '');
          const own = target.actorType === 'users' && target.actorId === uid;
          if (!own && !room.isModerator(uid)) return ocsFailure(ctx.version, ctx.format, 403, '');
          target.message = own ? 'Message deleted by author' : '{actor} deleted the message';
          target.messageParameters = own ? {} : { actor: this.#userParam(uid) };
          target.messageType = 'comment_deleted';
          target.reactions.clear();
          const system = this.#append(room, { actorType: 'users', actorId: uid }, '{actor} deleted a message', {
            systemMessage: 'message_deleted',
            parameters: { actor: this.#userParam(uid) },
            replyTo: target.id,
          });
          await this.#fireAndWait(room, system);
          // ChatController::deleteMessage: 202 with a webhook bot in the room (talk-21-webhook-delete.json), else 200.
          return ocsData(ctx.version, ctx.format, this.formatMessage(system, uid), room.enabledBots.size > 0 ? 202 : 200, commonRead(room));
        },
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v1/chat/([^/]+)/(\\d+)/context$`),
        access: 'public',
        csrf: true,
        handle: (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          const id = Number(m[2]);
          if (!room.message(id)) return notFound(ctx);
          const limit = Math.min(100, Math.max(0, intParam(ctx.params['limit'], 50)));
          // getHistory(includeLastKnown) reversed + waitForNewMessages(timeout 0): oldest first.
          const before = room.messages.filter((x) => x.id <= id).slice(-Math.max(1, limit));
          const after = room.messages.filter((x) => x.id > id).slice(0, limit);
          const picked = [...before, ...after];
          const headers = { ...commonRead(room), 'x-chat-last-given': String(picked.at(-1)?.id ?? id) };
          return ocsData(
            ctx.version,
            ctx.format,
            picked.map((x) => this.formatMessage(x, ctx.user)),
            200,
            headers,
          );
        },
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v1/bot/admin$`),
        access: 'login',
        csrf: true,
        handle: (ctx) => {
          if (!this.#users.isAdmin(ctx.user ?? '')) return ocsFailure(ctx.version, ctx.format, 403, 'Logged in account must be an admin');
          const list = [...this.bots.values()].map((b) => ({
            id: b.talkId,
            name: b.name,
            url: b.url,
            url_hash: b.urlHash,
            description: b.description,
            error_count: 0,
            last_error_date: 0,
            last_error_message: null,
            state: 1,
            features:
              (b.features.has('webhook') ? 1 : 0) |
              (b.features.has('response') ? 2 : 0) |
              (b.features.has('event') ? 4 : 0) |
              (b.features.has('reaction') ? 8 : 0),
          }));
          return ocsData(ctx.version, ctx.format, list);
        },
      },
      {
        method: 'POST',
        path: new RegExp(`^${S}/v1/bot/([^/]+)/message$`),
        access: 'bot',
        csrf: true,
        handle: (ctx, m) => {
          const token = m[1] ?? '';
          const room = this.rooms.get(token);
          const text = String(ctx.params['message'] ?? '');
          const replyToRaw = intParam(ctx.params['replyTo'], 0);
          const referenceId = ctx.params['referenceId'] === undefined ? null : String(ctx.params['referenceId']);
          const silent = truthy(ctx.params['silent']);
          const record: BotMessageRecord = {
            token,
            message: text,
            replyTo: replyToRaw === 0 ? null : replyToRaw,
            referenceId,
            silent,
            signatureValid: false,
            status: 0,
            at: this.#now(),
          };
          this.botMessages.push(record);
          const done = (status: number): FakeReply => {
            record.status = status;
            return status === 201 ? ocsData(ctx.version, ctx.format, [], 201) : ocsFailure(ctx.version, ctx.format, status, '');
          };
          if (text.trim() === '') return done(400);
          const auth = this.#verifyBot(ctx, room, text);
          record.signatureValid = auth.status === 0;
          if (auth.status !== 0 || !auth.bot || !room) return done(auth.status === 0 ? 401 : auth.status);
          if (replyToRaw !== 0) {
            const parent = room.message(replyToRaw);
            if (!parent || parent.messageType === 'system' || parent.messageType === 'comment_deleted') return done(400);
          }
          if (codePoints(text) > MAX_CHAT_LENGTH) return done(413);
          // Bot messages never trigger bots, so nothing is queued.
          this.#append(room, { actorType: 'bots', actorId: `bot-${auth.bot.urlHash}`, displayName: this.#botDisplayName(auth.bot) }, text, {
            replyTo: replyToRaw,
            referenceId: referenceId ?? '',
            silent,
          });
          return done(201);
        },
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v1/reaction/([^/]+)/(\\d+)$`),
        access: 'public',
        csrf: true,
        handle: (ctx, m) => {
          const room = participantRoom(ctx, m[1] ?? '');
          const target = room?.message(Number(m[2]));
          if (!room || !target) return notFound(ctx);
          const only = ctx.params['reaction'] === undefined ? undefined : String(ctx.params['reaction']);
          const list = this.reactionsOf(target, only);
          return ocsData(ctx.version, ctx.format, Object.keys(list).length === 0 ? [] : list);
        },
      },
      ...(['POST', 'DELETE'] as const).map((method) => ({
        method,
        path: new RegExp(`^${S}/v1/reaction/([^/]+)/(\\d+)$`),
        access: 'public' as const,
        csrf: true,
        handle: async (ctx: RouteContext, m: RegExpMatchArray): Promise<FakeReply> => {
          const room = participantRoom(ctx, m[1] ?? '');
          if (!room) return notFound(ctx);
          const r = await this.userReaction(room.token, ctx.user ?? '', Number(m[2]), String(ctx.params['reaction'] ?? ''), method);
          if (!r.data) return ocsFailure(ctx.version, ctx.format, r.status, '');
          return ocsData(ctx.version, ctx.format, Object.keys(r.data).length === 0 ? [] : r.data, r.status);
        },
      })),
      {
        method: 'POST',
        path: new RegExp(`^${S}/v1/bot/([^/]+)/reaction/(\\d+)$`),
        access: 'bot',
        csrf: true,
        handle: (ctx, m) => this.#botReaction(ctx, 'POST', m[1] ?? '', Number(m[2])),
      },
      {
        method: 'DELETE',
        path: new RegExp(`^${S}/v1/bot/([^/]+)/reaction/(\\d+)$`),
        access: 'bot',
        csrf: true,
        handle: (ctx, m) => this.#botReaction(ctx, 'DELETE', m[1] ?? '', Number(m[2])),
      },
      {
        method: 'GET',
        path: new RegExp(`^${S}/v1/bot/([^/]+)$`),
        access: 'login',
        csrf: true,
        handle: (ctx, m) => {
          const room = moderatorRoom(ctx, m[1] ?? '');
          if (!(room instanceof FakeRoom)) return room;
          const list = [...this.bots.values()].map((b) => this.#formatBot(b, room.enabledBots.has(b.talkId) ? 1 : 0));
          return ocsData(ctx.version, ctx.format, list);
        },
      },
      {
        method: 'POST',
        path: new RegExp(`^${S}/v1/bot/([^/]+)/(\\d+)$`),
        access: 'login',
        csrf: true,
        handle: (ctx, m) => {
          const room = moderatorRoom(ctx, m[1] ?? '');
          if (!(room instanceof FakeRoom)) return room;
          const bot = this.bots.get(Number(m[2]));
          if (!bot) return ocsFailure(ctx.version, ctx.format, 400, '', { error: 'bot' });
          // BotController::enableBot: no bots in former one-to-one (or federated) conversations.
          if (room.type === 5) return ocsFailure(ctx.version, ctx.format, 400, '', { error: 'room' });
          // Talk 19 sends no Join event on enable (capture 60); Talk 21 does (talk-21-webhook-bot-enabled-join.json).
          if (room.enabledBots.has(bot.talkId)) return ocsData(ctx.version, ctx.format, this.#formatBot(bot, 1), 200);
          room.enabledBots.add(bot.talkId);
          this.#botMembership(room, bot, 'Join');
          return ocsData(ctx.version, ctx.format, this.#formatBot(bot, 1), 201);
        },
      },
      {
        method: 'DELETE',
        path: new RegExp(`^${S}/v1/bot/([^/]+)/(\\d+)$`),
        access: 'login',
        csrf: true,
        handle: (ctx, m) => {
          const room = moderatorRoom(ctx, m[1] ?? '');
          if (!(room instanceof FakeRoom)) return room;
          const bot = this.bots.get(Number(m[2]));
          if (!bot) return ocsFailure(ctx.version, ctx.format, 400, '', { error: 'bot' });
          // Talk 21 tells the bot it left (talk-21-webhook-bot-disabled-leave.json).
          if (room.enabledBots.delete(bot.talkId)) this.#botMembership(room, bot, 'Leave');
          return ocsData(ctx.version, ctx.format, this.#formatBot(bot, 0), 200);
        },
      },
    ];
  }

  async #botReaction(ctx: RouteContext, method: 'POST' | 'DELETE', token: string, messageId: number): Promise<FakeReply> {
    const room = this.rooms.get(token);
    const reaction = String(ctx.params['reaction'] ?? '');
    const record: BotReactionRecord = { token, messageId, reaction, method, signatureValid: false, status: 0, at: this.#now() };
    this.botReactions.push(record);
    const done = (status: number): FakeReply => {
      record.status = status;
      return status < 300 ? ocsData(ctx.version, ctx.format, [], status) : ocsFailure(ctx.version, ctx.format, status, '');
    };
    const auth = this.#verifyBot(ctx, room, reaction);
    record.signatureValid = auth.status === 0;
    if (auth.status !== 0 || !auth.bot || !room) return done(auth.status === 0 ? 401 : auth.status);
    const target = room.message(messageId);
    if (!target) return done(404);
    if (target.messageType === 'system' || target.messageType === 'comment_deleted' || reaction === '') return done(400);
    const botActorId = `bot-${auth.bot.urlHash}`;
    const key = actorKey('bots', botActorId);
    const actors = target.reactions.get(reaction) ?? new Set<string>();
    const botActor = { actorType: 'bots' as const, actorId: botActorId, displayName: this.#botDisplayName(auth.bot) };
    if (method === 'POST') {
      if (actors.has(key)) return done(200);
      actors.add(key);
      target.reactions.set(reaction, actors);
      this.#reactedAt.set(`${target.id}/${reaction}/${key}`, this.#seconds());
      this.#append(room, botActor, reaction, { systemMessage: 'reaction', replyTo: target.id });
      await this.#deliver(this.#queueReaction(room, target, reaction, true));
      return done(201);
    }
    if (!actors.has(key)) return done(404);
    actors.delete(key);
    if (actors.size === 0) target.reactions.delete(reaction);
    const original = room.messages.find((x) => x.systemMessage === 'reaction' && x.replyTo === target.id && x.actorId === botActorId && x.message === reaction);
    if (original) {
      original.systemMessage = 'reaction_deleted';
      original.message = 'Reaction deleted by author';
      original.messageParameters = {};
    }
    // A bot renders as a deleted user here, and this one does reach the bots (capture 69).
    const revoked = this.#append(room, botActor, '{actor} deleted a reaction', {
      systemMessage: 'reaction_revoked',
      parameters: { actor: { type: 'highlight', id: 'deleted_users', name: 'Deleted user' } },
      replyTo: target.id,
    });
    await this.#fireAndWait(room, revoked);
    return done(200);
  }
}
