// What the Talk pipeline tells the knowledge layer: documents and images a
// verified message carries (queued for indexing, never indexed inside the
// webhook), RESET of a bot in a room, and deleted messages (S21).
import type { Bot } from '../bots/bot-store.ts';
import type { Logger } from '../log/logger.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ParsedMessage } from '../talk/message-parser.ts';
import type { ToolAssignment } from '../tools/tool-registry.ts';
import { ROOM_DOCS, ROOM_IMAGES } from './knowledge-provider.ts';
import type { RoomKnowledge } from './room-knowledge.ts';

export interface RoomUploadsDeps {
  rooms: Pick<RoomKnowledge, 'onMessage' | 'forgetRoom' | 'forgetMessage'>;
  /** The bot's stored tool assignments (used when the bot carries no reviewed snapshot). */
  assignments: { list(botId: string): Promise<ToolAssignment[]> };
  logger: Logger;
}

export class RoomUploads {
  readonly #d: RoomUploadsDeps;

  constructor(deps: RoomUploadsDeps) {
    this.#d = deps;
  }

  /**
   * A turn for `bot` on a message Talk confirmed: its documents and images are
   * queued when the bot has the room search tools. The author is the verified
   * local user; files are read later as them, by file id (S15). Guests' files
   * are not indexed. Failures are logged and never stop the turn.
   */
  async onTurn(bot: Bot, message: ParsedMessage, author: ActingUser | null): Promise<void> {
    if (author === null || message.attachments.length === 0 || message.actor.kind !== 'user' || message.actor.id !== author.uid) return;
    try {
      // A turn runs the reviewed snapshot's tools when there is one (S10); the same set decides here.
      const snapshot = (bot as Partial<{ tools: ToolAssignment[] }>).tools;
      const names = new Set((snapshot ?? (await this.#d.assignments.list(bot.id))).map((a) => a.name));
      const documents = names.has(ROOM_DOCS);
      const images = names.has(ROOM_IMAGES);
      if (!documents && !images) return;
      const queued = await this.#d.rooms.onMessage({
        botId: bot.id,
        roomToken: message.roomToken,
        messageId: message.messageId,
        author,
        attachments: message.attachments,
        documents,
        images,
      });
      if (queued.docs.length + queued.images.length > 0)
        this.#d.logger.debug({ botId: bot.id, docs: queued.docs.length, images: queued.images.length }, 'room uploads queued for indexing');
    } catch (err) {
      this.#d.logger.warn({ err, botId: bot.id }, 'could not queue room uploads for indexing');
    }
  }

  /** ((RESET)) of a bot in a room: its room documents and image descriptions go with its memory. */
  forgetRoom(botId: string, roomToken: string): Promise<void> {
    return this.#d.rooms.forgetRoom(botId, roomToken);
  }

  /** A message deleted in Talk: documents and images it carried are purged for every bot (S21). */
  forgetMessage(roomToken: string, messageId: string): Promise<void> {
    return this.#d.rooms.forgetMessage(roomToken, messageId);
  }
}
