import type { Kysely } from 'kysely';
import type { Registrar } from '../appapi/enabled-handler.ts';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import { registerTalkBot, unregisterTalkBot } from '../nextcloud/talk-appapi.ts';
import type { Database } from '../storage/schema.ts';
import type { Vault } from '../vault/vault.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';

export const SHARED_ROUTE = 'talk_bot';
export const SHARED_NAME = 'Talk AI';
export const SHARED_DESCRIPTION = 'Multi-bot AI assistant: mention a bot with @name to talk to it';

export function secretName(route: string): string {
  return `talk.bot-secret.${route}`;
}

// Talk's BotService::validateBotParameters measures both with PHP's strlen: bytes, not characters.
export const MAX_TALK_NAME_BYTES = 64;
const MAX_TALK_DESCRIPTION_BYTES = 4000;

/** The longest start of `text` that fits in `maxBytes` of UTF-8, never cutting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    bytes += Buffer.byteLength(ch);
    if (bytes > maxBytes) break;
    end += ch.length;
  }
  return text.slice(0, end);
}

const SEEN_REFRESH_MS = 10 * 60_000;

// Asked on every Talk turn: prepared once (storage/prepared-query.ts).
const DEDICATED_ROUTE = new PreparedQuery((db, p: { botId: string; roomToken: string }) =>
  db
    .selectFrom('talk_identities')
    .innerJoin('room_identities', 'room_identities.route', 'talk_identities.route')
    .select('talk_identities.route')
    .where('talk_identities.bot_id', '=', p.botId)
    .where('room_identities.room_token', '=', p.roomToken),
);

/** Our Talk bots registered through AppAPI, and their secrets (in the vault). */
export class TalkIdentities {
  readonly #db: Kysely<Database>;
  readonly #vault: Vault;
  readonly #nextcloud: NextcloudClient;
  readonly #now: () => number;
  readonly #secrets = new Map<string, string>();
  /** When this process last wrote (room, route) to room_identities. */
  readonly #seen = new Map<string, number>();
  readonly #speaksFor: ((botId: string) => Promise<boolean>) | null;

  /** `speaksFor`: whether a bot may answer through its own identity now (S14); replies fall back to the delivering one. */
  constructor(deps: { db: Kysely<Database>; vault: Vault; nextcloud: NextcloudClient; now?: () => number; speaksFor?: (botId: string) => Promise<boolean> }) {
    this.#speaksFor = deps.speaksFor ?? null;
    this.#db = deps.db;
    this.#vault = deps.vault;
    this.#nextcloud = deps.nextcloud;
    this.#now = deps.now ?? Date.now;
  }

  /** Registers (idempotently: AppAPI reuses the secret) and stores the secret. */
  async register(route: string, name: string, description: string, botId: string | null): Promise<void> {
    const talkName = truncateUtf8(name, MAX_TALK_NAME_BYTES);
    const data = await registerTalkBot(this.#nextcloud, {
      name: talkName,
      route: `/${route}`,
      description: truncateUtf8(description, MAX_TALK_DESCRIPTION_BYTES),
    });
    if (!data || typeof data.secret !== 'string' || data.secret.length < 40) throw new Error('AppAPI returned no bot secret');
    await this.#vault.put(secretName(route), data.secret);
    this.#secrets.set(route, data.secret);
    const now = this.#now();
    await this.#db
      .insertInto('talk_identities')
      .values({ route, bot_id: botId, talk_name: talkName, appapi_bot_id: String(data.id), registered_at: now })
      .onConflict((oc) => oc.column('route').doUpdateSet({ bot_id: botId, talk_name: talkName, appapi_bot_id: String(data.id), registered_at: now }))
      .execute();
  }

  async unregister(route: string): Promise<void> {
    try {
      await unregisterTalkBot(this.#nextcloud, `/${route}`);
    } catch (err) {
      if (!(err instanceof NextcloudNotFoundError)) throw err;
    }
    this.#secrets.delete(route);
    await this.#vault.delete(secretName(route));
    await this.#db.deleteFrom('talk_identities').where('route', '=', route).execute();
  }

  async secret(route: string): Promise<string | null> {
    const cached = this.#secrets.get(route);
    if (cached) return cached;
    const value = await this.#vault.get(secretName(route));
    if (value) this.#secrets.set(route, value);
    return value;
  }

  async routes(): Promise<Array<{ route: string; botId: string | null }>> {
    const rows = await this.#db.selectFrom('talk_identities').select(['route', 'bot_id']).execute();
    return rows.map((r) => ({ route: r.route, botId: r.bot_id }));
  }

  /** The bot a dedicated identity belongs to (null for the shared one and unknown routes). */
  async botFor(route: string): Promise<string | null> {
    const row = await this.#db.selectFrom('talk_identities').select('bot_id').where('route', '=', route).executeTakeFirst();
    return row?.bot_id ?? null;
  }

  /** Whether this identity has delivered from the room (it is, or was, enabled there). */
  async seenIn(roomToken: string, route: string): Promise<boolean> {
    const row = await this.#db.selectFrom('room_identities').select('route').where('room_token', '=', roomToken).where('route', '=', route).executeTakeFirst();
    return row !== undefined;
  }

  /** Remembers that a room delivers through this identity (it is enabled there). */
  async sawRoom(roomToken: string, route: string): Promise<void> {
    const now = this.#now();
    // Only the row's existence is read; writing it once per room and route every few minutes is enough.
    const key = `${roomToken}\0${route}`;
    const last = this.#seen.get(key);
    if (last !== undefined && now - last < SEEN_REFRESH_MS && now >= last) return;
    if (this.#seen.size >= 100_000) this.#seen.clear();
    this.#seen.set(key, now);
    await this.#db
      .insertInto('room_identities')
      .values({ room_token: roomToken, route, last_seen_at: now })
      .onConflict((oc) => oc.columns(['room_token', 'route']).doUpdateSet({ last_seen_at: now }))
      .execute();
  }

  /** The identity is no longer enabled in the room (Talk refused it there): replies go through the delivering one. */
  async forgetRoom(roomToken: string, route: string): Promise<void> {
    this.#seen.delete(`${roomToken}\0${route}`);
    await this.#db.deleteFrom('room_identities').where('room_token', '=', roomToken).where('route', '=', route).execute();
  }

  /**
   * Which identity answers for `botId` in a room: its dedicated Talk bot when
   * that one is enabled there, otherwise the identity the message came through.
   */
  async replyRoute(roomToken: string, botId: string, deliveredRoute: string): Promise<string> {
    const dedicated = await DEDICATED_ROUTE.first(this.#db, { botId, roomToken });
    if (dedicated && this.#speaksFor && !(await this.#speaksFor(botId))) return deliveredRoute;
    return dedicated?.route ?? deliveredRoute;
  }
}

/** The shared "Talk AI" bot: registered on enable, unregistered on disable (AppAPI/Talk convention). */
export function sharedTalkBotRegistrar(identities: TalkIdentities, logger: Logger): Registrar {
  return {
    name: 'the Talk bot',
    register: async () => {
      await identities.register(SHARED_ROUTE, SHARED_NAME, SHARED_DESCRIPTION, null);
      logger.info({ route: SHARED_ROUTE }, 'Talk bot registered');
    },
    unregister: async () => {
      await identities.unregister(SHARED_ROUTE);
      logger.info({ route: SHARED_ROUTE }, 'Talk bot unregistered');
    },
  };
}

/** The Talk description of a shared bot's own Talk identity. */
export function dedicatedDescription(bot: { mention: string }): string {
  return `Talk AI bot @${bot.mention}`;
}
