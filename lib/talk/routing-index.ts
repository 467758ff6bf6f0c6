import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';

const NONE: ReadonlySet<string> = new Set();

/** A bot's own Talk identity as the intake sees it. */
export interface IdentityRoute {
  route: string;
  botId: string;
  mention: string;
}

/**
 * What the webhook needs to decide, in memory and in microseconds, whether an
 * event can concern a bot at all (S19: route cheaply before persisting).
 * Refreshed at start, periodically, and right after the worker changes state.
 *
 * `forIdentity(route)` is the same index seen from a bot's own Talk identity
 * (S14): only that bot's mention, and only rooms where that bot is in
 * always-mode or onboarding, so deliveries for other bots are not kept.
 */
export class RoutingIndex {
  readonly #db: Kysely<Database>;
  readonly #afterRefresh: (() => Promise<void>) | null;
  #mentions = new Set<string>();
  #activeRooms = new Set<string>();
  /** Rooms where any bot has state (and so maybe memory or room documents). */
  #knownRooms = new Set<string>();
  #activeByBot = new Map<string, Set<string>>();
  #identities = new Map<string, IdentityRoute>();
  #refreshing: Promise<void> | null = null;
  #followUp: Promise<void> | null = null;
  /** Set on views made by forIdentity. */
  #parent: RoutingIndex | null = null;
  #route: string | null = null;

  /** `afterRefresh` lets the processing thread refresh the intake's copy too. */
  constructor(db: Kysely<Database>, afterRefresh: (() => Promise<void>) | null = null) {
    this.#db = db;
    this.#afterRefresh = afterRefresh;
  }

  get mentions(): ReadonlySet<string> {
    const parent = this.#parent;
    if (parent === null) return this.#mentions;
    const identity = parent.#identities.get(this.#route ?? '');
    return identity ? new Set([identity.mention]) : NONE;
  }

  /** Rooms with a bot in always-mode or in onboarding (plain replies may concern them). */
  roomIsActive(roomToken: string): boolean {
    const parent = this.#parent;
    if (parent === null) return this.#activeRooms.has(roomToken);
    const identity = parent.#identities.get(this.#route ?? '');
    return identity !== undefined && (parent.#activeByBot.get(roomToken)?.has(identity.botId) ?? false);
  }

  /** Rooms where a bot has answered or is onboarding: their deleted messages must reach the worker (S21). */
  roomHasState(roomToken: string): boolean {
    return (this.#parent ?? this).#knownRooms.has(roomToken);
  }

  /** The bot behind a dedicated Talk identity route, if that bot is active. */
  identity(route: string): IdentityRoute | null {
    return (this.#parent ?? this).#identities.get(route) ?? null;
  }

  /** This index as seen by one bot's own Talk identity. */
  forIdentity(route: string): RoutingIndex {
    const root = this.#parent ?? this;
    const view = new RoutingIndex(root.#db, null);
    view.#parent = root;
    view.#route = route;
    return view;
  }

  /** Resolves once a load that started after this call has finished (callers meanwhile share one). */
  refresh(): Promise<void> {
    if (this.#parent !== null) return this.#parent.refresh();
    if (this.#refreshing) {
      // The running load may have read the tables before the change this caller made.
      this.#followUp ??= this.#refreshing
        .catch(() => undefined)
        .then(() => {
          this.#followUp = null;
          return this.refresh();
        });
      return this.#followUp;
    }
    this.#refreshing = this.#load().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #load(): Promise<void> {
    await this.#loadHere();
    await this.#afterRefresh?.();
  }

  async #loadHere(): Promise<void> {
    const bots = await this.#db.selectFrom('bots').select(['id', 'mention']).where('active', '=', 1).execute();
    const rooms = await this.#db
      .selectFrom('room_states')
      .select(['room_token', 'bot_id'])
      .where((eb) => eb.or([eb('response_mode', '=', 'always'), eb('onboarding_status', '!=', 'completed')]))
      .execute();
    const known = await this.#db.selectFrom('room_states').select('room_token').distinct().execute();
    const identities = await this.#db.selectFrom('talk_identities').select(['route', 'bot_id']).where('bot_id', 'is not', null).execute();
    const mentionOf = new Map(bots.map((b) => [b.id, b.mention]));
    const byBot = new Map<string, Set<string>>();
    for (const r of rooms) {
      let set = byBot.get(r.room_token);
      if (!set) byBot.set(r.room_token, (set = new Set()));
      set.add(r.bot_id);
    }
    const routes = new Map<string, IdentityRoute>();
    for (const i of identities) {
      const mention = i.bot_id === null ? undefined : mentionOf.get(i.bot_id);
      if (i.bot_id !== null && mention !== undefined) routes.set(i.route, { route: i.route, botId: i.bot_id, mention });
    }
    this.#mentions = new Set(bots.map((b) => b.mention));
    this.#activeRooms = new Set(rooms.map((r) => r.room_token));
    this.#knownRooms = new Set(known.map((r) => r.room_token));
    this.#activeByBot = byBot;
    this.#identities = routes;
  }
}
