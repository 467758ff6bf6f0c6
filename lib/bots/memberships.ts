// Who a user is in Nextcloud: groups, sub-admin groups and teams, read AS THE USER, briefly cached.
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudForbiddenError, NextcloudNotFoundError } from '../nextcloud/errors.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { listCircleMembers, listCircles, type Circle, type CirclesMember } from '../nextcloud/circles.ts';
import { getCurrentUser, getUserGroups } from '../nextcloud/users.ts';

export interface TeamMembership {
  id: string;
  displayName: string;
  /** Circles member level: 1 member, 4 moderator, 8 admin, 9 owner. */
  level: number;
  /** The user is a member in person, not only through a group or another team. */
  direct: boolean;
}

export interface Memberships {
  uid: string;
  isAdmin: boolean;
  groups: string[];
  /** Groups this user administers as a sub-admin. */
  subAdminGroups: string[];
  teams: TeamMembership[];
}

export type TeamMemberKind = 'user' | 'group' | 'other';

export interface TeamMember {
  kind: TeamMemberKind;
  /** uid, group id, or the member's own id for other kinds. */
  id: string;
  level: number;
}

/** Levels from Circles' Member::LEVEL_*. */
export const TEAM_MODERATOR_LEVEL = 4;
// Circles' sources for real teams (16) and app-managed ones (10001), as upstream lists them.
const TEAM_SOURCES = new Set([16, 10001]);
const USER_TYPE_USER = 1;
const USER_TYPE_CIRCLE = 16;
const SOURCE_GROUP = 2;

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * Reads memberships with the user's own rights, so nobody learns more than
 * Nextcloud shows them. Cached for a short time (default 30 s).
 */
export class MembershipService {
  readonly #nextcloud: NextcloudClient;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { value: Memberships; until: number }>();
  readonly #teams = new Map<string, { value: TeamMember[] | null; until: number }>();

  constructor(nextcloud: NextcloudClient, options: { ttlMs?: number; now?: () => number } = {}) {
    this.#nextcloud = nextcloud;
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  async forUser(user: ActingUser): Promise<Memberships> {
    const now = this.#now();
    const hit = this.#cache.get(user.uid);
    if (hit && hit.until > now) return hit.value;
    const session = this.#nextcloud.as(user);
    const [groupsData, me, teams] = await Promise.all([getUserGroups(session, user.uid), getCurrentUser(session), this.#readTeams(user)]);
    const groups = strings(groupsData?.groups);
    const value: Memberships = {
      uid: user.uid,
      isAdmin: groups.includes('admin'),
      groups,
      subAdminGroups: me?.id === user.uid ? strings(me.subadmin) : [],
      teams,
    };
    this.#cache.set(user.uid, { value, until: now + this.#ttlMs });
    if (this.#cache.size > 10_000) this.#cache.clear();
    return value;
  }

  /**
   * A team's members as `user` sees them (S9: a team may contain groups and
   * other teams); null when the user cannot see the team.
   */
  async teamMembers(user: ActingUser, teamId: string): Promise<TeamMember[] | null> {
    const key = `${user.uid}\u0000${teamId}`;
    const now = this.#now();
    const hit = this.#teams.get(key);
    if (hit && hit.until > now) return hit.value;
    let value: TeamMember[] | null;
    try {
      const list = await listCircleMembers(this.#nextcloud.as(user), teamId);
      value = (Array.isArray(list) ? list : []).map(classifyMember);
    } catch (err) {
      if (!(err instanceof NextcloudNotFoundError) && !(err instanceof NextcloudForbiddenError)) throw err;
      value = null;
    }
    this.#teams.set(key, { value, until: now + this.#ttlMs });
    if (this.#teams.size > 10_000) this.#teams.clear();
    return value;
  }

  /** Forget what was read for a user (or everyone), e.g. after a change made through us. */
  invalidate(uid?: string): void {
    if (uid === undefined) {
      this.#cache.clear();
      this.#teams.clear();
      return;
    }
    this.#cache.delete(uid);
    for (const key of this.#teams.keys()) if (key.startsWith(`${uid}\u0000`)) this.#teams.delete(key);
  }

  async #readTeams(user: ActingUser): Promise<TeamMembership[]> {
    let circles: Circle[];
    try {
      circles = await listCircles(this.#nextcloud.as(user));
    } catch (err) {
      // Without the Circles app there are no teams.
      if (err instanceof NextcloudNotFoundError) return [];
      throw err;
    }
    const out: TeamMembership[] = [];
    for (const c of Array.isArray(circles) ? circles : []) {
      if (typeof c.id !== 'string' || !TEAM_SOURCES.has(Number(c.source))) continue;
      const me = c.initiator ?? null;
      out.push({
        id: c.id,
        displayName: c.displayName || c.name || c.id,
        level: Number(me?.level ?? 0),
        direct: me !== null && Number(me.userType) === USER_TYPE_USER && me.userId === user.uid,
      });
    }
    return out;
  }
}

function classifyMember(m: CirclesMember): TeamMember {
  const type = Number(m.userType);
  const level = Number(m.level ?? 0);
  if (type === USER_TYPE_USER && m.local !== false && typeof m.userId === 'string') return { kind: 'user', id: m.userId, level };
  // A group joins a team as a circle based on the group (source 2).
  if (type === USER_TYPE_CIRCLE && Number(m.basedOn?.source) === SOURCE_GROUP && typeof m.userId === 'string') return { kind: 'group', id: m.userId, level };
  return { kind: 'other', id: String(m.userId ?? m.id ?? ''), level };
}
