/** Row types of migration 0011-user-states. Timestamps are ms since the epoch. */
export type UserStatus = 'active' | 'disabled' | 'gone';

export interface UserStatesTable {
  uid: string;
  status: UserStatus;
  /** Last time this user passed the admin check; reconciliation reads `enabled` flags as such an admin. */
  admin_seen_at: number | null;
  checked_at: number;
  changed_at: number;
}

export interface UserTables {
  user_states: UserStatesTable;
}
