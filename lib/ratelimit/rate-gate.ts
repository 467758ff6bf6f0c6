// One turn's access to the RateLimiter: every model call asks for a unit (per user, guests per room, S4).
import type { AcquireResult, RateKey, RateLimiter } from './rate-limiter.ts';

export type Refusal = Extract<AcquireResult, { ok: false }>;

/** A model call the limiter refused; the turn cannot go on now. */
export class RateLimitedError extends Error {
  override name = 'RateLimitedError';
  readonly refusal: Refusal;

  constructor(refusal: Refusal) {
    super(`rate limit reached (${refusal.level} ${refusal.window}, retry in ${Math.ceil(refusal.retryAfterMs / 1000)} s)`);
    this.refusal = refusal;
  }

  get retryAfterMs(): number {
    return this.refusal.retryAfterMs;
  }
}

/** What the agent loop needs: permission for one more model call. */
export interface ModelCallGate {
  /** Resolves when the call may go out; throws RateLimitedError when it may not. */
  acquire(): Promise<void>;
}

export interface RateGateOptions {
  /** Later calls of a turn wait for a refusal this short instead of giving up (default 15 s). */
  maxWaitMs?: number;
  /** How many waits one call may take (default 3). */
  maxWaits?: number;
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The limiter key of an actor: users by uid; guests, federated users and others share a bucket per room (S4). */
export function rateKeyFor(actor: { uid: string | null; roomToken: string }): RateKey {
  return actor.uid !== null ? { scope: 'chat', uid: actor.uid, guestRoom: null } : { scope: 'chat', uid: null, guestRoom: actor.roomToken };
}

/**
 * Counts every model call of a turn. The first call is asked for up front
 * (`first()`), so a refused turn can be queued before anything happens; later
 * calls wait out short refusals and fail on long ones.
 */
export class RateGate implements ModelCallGate {
  readonly #limiter: RateLimiter | null;
  readonly #key: RateKey;
  readonly #maxWaitMs: number;
  readonly #maxWaits: number;
  readonly #sleep: (ms: number) => Promise<void>;
  #prepaid = false;
  #calls = 0;

  constructor(limiter: RateLimiter | null, key: RateKey, options: RateGateOptions = {}) {
    this.#limiter = limiter;
    this.#key = key;
    this.#maxWaitMs = options.maxWaitMs ?? 15_000;
    this.#maxWaits = options.maxWaits ?? 3;
    this.#sleep = options.sleep ?? realSleep;
  }

  /** Model calls granted so far. */
  get calls(): number {
    return this.#calls;
  }

  /** Asks for the turn's first call; on success the unit is kept for the next acquire(). */
  async first(): Promise<AcquireResult> {
    const result = this.#limiter === null ? ({ ok: true } as const) : await this.#limiter.tryAcquire(this.#key);
    if (result.ok) this.#prepaid = true;
    return result;
  }

  async acquire(): Promise<void> {
    this.#calls++;
    if (this.#prepaid) {
      this.#prepaid = false;
      return;
    }
    if (this.#limiter === null) return;
    for (let waits = 0; ; waits++) {
      const result = await this.#limiter.tryAcquire(this.#key);
      if (result.ok) return;
      if (waits >= this.#maxWaits || result.retryAfterMs > this.#maxWaitMs) {
        this.#calls--;
        throw new RateLimitedError(result);
      }
      await this.#sleep(Math.max(1, result.retryAfterMs));
    }
  }
}
