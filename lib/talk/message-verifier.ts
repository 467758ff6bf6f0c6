import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudNotFoundError, NextcloudAuthError } from '../nextcloud/errors.ts';
import { issueFromConfirmedTalkAuthor, issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import { readMessageContext } from '../nextcloud/talk.ts';
import { parseChatApiMessage, type ParsedMessage } from './message-parser.ts';

export type VerificationResult =
  { ok: true; message: ParsedMessage; author: ActingUser | null } | { ok: false; reason: 'not-found' | 'author-mismatch' | 'unverifiable-actor' | 'malformed' };

/**
 * S3: a delivery through AppAPI carries only the empty-user header, which an
 * anonymous proxy request can carry too. Before anything runs, Talk itself
 * must confirm, reading as the claimed author, that this message exists in
 * this room from this author. Talk's own copy is what gets processed.
 */
export class MessageVerifier {
  readonly #nextcloud: NextcloudClient;
  readonly #logger: Logger;

  constructor(nextcloud: NextcloudClient, logger: Logger) {
    this.#nextcloud = nextcloud;
    this.#logger = logger;
  }

  /**
   * `claimedActorId` is the delivered `actor.id` (e.g. users/alice).
   * `roomWitness` is a user already verified in this room, used to read the
   * chat for guests and federated users, who cannot be impersonated (S4).
   */
  async verify(roomToken: string, messageId: string, claimedActorId: string, roomWitness: string | null): Promise<VerificationResult> {
    const slash = claimedActorId.indexOf('/');
    const type = slash > 0 ? claimedActorId.slice(0, slash) : '';
    const id = slash > 0 ? claimedActorId.slice(slash + 1) : '';
    let reader: ActingUser;
    if (type === 'users' && id) {
      // A probe identity only: it reads this one message; it is not handed to anything else.
      reader = issueForStoredPrincipal(id);
    } else if ((type === 'guests' || type === 'federated_users' || type === 'emails') && roomWitness) {
      reader = issueForStoredPrincipal(roomWitness);
    } else {
      return { ok: false, reason: 'unverifiable-actor' };
    }
    let data: unknown;
    try {
      data = await readMessageContext(this.#nextcloud.as(reader), roomToken, messageId, 1);
    } catch (err) {
      if (err instanceof NextcloudNotFoundError || err instanceof NextcloudAuthError) return { ok: false, reason: 'not-found' };
      throw err;
    }
    const list = Array.isArray(data) ? data : [];
    const raw = list.find((m) => typeof m === 'object' && m !== null && String((m as { id?: unknown }).id) === messageId);
    if (!raw) return { ok: false, reason: 'not-found' };
    const message = parseChatApiMessage(raw);
    if (!message) return { ok: false, reason: 'malformed' };
    if (message.roomToken !== roomToken || message.actor.rawId !== claimedActorId) {
      this.#logger.warn({ roomToken, messageId }, 'delivered author does not match Talk');
      return { ok: false, reason: 'author-mismatch' };
    }
    const author = message.actor.kind === 'user' ? issueFromConfirmedTalkAuthor(message.actor.id) : null;
    return { ok: true, message, author };
  }
}
