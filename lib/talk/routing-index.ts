import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

/**
 * What the webhook needs to decide, in memory and in microseconds, whether an
 * event can concern a bot at all (S19: route cheaply before persisting).
 * Refreshed at start, periodically, and right after the worker changes state.
 */
export class RoutingIndex {
  readonly #db: Kysely<Database>;
  readonly #afterRefresh: (() => Promise<void>) | null;
  #mentions = new Set<string>();
  #activeRooms = new Set<string>();
  #refreshing: Promise<void> | null = null;

  /** `afterRefresh` lets the processing thread refresh the intake's copy too. */
  constructor(db: Kysely<Database>, afterRefresh: (() => Promise<void>) | null = null) {
    this.#db = db;
    this.#afterRefresh = afterRefresh;
  }

  get mentions(): ReadonlySet<string> {
    return this.#mentions;
  }

  /** Rooms with a bot in always-mode or in onboarding (plain replies may concern them). */
  roomIsActive(roomToken: string): boolean {
    return this.#activeRooms.has(roomToken);
  }

  refresh(): Promise<void> {
    if (!this.#refreshing) {
      this.#refreshing = this.#load().finally(() => {
        this.#refreshing = null;
      });
    }
    return this.#refreshing;
  }

  async #load(): Promise<void> {
    await this.#loadHere();
    await this.#afterRefresh?.();
  }

  async #loadHere(): Promise<void> {
    const bots = await this.#db.selectFrom('bots').select('mention').where('active', '=', 1).execute();
    const rooms = await this.#db
      .selectFrom('room_states')
      .select('room_token')
      .where((eb) => eb.or([eb('response_mode', '=', 'always'), eb('onboarding_status', '!=', 'completed')]))
      .distinct()
      .execute();
    this.#mentions = new Set(bots.map((b) => b.mention));
    this.#activeRooms = new Set(rooms.map((r) => r.room_token));
  }
}
