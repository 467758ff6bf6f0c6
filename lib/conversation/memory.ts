// What a bot remembers of a conversation: user messages and its final answers, per
// (bot, room, thread, invoker). Tool calls and results are never stored.
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';

export type MemoryRole = 'user' | 'assistant';

export interface MemoryEntry {
  botId: string;
  roomToken: string;
  /** null = the main conversation. */
  threadId: string | null;
  /** null unless memory is kept per invoker (bots with user-mode tools, S6). */
  invokerUid: string | null;
  role: MemoryRole;
  authorUid: string;
  /**
   * The Talk message id of a user row. For an assistant row pass the id of the user message it
   * answers (bot posts carry none), so that deleting that message also forgets the answer.
   */
  messageId: string | null;
  content: string;
}

export interface MemoryScope {
  botId: string;
  roomToken: string;
  threadId: string | null;
  invokerUid: string | null;
}

export interface MemoryMessage {
  role: MemoryRole;
  content: string;
  authorUid: string;
  messageId: string | null;
}

export const MEMORY_ROW_LIMIT = 50;
export const DEFAULT_TOKEN_BUDGET = 8000;
const DAY_MS = 86_400_000;

/** Rough token count used for the context budget. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

// Column sizes, checked here so SQLite (which does not enforce them) behaves like PostgreSQL.
function checkLength(name: string, value: string, max: number): void {
  if (value.length > max) throw new RangeError(`${name} is longer than ${max} characters`);
}

// Every turn loads and appends: prepared once (storage/prepared-query.ts).
const APPEND = new PreparedQuery(
  (
    db,
    p: {
      botId: string;
      roomToken: string;
      threadId: string;
      invokerUid: string;
      role: 'user' | 'assistant';
      authorUid: string;
      messageId: string | null;
      content: string;
      now: number;
    },
  ) =>
    db
      .insertInto('conversation_messages')
      .values({
        bot_id: p.botId,
        room_token: p.roomToken,
        thread_id: p.threadId,
        invoker_uid: p.invokerUid,
        role: p.role,
        author_uid: p.authorUid,
        message_id: p.messageId,
        content: p.content,
        created_at: p.now,
      }),
);
const APPEND_EXCHANGE = new PreparedQuery(
  (
    db,
    p: {
      botId: string;
      roomToken: string;
      threadId: string;
      invokerUid: string;
      authorUid: string;
      messageId: string | null;
      content: string;
      answerAuthorUid: string;
      answerMessageId: string | null;
      answerContent: string;
      now: number;
    },
  ) =>
    db.insertInto('conversation_messages').values([
      {
        bot_id: p.botId,
        room_token: p.roomToken,
        thread_id: p.threadId,
        invoker_uid: p.invokerUid,
        role: 'user',
        author_uid: p.authorUid,
        message_id: p.messageId,
        content: p.content,
        created_at: p.now,
      },
      {
        bot_id: p.botId,
        room_token: p.roomToken,
        thread_id: p.threadId,
        invoker_uid: p.invokerUid,
        role: 'assistant',
        author_uid: p.answerAuthorUid,
        message_id: p.answerMessageId,
        content: p.answerContent,
        created_at: p.now,
      },
    ]),
);
const LOAD = new PreparedQuery((db, p: { botId: string; roomToken: string; threadId: string; invokerUid: string; limit: number }) =>
  db
    .selectFrom('conversation_messages')
    .select(['id', 'role', 'content', 'author_uid', 'message_id'])
    .where('bot_id', '=', p.botId)
    .where('room_token', '=', p.roomToken)
    .where('thread_id', '=', p.threadId)
    .where('invoker_uid', '=', p.invokerUid)
    .orderBy('id', 'desc')
    .limit(p.limit),
);
/** The entry's columns, checked (bounded lengths, known role). */
function checked(entry: MemoryEntry) {
  const threadId = entry.threadId ?? '';
  const invokerUid = entry.invokerUid ?? '';
  checkLength('botId', entry.botId, 36);
  checkLength('roomToken', entry.roomToken, 64);
  checkLength('threadId', threadId, 32);
  checkLength('invokerUid', invokerUid, 64);
  checkLength('authorUid', entry.authorUid, 255);
  if (entry.messageId !== null) checkLength('messageId', entry.messageId, 32);
  if (entry.role !== 'user' && entry.role !== 'assistant') throw new RangeError(`unknown role ${String(entry.role)}`);
  return {
    botId: entry.botId,
    roomToken: entry.roomToken,
    threadId,
    invokerUid,
    role: entry.role,
    authorUid: entry.authorUid,
    messageId: entry.messageId,
    content: entry.content,
  };
}

export class ConversationMemory {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async append(entry: MemoryEntry): Promise<void> {
    await APPEND.execute(this.#db, { ...checked(entry), now: this.#now() });
  }

  /** A user message and the answer to it, in one statement (same scope; the user row comes first). */
  async appendExchange(user: MemoryEntry, answer: MemoryEntry): Promise<void> {
    const u = checked(user);
    const a = checked(answer);
    if (u.role !== 'user' || a.role !== 'assistant') throw new RangeError('an exchange is a user row, then an assistant row');
    if (u.botId !== a.botId || u.roomToken !== a.roomToken || u.threadId !== a.threadId || u.invokerUid !== a.invokerUid)
      throw new RangeError('an exchange stays in one scope');
    await APPEND_EXCHANGE.execute(this.#db, { ...u, answerAuthorUid: a.authorUid, answerMessageId: a.messageId, answerContent: a.content, now: this.#now() });
  }

  /**
   * The newest rows of exactly this scope that fit the budget, oldest first. The newest
   * user row is always kept; the rest are taken newest first until one would not fit.
   */
  async load(scope: MemoryScope, tokenBudget: number = DEFAULT_TOKEN_BUDGET): Promise<MemoryMessage[]> {
    const rows = await LOAD.rows(this.#db, {
      botId: scope.botId,
      roomToken: scope.roomToken,
      threadId: scope.threadId ?? '',
      invokerUid: scope.invokerUid ?? '',
      limit: MEMORY_ROW_LIMIT,
    });
    const newestUser = rows.find((r) => r.role === 'user');
    let used = newestUser ? estimateTokens(newestUser.content) : 0;
    const kept = new Set(newestUser ? [newestUser] : []);
    for (const row of rows) {
      if (row === newestUser) continue;
      const tokens = estimateTokens(row.content);
      if (used + tokens > tokenBudget) break;
      used += tokens;
      kept.add(row);
    }
    return rows
      .filter((r) => kept.has(r))
      .reverse()
      .map((r) => ({ role: r.role, content: r.content, authorUid: r.author_uid, messageId: r.message_id }));
  }

  /** Every thread and invoker of the bot in the room (RESET). */
  async forgetRoom(botId: string, roomToken: string): Promise<number> {
    const result = await this.#db.deleteFrom('conversation_messages').where('bot_id', '=', botId).where('room_token', '=', roomToken).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** A deleted Talk message leaves every bot's memory, with the answers to it (S21). */
  async forgetMessage(roomToken: string, messageId: string): Promise<number> {
    const result = await this.#db
      .deleteFrom('conversation_messages')
      .where('room_token', '=', roomToken)
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Retention: removes rows older than `days` days. */
  async pruneOlderThan(days: number): Promise<number> {
    if (!Number.isFinite(days) || days < 0) throw new RangeError('days must be a non-negative number');
    const cutoff = this.#now() - days * DAY_MS;
    const result = await this.#db.deleteFrom('conversation_messages').where('created_at', '<', cutoff).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * A removed user (S21): their messages, the answers to them, and every row kept for
   * them as invoker, so a re-created uid starts empty.
   */
  async forgetUser(uid: string): Promise<number> {
    // '' is the shared scope of everyone else's memory.
    if (uid === '') return 0;
    return this.#db.transaction().execute(async (trx) => {
      const authored = await trx
        .selectFrom('conversation_messages')
        .select(['room_token', 'message_id'])
        .where('author_uid', '=', uid)
        .where('role', '=', 'user')
        .where('message_id', 'is not', null)
        .execute();
      const byRoom = new Map<string, string[]>();
      for (const r of authored) {
        if (r.message_id === null) continue;
        const ids = byRoom.get(r.room_token) ?? [];
        ids.push(r.message_id);
        byRoom.set(r.room_token, ids);
      }
      let count = 0;
      for (const [room, ids] of byRoom) {
        for (let i = 0; i < ids.length; i += 500) {
          const result = await trx
            .deleteFrom('conversation_messages')
            .where('room_token', '=', room)
            .where('message_id', 'in', ids.slice(i, i + 500))
            .executeTakeFirst();
          count += Number(result.numDeletedRows);
        }
      }
      const rest = await trx
        .deleteFrom('conversation_messages')
        .where((eb) => eb.or([eb('author_uid', '=', uid), eb('invoker_uid', '=', uid)]))
        .executeTakeFirst();
      return count + Number(rest.numDeletedRows);
    });
  }
}
