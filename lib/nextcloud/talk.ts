// Talk's (spreed) chat, room and bot endpoints: the only place that knows their URLs and shapes
// (issue 21), in the manner of nc_py_api's talk.py. Reactions are in talk-reactions.ts, AppAPI's
// talk_bot registration and notifications in talk-appapi.ts. Callers keep the logic and the
// error handling; these functions only make the request and type its answer.
import type { NextcloudClient, NextcloudSession } from './client.ts';

/** A room as Talk's v4 room API returns it (the fields we read). */
export interface TalkRoom {
  token: string;
  type: number;
  displayName?: string;
  name?: string;
  participantType: number;
  readOnly?: number;
  lastActivity?: number;
}

/** One entry of a room's bot list (moderators only). `state` 1 is enabled. */
export interface TalkBotEntry {
  id: number;
  name: string;
  description?: string;
  state: number;
}

/** The rooms `session`'s user is in. */
export async function listRooms(session: NextcloudSession): Promise<TalkRoom[]> {
  return session.ocs<TalkRoom[]>('GET', '/ocs/v2.php/apps/spreed/api/v4/room');
}

/** One room as `session`'s user sees it; Talk answers 404 when they are not in it. */
export async function getRoom(session: NextcloudSession, token: string): Promise<TalkRoom> {
  return session.ocs<TalkRoom>('GET', '/ocs/v2.php/apps/spreed/api/v4/room/{token}', { params: { token } });
}

/** Creates a room of `roomType` (2 group) moderated by `session`'s user. */
export async function createRoom(session: NextcloudSession, roomType: number, roomName: string): Promise<TalkRoom> {
  return session.ocs<TalkRoom>('POST', '/ocs/v2.php/apps/spreed/api/v4/room', { body: { roomType, roomName } });
}

/** The bots of a room (moderators only). */
export async function listRoomBots(session: NextcloudSession, token: string): Promise<TalkBotEntry[]> {
  return session.ocs<TalkBotEntry[]>('GET', '/ocs/v2.php/apps/spreed/api/v1/bot/{token}', { params: { token } });
}

/** Enables Talk bot `botId` (Talk's numeric id) in a room (moderators only; idempotent). */
export async function enableRoomBot(session: NextcloudSession, token: string, botId: number): Promise<void> {
  await session.ocs('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/{token}/{botId}', { params: { token, botId: String(botId) } });
}

/** Posts `message` as `session`'s user; Talk returns the new message. */
export async function postChatMessage(session: NextcloudSession, token: string, message: string): Promise<{ id?: unknown } | null> {
  return session.ocs<{ id?: unknown } | null>('POST', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}', { params: { token }, body: { message } });
}

/** Query of Talk's chat history read (lookIntoFuture 0 reads backwards from the newest). */
export interface ChatHistoryQuery {
  lookIntoFuture: 0 | 1;
  limit: number;
  setReadMarker?: 0 | 1;
  includeLastKnown?: 0 | 1;
  markNotificationsAsRead?: 0 | 1;
}

/** The room's chat messages as `session`'s user reads them (newest first when reading backwards). */
export async function readChatHistory<M = Record<string, unknown>>(
  session: NextcloudSession,
  token: string,
  query: ChatHistoryQuery,
  timeoutMs?: number,
): Promise<M[]> {
  return session.ocs<M[]>('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}', {
    params: { token },
    query: { ...query },
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
}

/** One message and up to `limit` messages around it, as `session`'s user reads them (404 when not visible). */
export async function readMessageContext(session: NextcloudSession, token: string, messageId: string, limit: number): Promise<unknown> {
  return session.ocs<unknown>('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}/{messageId}/context', {
    params: { token, messageId },
    query: { limit },
    timeoutMs: 10_000,
  });
}

/** The body of a bot message (Talk's BotController::sendMessage). */
export interface BotMessageBody {
  message: string;
  referenceId: string;
  replyTo?: number;
  silent?: boolean;
}

/** A bot's message into a room; `headers` carry the random and the HMAC over the message text. */
export async function postBotMessage(client: NextcloudClient, token: string, body: BotMessageBody, headers: Record<string, string>): Promise<void> {
  await client.botOcs('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/{token}/message', { params: { token }, body: { ...body }, headers, timeoutMs: 15_000 });
}

/** Where a browser opens the conversation `token` (Talk's /call/ page below Nextcloud's base URL). */
export function talkCallUrl(client: Pick<NextcloudClient, 'baseUrl'>, token: string): string {
  const base = client.baseUrl.replace(/\/+$/, '').replace(/\/index\.php$/, '');
  return `${base}/index.php/call/${encodeURIComponent(token)}`;
}
