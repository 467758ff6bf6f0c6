// Who may publish, review and manage a bot in a scope: pure rules over the user's memberships and the teams' compositions.
import type { TeamMembers, Visibility } from './bot-store.ts';
import { TEAM_MODERATOR_LEVEL, type Memberships, type TeamMember } from './memberships.ts';

export interface Scope {
  visibility: Visibility;
  groups: string[];
  teams: string[];
}

export interface Right {
  allowed: boolean;
  /** For teams scopes: which members the bot will serve (S9). */
  teamMembers: TeamMembers;
  /** Why not, for people. */
  reason: string;
}

/** team id → its members as the acting user sees them (null: not visible). */
export type Compositions = ReadonlyMap<string, TeamMember[] | null>;

export const ALLOW: Right = { allowed: true, teamMembers: 'all', reason: '' };
const deny = (reason: string): Right => ({ allowed: false, teamMembers: 'direct', reason });
const REVIEW_WRITES = 'Bots with tools that change data are shared only after a review';

function managesTeam(m: Memberships, teamId: string): boolean {
  return m.teams.some((t) => t.id === teamId && t.level >= TEAM_MODERATOR_LEVEL);
}

function directOnly(members: TeamMember[] | null | undefined): boolean {
  return Array.isArray(members) && members.every((x) => x.kind === 'user');
}

/**
 * May `m` share a bot with `scope` without review? Admins: every scope.
 * Sub-admins: groups they administer, all of them. Team moderators and above:
 * teams they manage, all of them, and only teams whose members are all direct
 * users (S9). Global: admins. Bots with tools that write: admins only.
 */
export function publishRight(m: Memberships, scope: Scope, compositions: Compositions, options: { writes: boolean }): Right {
  if (scope.visibility === 'personal') return ALLOW;
  if (m.isAdmin) return ALLOW;
  if (options.writes) return deny(REVIEW_WRITES);
  switch (scope.visibility) {
    case 'global':
      return deny('Only administrators can share a bot with everyone');
    case 'groups':
      if (scope.groups.length > 0 && scope.groups.every((g) => m.subAdminGroups.includes(g))) return ALLOW;
      return deny('Only administrators and the sub-admins of every chosen group can share with these groups');
    case 'teams':
      if (scope.teams.length === 0 || !scope.teams.every((t) => managesTeam(m, t))) {
        return deny('Only moderators of every chosen team can share with these teams');
      }
      if (!scope.teams.every((t) => directOnly(compositions.get(t)))) {
        return deny('A team that contains a group or another team needs a review by an administrator or the sub-admins of its groups');
      }
      return { allowed: true, teamMembers: 'direct', reason: '' };
  }
}

/**
 * May `m` approve, reject or test a submission whose target is `scope`?
 * Like publishing, plus: a team containing groups (and nothing else but users)
 * can be approved by a sub-admin of every such group (S9); bots with tools
 * that write are reviewed by someone else than their owner (or an admin).
 */
export function reviewRight(m: Memberships, scope: Scope, compositions: Compositions, options: { writes: boolean; isOwner: boolean }): Right {
  if (scope.visibility === 'personal') return deny('Personal bots are not reviewed');
  if (m.isAdmin) return ALLOW;
  if (options.writes && options.isOwner) return deny('A bot with tools that change data must be reviewed by someone else');
  switch (scope.visibility) {
    case 'global':
      return deny('Only administrators can approve a bot for everyone');
    case 'groups':
      if (scope.groups.length > 0 && scope.groups.every((g) => m.subAdminGroups.includes(g))) return ALLOW;
      return deny('Only administrators and the sub-admins of every chosen group can approve this bot');
    case 'teams': {
      if (scope.teams.length === 0) return deny('No team chosen');
      let members: TeamMembers = 'all';
      for (const teamId of scope.teams) {
        const composition = compositions.get(teamId) ?? null;
        if (managesTeam(m, teamId) && directOnly(composition)) {
          members = 'direct';
          continue;
        }
        const groups = (composition ?? []).filter((x) => x.kind === 'group').map((x) => x.id);
        const others = (composition ?? []).some((x) => x.kind === 'other');
        if (composition !== null && !others && groups.length > 0 && groups.every((g) => m.subAdminGroups.includes(g))) continue;
        return deny('Only administrators, moderators of teams with direct members only, or the sub-admins of every group in the team can approve this bot');
      }
      return { allowed: true, teamMembers: members, reason: '' };
    }
  }
}

/** May `m` manage (edit or delete) a bot living in `scope` that someone else owns? */
export function manageRight(m: Memberships, scope: Scope): boolean {
  if (m.isAdmin) return true;
  if (scope.visibility === 'groups') return scope.groups.length > 0 && scope.groups.every((g) => m.subAdminGroups.includes(g));
  if (scope.visibility === 'teams') return scope.teams.length > 0 && scope.teams.every((t) => managesTeam(m, t));
  return false;
}

export function scopeOf(c: { visibility: Visibility; allowedGroups: string[]; allowedTeams: string[] }): Scope {
  return { visibility: c.visibility, groups: c.visibility === 'groups' ? c.allowedGroups : [], teams: c.visibility === 'teams' ? c.allowedTeams : [] };
}

/** Checks tool assignments and tells whether any of them may change data. */
