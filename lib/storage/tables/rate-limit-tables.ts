/** Row types of the rate-limit tables; `storage/schema.ts` composes them into `Database`. */

export interface RateLimitCountersTable {
  scope: string;
  level: string;
  /** '' for the instance, the uid for a user, the room token for a guest room. */
  subject: string;
  win: string;
  window_start: number;
  used: number;
  updated_at: number;
}

export interface RateLimitProviderStateTable {
  scope: string;
  remaining: number | null;
  blocked_until: number | null;
  observed_at: number;
}

export interface RateLimitTables {
  rate_limit_counters: RateLimitCountersTable;
  rate_limit_provider_state: RateLimitProviderStateTable;
}
