/**
 * Row types added by migration 0006-governance. Timestamps are ms since the
 * epoch, booleans 0/1 integers, JSON as text.
 */
import type { Generated } from 'kysely';

export type Visibility = 'personal' | 'groups' | 'teams' | 'global';
export type ApprovalStatus = 'personal' | 'draft' | 'pending' | 'approved';
/** Which team members a teams bot serves: only direct user members, or also members through a group or team (after review, S9). */
export type TeamMembers = 'direct' | 'all';

/** Columns 0006 adds to `bots`. */
export interface BotGovernanceColumns {
  visibility: Visibility;
  /** JSON array of group ids. */
  allowed_groups: string;
  /** JSON array of team (circle) ids. */
  allowed_teams: string;
  approval_status: ApprovalStatus;
  knowledge_enabled: number;
  guests_allowed: number;
  team_members: TeamMembers;
  /** bot_versions row serving everyone but the owner and tester; null until first approved. */
  approved_version_id: number | null;
  /** bot_versions row of an edit of an approved bot that waits for review. */
  pending_version_id: number | null;
  submitted_at: number | null;
  approved_by: string | null;
  approved_at: number | null;
  rejection_reason: string | null;
  tester_uid: string | null;
  /** JSON review questionnaire. */
  questionnaire: string | null;
}

export interface BotVersionsTable {
  id: Generated<number>;
  bot_id: string;
  /** JSON BotConfig; never updated once written. */
  config: string;
  created_by: string;
  created_at: number;
}

export interface GovernanceTables {
  bot_versions: BotVersionsTable;
}
