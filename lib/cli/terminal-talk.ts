// The Talk ends of the pipeline for the terminal playground (`make chat`): lines typed in the terminal
// become the "verified" messages, and the messages a reply stream would post are printed instead.
import { randomBytes } from 'node:crypto';
import type { BotMessage, MessageSender } from '../replies/bot-sender.ts';
import type { InboxEvent } from '../intake/inbox.ts';
import type { VerificationResult } from '../talk/message-verifier.ts';
import { parseChatApiMessage } from '../talk/message-parser.ts';
import type { LoggedChunk, ReplyRecord } from '../replies/reply-log.ts';
import type { RoomFacts, RoomFactsSource, RoomInfo } from '../talk/room-info.ts';
import { SHARED_ROUTE } from '../talk/talk-identities.ts';
import type { TalkSeams } from '../pipeline/talk-seams.ts';
import { issueForOperator } from '../nextcloud/identity.ts';

export interface TerminalTalkOptions {
  uid: string;
  /** A real room's token (its context and documents); null: a room of this session only. */
  roomToken: string | null;
  /** Where a posted message goes: `name` is the identity it goes out as. */
  print: (text: string, message: BotMessage, route: string) => void;
  reviewMode?: boolean;
  now?: () => number;
}

/** The session's own room: longer than any Talk token (8 characters), so it never names a real room. */
export function virtualRoomToken(): string {
  return `terminal${randomBytes(10).toString('hex')}`;
}

/**
 * One terminal conversation: `message(text)` gives the inbox event a Talk webhook would have
 * brought, and `seams` the pieces that read it back and print the answer. Every other module is
 * the application's own.
 */
export class TerminalTalk {
  readonly uid: string;
  readonly roomToken: string;
  /** The session's own room (cleaned at the end), not a real one. */
  readonly virtual: boolean;
  readonly #texts = new Map<string, string>();
  readonly #chunks = new Map<number, LoggedChunk[]>();
  readonly #options: TerminalTalkOptions;
  readonly #now: () => number;
  #seq = 0;
  /** Message ids above Talk's (which count up from 1 per server), unique within the session. */
  readonly #idBase: number;
  #muted = false;
  /** The Talk identity messages arrive through: the shared one, or in a real room where only the bot's own is enabled, that one. */
  route = SHARED_ROUTE;

  constructor(options: TerminalTalkOptions) {
    this.#options = options;
    this.uid = options.uid;
    this.virtual = options.roomToken === null;
    this.roomToken = options.roomToken ?? virtualRoomToken();
    this.#now = options.now ?? Date.now;
    this.#idBase = this.#now() * 1000;
  }

  /** The event for one typed line, as the webhook intake would have stored it. */
  message(text: string): InboxEvent {
    const seq = ++this.#seq;
    const messageId = String(this.#idBase + seq);
    this.#texts.set(messageId, text);
    const actorId = `users/${this.uid}`;
    return {
      id: seq,
      roomToken: this.roomToken,
      messageId,
      actorId,
      route: this.route,
      kind: 'message',
      payload: { type: 'Create', systemName: null, actorId, roomToken: this.roomToken, messageId },
      attempts: 1,
      receivedAt: this.#now(),
    };
  }

  /** Runs `fn` with printing off (the clean-up at the end answers nothing the author needs to see). */
  async quietly<T>(fn: () => Promise<T>): Promise<T> {
    this.#muted = true;
    try {
      return await fn();
    } finally {
      this.#muted = false;
    }
  }

  get seams(): TalkSeams {
    const sender: MessageSender = {
      send: async (route, _roomToken, msg) => {
        if (!this.#muted) this.#options.print(msg.message, msg, route);
      },
      // The bot's ✅/❌ on a confirmation request: the terminal has no message to put it on, and the answer says what was done.
      react: async () => undefined,
    };
    const replyLog: ReplyRecord = {
      list: async (inboxId) => (this.#chunks.get(inboxId) ?? []).map((c) => ({ ...c })),
      intend: async (inboxId, seq, referenceId, text) => {
        const list = this.#chunks.get(inboxId) ?? [];
        list.push({ seq, referenceId, text, posted: false });
        this.#chunks.set(inboxId, list);
      },
      posted: async (inboxId, seq) => {
        const c = this.#chunks.get(inboxId)?.find((x) => x.seq === seq);
        if (c) c.posted = true;
      },
      drop: async (inboxId, seq) => {
        this.#chunks.set(
          inboxId,
          (this.#chunks.get(inboxId) ?? []).filter((x) => x.seq !== seq),
        );
      },
    };
    return {
      verifier: { verify: async (roomToken, messageId, claimedActorId) => this.#verify(roomToken, messageId, claimedActorId) },
      sender,
      handled: { markHandled: async () => true },
      replyLog,
      rooms: (talk) => this.#rooms(talk),
      ...(this.#options.reviewMode ? { reviewMode: true } : {}),
    };
  }

  /** The typed line, shaped by the same parser as Talk's own copy of a message; the author is the operator's USER. */
  #verify(roomToken: string, messageId: string, claimedActorId: string): VerificationResult {
    const text = this.#texts.get(messageId);
    this.#texts.delete(messageId);
    if (text === undefined || roomToken !== this.roomToken || claimedActorId !== `users/${this.uid}`) return { ok: false, reason: 'not-found' };
    const message = parseChatApiMessage({
      id: Number(messageId),
      token: roomToken,
      actorType: 'users',
      actorId: this.uid,
      actorDisplayName: this.uid,
      message: text,
      messageParameters: {},
      systemMessage: '',
      messageType: 'comment',
    });
    if (!message) return { ok: false, reason: 'malformed' };
    return { ok: true, message, author: issueForOperator(this.uid) };
  }

  /** The session's room is a one-to-one conversation of the user with the bot; real rooms are as Talk says (S5). */
  #rooms(talk: RoomInfo): RoomFactsSource {
    const own: RoomFacts = { token: this.roomToken, type: 1, oneToOne: true, displayName: 'Terminal', participantType: 1, isModerator: true };
    return { forUser: async (user, token) => (this.virtual && token === this.roomToken && user.uid === this.uid ? own : talk.forUser(user, token)) };
  }
}

/** A posted message as Talk shows it in the chat: the identity's name, then the text, continuation lines indented. */
export function formatForTerminal(name: string, text: string): string {
  const [first = '', ...rest] = text.split('\n');
  return [`${name}: ${first}`, ...rest.map((line) => (line === '' ? '' : `  ${line}`))].join('\n') + '\n';
}
