// A shared bot's own Talk bot (its name on replies instead of "Talk AI"), for approved global bots only (S14).
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { dedicatedDescription, MAX_TALK_NAME_BYTES, truncateUtf8, type TalkIdentities } from '../talk/talk-identities.ts';
import { isPublished } from './bot-access.ts';
import type { Bot } from './bot-store.ts';
import { GovernanceError, type DedicatedTalkBots } from './governance.ts';

/** Talk rejects bot names longer than 64 bytes of UTF-8. */
export const MAX_TALK_BOT_NAME = MAX_TALK_NAME_BYTES;

/** Every dedicated route: `talk_bot_` and a bot id (never the shared `talk_bot`). */
export const DEDICATED_ROUTE_PATTERN = /^talk_bot_[A-Za-z0-9-]{1,64}$/;

export function dedicatedRoute(botId: string): string {
  return `talk_bot_${botId}`;
}

/** Only an active bot approved for everyone may speak through its own Talk identity (S14). */
export function mayHaveOwnIdentity(bot: Bot | null | undefined): boolean {
  return bot !== null && bot !== undefined && bot.active && isPublished(bot) && bot.visibility === 'global';
}

export class DedicatedTalkBotService implements DedicatedTalkBots {
  readonly #db: Kysely<Database>;
  readonly #identities: TalkIdentities;

  constructor(deps: { db: Kysely<Database>; identities: TalkIdentities }) {
    this.#db = deps.db;
    this.#identities = deps.identities;
  }

  async current(botId: string): Promise<{ route: string; name: string } | null> {
    const row = await this.#db.selectFrom('talk_identities').select(['route', 'talk_name']).where('bot_id', '=', botId).executeTakeFirst();
    return row ? { route: row.route, name: row.talk_name } : null;
  }

  /** Registers through AppAPI (idempotent); refused unless the bot is approved for everyone. */
  async register(bot: Bot, name?: string): Promise<{ route: string; name: string }> {
    if (!isPublished(bot) || bot.visibility !== 'global') {
      throw new GovernanceError(409, 'not_global', 'Only bots approved for everyone can have their own Talk bot');
    }
    // A name the admin gave must fit; the display name is only a default, so it is shortened to fit.
    const talkName = name !== undefined ? name.trim() : truncateUtf8(bot.displayName.trim(), MAX_TALK_BOT_NAME).trim();
    if (talkName === '' || Buffer.byteLength(talkName) > MAX_TALK_BOT_NAME) {
      throw new GovernanceError(
        400,
        'bad_name',
        `A Talk bot name has 1 to ${MAX_TALK_BOT_NAME} bytes (Talk counts UTF-8 bytes: ä or é take 2, most CJK characters 3)`,
      );
    }
    const route = dedicatedRoute(bot.id);
    await this.#identities.register(route, talkName, dedicatedDescription(bot), bot.id);
    return { route, name: talkName };
  }

  async unregister(botId: string): Promise<boolean> {
    const rows = await this.#db.selectFrom('talk_identities').select('route').where('bot_id', '=', botId).execute();
    for (const r of rows) await this.#identities.unregister(r.route);
    return rows.length > 0;
  }
}
