// Deleting a bot removes everything that belongs to it; upstream leaves orphans, we do not.
import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import { localized } from '../l10n/talk-language.ts';
import type { QueuedRequest } from '../ratelimit/request-queue.ts';
import type { Database } from '../storage/schema.ts';
import { withToolTables } from '../storage/tables/tool-tables.ts';
import { SHARED_ROUTE } from '../talk/talk-identities.ts';
import { dedicatedRoute } from './dedicated-talk-bots.ts';

/** Anything else keyed by bot id (knowledge sources, room documents, …) registers here. */
export interface BotDataOwner {
  readonly name: string;
  removeBot(botId: string): Promise<unknown>;
}

export interface BotDeletionDeps {
  db: Kysely<Database>;
  queue: { removeBot(botId: string): Promise<QueuedRequest[]> };
  traces: { removeBot(botId: string): Promise<number> };
  /** Unregisters the bot's own Talk bot through AppAPI; true when it had one. */
  dedicated?: { unregister(botId: string): Promise<boolean> };
  owners?: BotDataOwner[];
  /** Posts a final notice about a dropped queued request in its room (through `route`), in its user's language. */
  tell?: (request: QueuedRequest, text: () => string) => Promise<void>;
  logger: Logger;
}

/** What a user whose request waited in the rate-limit queue reads when the bot is deleted. */
export function botDeletedText(mention: string): string {
  return deletedTexts().queued({ mention });
}

const deletedTexts = localized({
  en: { queued: ({ mention }: { mention: string }) => `⚠️ @${mention} was deleted, so your queued request will not be answered.` },
  de: { queued: ({ mention }: { mention: string }) => `⚠️ @${mention} wurde gelöscht; die wartende Anfrage wird daher nicht beantwortet.` },
});

export interface DeletionResult {
  deleted: boolean;
  /** Requests that were still waiting in the queue, so their users can be told. */
  droppedRequests: QueuedRequest[];
  tracesAnonymised: number;
  talkBotUnregistered: boolean;
}

export class BotDeletion {
  readonly #deps: BotDeletionDeps;

  constructor(deps: BotDeletionDeps) {
    this.#deps = deps;
  }

  /**
   * The Talk registration goes first: if AppAPI cannot be reached the bot
   * stays, so the deletion can be retried without leaving a Talk bot behind.
   * Everything after that is idempotent.
   */
  async delete(botId: string): Promise<DeletionResult> {
    const d = this.#deps;
    const mention = (await d.db.selectFrom('bots').select('mention').where('id', '=', botId).executeTakeFirst())?.mention ?? null;
    const talkBotUnregistered = d.dedicated ? await d.dedicated.unregister(botId) : false;
    for (const owner of d.owners ?? []) await owner.removeBot(botId);
    const droppedRequests = await d.queue.removeBot(botId);
    const tracesAnonymised = await d.traces.removeBot(botId);
    const deleted = await d.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('conversation_messages').where('bot_id', '=', botId).execute();
      await trx.deleteFrom('room_states').where('bot_id', '=', botId).execute();
      await withToolTables(trx).deleteFrom('bot_tools').where('bot_id', '=', botId).execute();
      await trx.deleteFrom('bot_versions').where('bot_id', '=', botId).execute();
      // Rows of dedicated identities AppAPI no longer knows (e.g. unregistered by hand).
      await trx.deleteFrom('talk_identities').where('bot_id', '=', botId).execute();
      await trx.deleteFrom('room_identities').where('route', '=', dedicatedRoute(botId)).execute();
      const r = await trx.deleteFrom('bots').where('id', '=', botId).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    });
    d.logger.info({ botId, deleted, droppedRequests: droppedRequests.length, tracesAnonymised, talkBotUnregistered }, 'bot deleted');
    if (d.tell && mention !== null) await this.#tellDropped(droppedRequests, botId, mention);
    return { deleted, droppedRequests, tracesAnonymised, talkBotUnregistered };
  }

  /**
   * Users whose requests were waiting get a final message instead of silence. The bot's own Talk
   * identity is gone by now, so those notices go out through the shared one. Best effort: a failed
   * notice is logged, the deletion stands.
   */
  async #tellDropped(requests: QueuedRequest[], botId: string, mention: string): Promise<void> {
    const own = dedicatedRoute(botId);
    for (const request of requests) {
      try {
        await this.#deps.tell?.({ ...request, route: request.route === own ? SHARED_ROUTE : request.route }, () => botDeletedText(mention));
      } catch (err) {
        this.#deps.logger.warn(
          { err, request: request.id, roomToken: request.roomToken },
          'could not tell a user that the bot of their queued request was deleted',
        );
      }
    }
  }
}
