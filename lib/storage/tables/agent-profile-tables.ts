/**
 * Row types of migration 0014-agent-profiles. Timestamps are ms since the epoch, booleans
 * 0/1 integers, JSON as text.
 */
export interface AgentProfilesTable {
  id: string;
  label: string;
  /** The unprivileged Nextcloud account the profile acts as (checked at save and at use, S13). */
  account_uid: string;
  scope_description: string;
  /** JSON array of tool families (files, sharing, calendar, deck, collectives). */
  tool_families: string;
  /** JSON array of group ids whose members may trigger the profile. */
  trigger_groups: string;
  /** JSON array of group ids whose members may confirm its destructive actions. */
  confirm_groups: string;
  enabled: number;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface AgentProfileGrantsTable {
  id: string;
  profile_id: string;
  /** Exactly one of bot_id and owner_uid is set. */
  bot_id: string | null;
  owner_uid: string | null;
  /** JSON ResourceScopeInput the admin approved; an assignment's scope must lie inside it. */
  max_scope: string;
  approved_by: string;
  created_at: number;
}

export interface AgentProfileCredentialsTable {
  profile_id: string;
  name: string;
  /** Name of the vault row holding the sealed value. */
  vault_name: string;
  updated_at: number;
}

export interface ToolAuditTable {
  id: number;
  at: number;
  mode: 'user' | 'agent';
  profile_id: string | null;
  invoker_uid: string | null;
  acting_uid: string | null;
  bot_id: string;
  room_token: string | null;
  tool: string;
  /** SHA-256 of the canonical JSON arguments. */
  args_hash: string;
  outcome: 'ok' | 'error' | 'refused' | 'confirmation-requested';
  /** Short, redacted. */
  detail: string;
  trace_id: string | null;
}

export interface AgentProfileTables {
  agent_profiles: AgentProfilesTable;
  agent_profile_grants: AgentProfileGrantsTable;
  agent_profile_credentials: AgentProfileCredentialsTable;
  tool_audit: ToolAuditTable;
}
