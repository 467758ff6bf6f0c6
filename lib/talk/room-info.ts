import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import { getRoom } from '../nextcloud/talk.ts';

export interface RoomFacts {
  token: string;
  /** Talk room types: 1 one-to-one, 2 group, 3 public, 4 changelog, 5 former one-to-one, 6 note-to-self. */
  type: number;
  oneToOne: boolean;
  displayName: string;
  /** Participant type of the asking user: 1 owner, 2 moderator, 3 user, 4 guest, 5 self-joined user, 6 guest moderator. */
  participantType: number;
  isModerator: boolean;
}

/** Room facts as a user sees them: Talk (RoomInfo), or the terminal playground's own room first. */
export type RoomFactsSource = Pick<RoomInfo, 'forUser'>;

/**
 * Room type and moderator rights come from Talk's room API as the user (S5),
 * never from the webhook: a group room can be named like a one-to-one room.
 */
export class RoomInfo {
  readonly #nextcloud: NextcloudClient;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { facts: RoomFacts | null; until: number }>();

  constructor(nextcloud: NextcloudClient, options: { ttlMs?: number; now?: () => number } = {}) {
    this.#nextcloud = nextcloud;
    this.#ttlMs = options.ttlMs ?? 15_000;
    this.#now = options.now ?? Date.now;
  }

  /** The room as `user` sees it, or null when the user is not a participant. */
  async forUser(user: ActingUser, token: string): Promise<RoomFacts | null> {
    const key = `${user.uid}\u0000${token}`;
    const now = this.#now();
    const hit = this.#cache.get(key);
    if (hit && hit.until > now) return hit.facts;
    let facts: RoomFacts | null;
    try {
      const room = await getRoom(this.#nextcloud.as(user), token);
      facts = {
        token: room.token,
        type: room.type,
        oneToOne: room.type === 1,
        displayName: room.displayName ?? room.name ?? '',
        participantType: room.participantType,
        isModerator: room.participantType === 1 || room.participantType === 2 || room.participantType === 6,
      };
    } catch (err) {
      if (!(err instanceof NextcloudNotFoundError)) throw err;
      facts = null;
    }
    this.#cache.set(key, { facts, until: now + this.#ttlMs });
    if (this.#cache.size > 5000) this.#cache.clear();
    return facts;
  }

  /** Moderators decide room modes; in a one-to-one room the participant does (S12). */
  static canDecideRoomMode(facts: RoomFacts | null): boolean {
    return facts !== null && (facts.isModerator || facts.oneToOne);
  }

  forget(token: string): void {
    for (const key of this.#cache.keys()) if (key.endsWith(`\u0000${token}`)) this.#cache.delete(key);
  }
}
