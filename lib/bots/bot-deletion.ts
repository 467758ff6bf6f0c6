// Deleting a bot removes everything that belongs to it; upstream leaves orphans, we do not.
import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import type { QueuedRequest } from '../ratelimit/request-queue.ts';
import type { Database } from '../storage/schema.ts';
import { withToolTables } from '../tools/tool-tables.ts';
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
  logger: Logger;
}

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
    return { deleted, droppedRequests, tracesAnonymised, talkBotUnregistered };
  }
}
