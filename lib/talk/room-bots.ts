// Talk rooms seen by a user, and our Talk bots in them: list, status, enable, "Speak in Talk". All calls act as the user.
import type { Kysely } from 'kysely';
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import {
  createRoom,
  enableRoomBot,
  getRoom,
  listRoomBots,
  listRooms,
  postChatMessage,
  talkCallUrl,
  type TalkBotEntry,
  type TalkRoom,
} from '../nextcloud/talk.ts';
import type { Database } from '../storage/schema.ts';
import { dedicatedDescription, SHARED_DESCRIPTION, SHARED_NAME, SHARED_ROUTE } from './talk-identities.ts';

/** Talk's room type of a one-to-one conversation whose other participant was deleted. */
const FORMER_ONE_TO_ONE = 5;

export interface RoomSummary {
  token: string;
  displayName: string;
  type: number;
  participantType: number;
  isModerator: boolean;
  readOnly: boolean;
  lastActivity: number;
}

/** Participant types 1 owner, 2 moderator, 6 guest moderator (Talk's Participant::*). */
function isModeratorType(t: number): boolean {
  return t === 1 || t === 2 || t === 6;
}

export class RoomBotError extends Error {
  override name = 'RoomBotError';
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class RoomBots {
  readonly #nextcloud: NextcloudClient;
  readonly #db: Kysely<Database>;

  constructor(deps: { nextcloud: NextcloudClient; db: Kysely<Database> }) {
    this.#nextcloud = deps.nextcloud;
    this.#db = deps.db;
  }

  /** Rooms the user is in: those they moderate first, then by latest activity. */
  async listRooms(user: ActingUser): Promise<RoomSummary[]> {
    const rooms = await listRooms(this.#nextcloud.as(user));
    return (Array.isArray(rooms) ? rooms : [])
      .map(summary)
      .sort((a, b) => Number(b.isModerator) - Number(a.isModerator) || b.lastActivity - a.lastActivity || a.token.localeCompare(b.token));
  }

  /** The room as the user sees it; null when they are not in it. */
  async room(user: ActingUser, token: string): Promise<RoomSummary | null> {
    try {
      return summary(await getRoom(this.#nextcloud.as(user), token));
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return null;
      throw err;
    }
  }

  /**
   * Whether our Talk bot (`route`) is enabled. Only moderators may list a
   * room's bots; for others it is known only if a message came through it.
   */
  async status(
    user: ActingUser,
    token: string,
    routes: string[] = [SHARED_ROUTE],
  ): Promise<{ room: RoomSummary; enabled: Map<string, { enabled: boolean | null; talkBotId: number | null }> }> {
    const room = await this.room(user, token);
    if (!room) throw new RoomBotError(404, 'room_not_found', 'Conversation not found');
    const enabled = new Map<string, { enabled: boolean | null; talkBotId: number | null }>();
    const list = room.isModerator ? await this.#roomBots(user, token) : null;
    for (const route of routes) {
      if (list) {
        const bot = await this.#find(list, route);
        enabled.set(route, { enabled: bot ? bot.state === 1 : false, talkBotId: bot?.id ?? null });
      } else {
        const seen = await this.#db.selectFrom('room_identities').select('route').where('room_token', '=', token).where('route', '=', route).executeTakeFirst();
        enabled.set(route, { enabled: seen ? true : null, talkBotId: null });
      }
    }
    return { room, enabled };
  }

  /** Enables our Talk bot in a room the user moderates (idempotent, as Talk's own endpoint). */
  async enable(user: ActingUser, token: string, route: string = SHARED_ROUTE): Promise<{ alreadyEnabled: boolean; talkBotId: number }> {
    const room = await this.room(user, token);
    if (!room) throw new RoomBotError(404, 'room_not_found', 'Conversation not found');
    if (!room.isModerator) throw new RoomBotError(403, 'not_moderator', 'Only moderators of this conversation can add the bot');
    // Talk refuses bots there with a bare 400 {error: 'room'} (BotController::enableBot).
    if (room.type === FORMER_ONE_TO_ONE)
      throw new RoomBotError(409, 'room_not_supported', 'Talk does not allow bots in a former one-to-one conversation; start a group conversation instead');
    const bot = await this.#find(await this.#roomBots(user, token), route);
    if (!bot) throw new RoomBotError(409, 'talk_bot_missing', 'The Talk bot is not registered; ask an administrator to enable the app again');
    if (bot.state === 1) return { alreadyEnabled: true, talkBotId: bot.id };
    await enableRoomBot(this.#nextcloud.as(user), token, bot.id);
    return { alreadyEnabled: false, talkBotId: bot.id };
  }

  /** A group conversation created by (and moderated by) the user. */
  async createRoom(user: ActingUser, name: string): Promise<RoomSummary> {
    const room = await createRoom(this.#nextcloud.as(user), 2, name);
    return summary(room);
  }

  /** Posts as the user (so it is their message, and Talk delivers it to the bots like any other). */
  async postAsUser(user: ActingUser, token: string, message: string): Promise<number | null> {
    const posted = await postChatMessage(this.#nextcloud.as(user), token, message);
    const id = Number(posted?.id);
    return Number.isSafeInteger(id) ? id : null;
  }

  /** Where the browser opens the conversation. */
  talkUrl(token: string): string {
    return talkCallUrl(this.#nextcloud, token);
  }

  async #roomBots(user: ActingUser, token: string): Promise<TalkBotEntry[]> {
    const list = await listRoomBots(this.#nextcloud.as(user), token);
    return Array.isArray(list) ? list : [];
  }

  /** Talk's numeric bot id is not AppAPI's: find our bot by its registered name and description. */
  async #find(list: TalkBotEntry[], route: string): Promise<TalkBotEntry | null> {
    const identity = await this.#db.selectFrom('talk_identities').select(['talk_name', 'bot_id']).where('route', '=', route).executeTakeFirst();
    const name = identity?.talk_name ?? (route === SHARED_ROUTE ? SHARED_NAME : null);
    if (name === null) return null;
    const named = list.filter((b) => b.name === name);
    if (route === SHARED_ROUTE) return named.find((b) => b.description === SHARED_DESCRIPTION) ?? (named.length === 1 ? (named[0] ?? null) : null);
    const bot = identity?.bot_id ? await this.#db.selectFrom('bots').select('mention').where('id', '=', identity.bot_id).executeTakeFirst() : undefined;
    const description = bot ? dedicatedDescription(bot) : null;
    return named.find((b) => b.description === description) ?? (named.length === 1 ? (named[0] ?? null) : null);
  }
}

function summary(r: TalkRoom): RoomSummary {
  return {
    token: r.token,
    displayName: r.displayName ?? r.name ?? r.token,
    type: Number(r.type),
    participantType: Number(r.participantType),
    isModerator: isModeratorType(Number(r.participantType)),
    readOnly: Number(r.readOnly ?? 0) === 1,
    lastActivity: Number(r.lastActivity ?? 0),
  };
}
