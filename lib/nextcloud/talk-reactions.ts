// Talk's chat and reaction calls for reaction confirmations (S7, issue 23), as recorded in
// test/fixtures/nextcloud33/talk-21-reactions.json. Talk 21's bot post returns no message id,
// so a bot's message is found by its referenceId in the chat, read as a room member.
import type { NextcloudClient, NextcloudSession } from './client.ts';

export interface ReactionActor {
  actorType: string;
  actorId: string;
}

interface ChatMessage {
  id?: unknown;
  actorType?: unknown;
  referenceId?: unknown;
  messageType?: unknown;
}

/** How far back the chat is read for the bot's message (Talk's limit is 200). */
const CHAT_LOOKBACK = 100;

/**
 * The id of the newest bot comment in the room carrying `referenceId`, read as `session`'s user;
 * null when it is not among the last messages. Only `bots` comments count: a user can post with
 * any referenceId, a bot message cannot be forged by one.
 */
export async function findBotMessageByReferenceId(session: NextcloudSession, roomToken: string, referenceId: string): Promise<string | null> {
  const recent = await session.ocs<ChatMessage[] | null>('GET', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}', {
    params: { token: roomToken },
    query: { lookIntoFuture: 0, limit: CHAT_LOOKBACK, setReadMarker: 0, markNotificationsAsRead: 0 },
    timeoutMs: 10_000,
  });
  for (const m of Array.isArray(recent) ? recent : []) {
    if (m.referenceId !== referenceId || m.actorType !== 'bots' || m.messageType !== 'comment') continue;
    const id = typeof m.id === 'number' ? String(m.id) : typeof m.id === 'string' ? m.id : '';
    if (/^[1-9][0-9]{0,18}$/.test(id)) return id;
  }
  return null;
}

/** Who reacted with what on one message (emoji → actors), read as `session`'s user. */
export async function readReactions(session: NextcloudSession, roomToken: string, messageId: string): Promise<Map<string, ReactionActor[]>> {
  const data = await session.ocs<Record<string, unknown> | unknown[] | null>('GET', '/ocs/v2.php/apps/spreed/api/v1/reaction/{token}/{messageId}', {
    params: { token: roomToken, messageId },
    timeoutMs: 10_000,
  });
  const out = new Map<string, ReactionActor[]>();
  // PHP sends `[]` for no reactions.
  if (data === null || Array.isArray(data) || typeof data !== 'object') return out;
  for (const [emoji, list] of Object.entries(data)) {
    if (!Array.isArray(list)) continue;
    const actors: ReactionActor[] = [];
    for (const a of list as Array<{ actorType?: unknown; actorId?: unknown }>) {
      if (typeof a?.actorType === 'string' && typeof a.actorId === 'string') actors.push({ actorType: a.actorType, actorId: a.actorId });
    }
    out.set(emoji, actors);
  }
  return out;
}

/** A bot's reaction on a message; `headers` carry the HMAC over the emoji. 201 added, 200 already there. */
export async function postBotReaction(
  client: NextcloudClient,
  roomToken: string,
  messageId: string,
  reaction: string,
  headers: Record<string, string>,
): Promise<{ status: number }> {
  return client.botOcs('POST', '/ocs/v2.php/apps/spreed/api/v1/bot/{token}/reaction/{messageId}', {
    params: { token: roomToken, messageId },
    body: { reaction },
    headers,
    timeoutMs: 10_000,
  });
}
