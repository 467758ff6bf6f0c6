// Teams (Circles), sub-admins and Talk room creation as a user (captures 20, 32, 60, 92, 93).
import { randomBytes } from 'node:crypto';
import { ocsData, ocsFailure } from './ocs.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeNextcloud, FakeRoute, RouteContext } from './server.ts';
import type { FakeTalk, RoomType } from './talk.ts';
import { cloudUserData, type UserDirectory } from './users.ts';

/** Circles member types (Member::TYPE_*) as the API reports them; a group joins as a circle based on it. */
export type TeamMemberType = 'user' | 'group' | 'team' | 'mail';
/** Member::LEVEL_*: 1 member, 4 moderator, 8 admin, 9 owner. */
export type TeamLevel = 1 | 4 | 8 | 9;

export interface FakeTeamMember {
  id: string;
  singleId: string;
  /** uid, group id, team id or e-mail address. */
  userId: string;
  type: TeamMemberType;
  level: TeamLevel;
  joined: number;
  invitedBy: string;
}

export interface FakeTeam {
  id: string;
  name: string;
  /** 16 for teams people create (capture 93). */
  source: number;
  creation: number;
  members: FakeTeamMember[];
}

const SUBADMIN_REQUIRED = 'Logged in account must be at least a sub admin';
const INSTANCE = '127.0.0.1:8080';
const ALPHANUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Circle and member ids: 31 random letters and digits (capture 93). */
export function circleId(): string {
  let out = '';
  for (const b of randomBytes(31)) out += ALPHANUM[b % ALPHANUM.length];
  return out;
}

const SINGLE_IDS = new Map<string, string>();
function singleIdOf(key: string): string {
  let id = SINGLE_IDS.get(key);
  if (!id) {
    id = circleId();
    SINGLE_IDS.set(key, id);
  }
  return id;
}

export class FakeTeams {
  readonly teams = new Map<string, FakeTeam>();
  /** uid → groups the user administers as a sub-admin. */
  readonly subAdmins = new Map<string, Set<string>>();
  readonly #users: UserDirectory;
  readonly #now: () => number;

  constructor(users: UserDirectory, now: () => number) {
    this.#users = users;
    this.#now = now;
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  makeSubAdmin(uid: string, gid: string): void {
    const set = this.subAdmins.get(uid) ?? new Set<string>();
    set.add(gid);
    this.subAdmins.set(uid, set);
  }

  subAdminGroups(uid: string): string[] {
    return [...(this.subAdmins.get(uid) ?? [])].sort();
  }

  createTeam(opts: { name: string; owner: string; id?: string }): FakeTeam {
    const team: FakeTeam = { id: opts.id ?? circleId(), name: opts.name, source: 16, creation: this.#seconds(), members: [] };
    this.teams.set(team.id, team);
    this.addMember(team.id, { userId: opts.owner, type: 'user', level: 9 }, opts.owner);
    return team;
  }

  addMember(teamId: string, m: { userId: string; type: TeamMemberType; level?: TeamLevel }, invitedBy?: string): FakeTeamMember {
    const team = this.team(teamId);
    if (team.members.some((x) => x.userId === m.userId && x.type === m.type)) throw new Error(`${m.userId} is already in ${team.name}`);
    const member: FakeTeamMember = {
      id: circleId(),
      singleId: singleIdOf(`${m.type}:${m.userId}`),
      userId: m.userId,
      type: m.type,
      level: m.level ?? 1,
      joined: this.#seconds(),
      invitedBy: invitedBy ?? team.members.find((x) => x.level === 9)?.userId ?? m.userId,
    };
    team.members.push(member);
    return member;
  }

  setLevel(teamId: string, userId: string, level: TeamLevel): void {
    const member = this.team(teamId).members.find((x) => x.type === 'user' && x.userId === userId);
    if (!member) throw new Error(`${userId} is not a direct member`);
    member.level = level;
  }

  team(id: string): FakeTeam {
    const team = this.teams.get(id);
    if (!team) throw new Error(`no team ${id}`);
    return team;
  }

  /** The member record through which `uid` belongs to the team (direct first, then via groups, then via teams), or null. */
  membershipOf(team: FakeTeam, uid: string, seen = new Set<string>()): { member: FakeTeamMember; level: number; depth: number } | null {
    if (seen.has(team.id)) return null;
    seen.add(team.id);
    const direct = team.members.find((m) => m.type === 'user' && m.userId === uid);
    if (direct) return { member: direct, level: direct.level, depth: 1 };
    const groups = this.#users.get(uid)?.groups ?? [];
    const viaGroup = team.members.find((m) => m.type === 'group' && groups.includes(m.userId));
    if (viaGroup) return { member: viaGroup, level: viaGroup.level, depth: 2 };
    for (const m of team.members) {
      if (m.type !== 'team') continue;
      const inner = this.teams.get(m.userId);
      if (inner && this.membershipOf(inner, uid, seen)) return { member: m, level: m.level, depth: 3 };
    }
    return null;
  }

  population(team: FakeTeam): number {
    return this.#users.ids().filter((uid) => this.membershipOf(team, uid) !== null).length;
  }

  // --- rendering (capture 93) ---

  #basedOn(m: FakeTeamMember): Record<string, unknown> {
    const source = m.type === 'user' ? 1 : m.type === 'group' ? 2 : m.type === 'team' ? 16 : 4;
    const displayName = this.#displayName(m);
    const prefix =
      m.type === 'user'
        ? `user:${m.userId}:${m.singleId}`
        : m.type === 'group'
          ? `group:${m.userId}`
          : m.type === 'team'
            ? `circle:${m.userId}`
            : `mail:${m.userId}`;
    return {
      id: m.singleId,
      name: prefix,
      displayName,
      sanitizedName: '',
      source,
      population: m.type === 'group' ? this.#users.members(m.userId).length : 0,
      config: m.type === 'user' ? 1 : m.type === 'group' ? 1540 : 0,
      description: '',
      url: '',
      creation: m.joined,
      initiator: null,
    };
  }

  #displayName(m: FakeTeamMember): string {
    if (m.type === 'user') return this.#users.displayName(m.userId);
    if (m.type === 'team') return this.teams.get(m.userId)?.name ?? m.userId;
    return m.userId;
  }

  #userRef(uid: string): Record<string, unknown> {
    const single = singleIdOf(`user:${uid}`);
    return {
      id: single,
      userId: uid,
      userType: 1,
      displayName: this.#users.displayName(uid),
      instance: INSTANCE,
      basedOn: {
        id: single,
        name: `user:${uid}:${single}`,
        displayName: this.#users.displayName(uid),
        sanitizedName: '',
        source: 1,
        population: 0,
        config: 1,
        description: '',
        url: '',
        creation: 0,
        initiator: null,
      },
    };
  }

  formatMember(team: FakeTeam, m: FakeTeamMember): Record<string, unknown> {
    return {
      id: m.id,
      circleId: team.id,
      singleId: m.singleId,
      userId: m.userId,
      // Groups and teams join as circles (capture 93: a group member has userType 16).
      userType: m.type === 'user' ? 1 : m.type === 'mail' ? 4 : 16,
      instance: INSTANCE,
      local: true,
      level: m.level,
      status: 'Member',
      displayName: this.#displayName(m),
      displayUpdate: m.joined,
      notes: { invitedBy: this.#userRef(m.invitedBy) },
      contactId: '',
      contactMeta: '',
      joined: m.joined,
      invitedBy: this.#userRef(m.invitedBy),
      basedOn: this.#basedOn(m),
    };
  }

  formatTeam(team: FakeTeam, viewer: string, details: boolean): Record<string, unknown> {
    const via = this.membershipOf(team, viewer);
    const owner = team.members.find((m) => m.level === 9) ?? team.members[0];
    const initiator = via
      ? {
          ...this.formatMember(team, via.member),
          inheritedBy: {
            ...this.#userRef(viewer),
            inheritance: {
              singleId: singleIdOf(`user:${viewer}`),
              circleId: team.id,
              circleConfig: 0,
              level: via.level,
              inheritanceFirst: singleIdOf(`user:${viewer}`),
              inheritanceLast: team.id,
              inheritancePath: via.depth === 1 ? [singleIdOf(`user:${viewer}`)] : [singleIdOf(`user:${viewer}`), via.member.singleId],
              inheritanceDepth: via.depth,
            },
          },
        }
      : null;
    const population = this.population(team);
    const out: Record<string, unknown> = {
      id: team.id,
      name: team.name,
      displayName: team.name,
      sanitizedName: team.name,
      source: team.source,
      population,
      config: 0,
      description: '',
      url: '',
      creation: team.creation,
      initiator,
      owner: owner ? this.formatMember(team, owner) : null,
    };
    if (details) out['settings'] = { population, populationInherited: population };
    return out;
  }
}

const registry = new WeakMap<UserDirectory, FakeTeams>();

/** The teams and sub-admins of a fake Nextcloud, to set up a test. */
export function fakeTeams(nc: FakeNextcloud): FakeTeams {
  const teams = registry.get(nc.users);
  if (!teams) throw new Error('teams-groups routes are not registered in this fake');
  return teams;
}

function decode(s: string | undefined): string {
  return decodeURIComponent(s ?? '');
}

/** Registered in server.ts before the user routes, so `cloud/user` and `cloud/users/{uid}` carry sub-admin groups. */
export function teamsGroupsRoutes(users: UserDirectory, talk: FakeTalk, now: () => number): FakeRoute[] {
  const teams = new FakeTeams(users, now);
  registry.set(users, teams);
  const self = (ctx: RouteContext): string => ctx.user ?? '';
  const withSubadmin = (uid: string, ctx: RouteContext): FakeReply | null => {
    const user = users.get(uid);
    return user ? ocsData(ctx.version, ctx.format, { ...cloudUserData(user, ctx.now()), subadmin: teams.subAdminGroups(uid) }) : null;
  };
  // Admins manage every group; sub-admins the groups they administer (capture 92: others get 403).
  const manageable = (ctx: RouteContext): string[] | null => {
    const uid = self(ctx);
    if (users.isAdmin(uid)) return users.groupIds();
    const mine = teams.subAdminGroups(uid);
    return mine.length > 0 ? mine : null;
  };
  const visibleTeam = (ctx: RouteContext, id: string): FakeTeam | FakeReply => {
    const team = teams.teams.get(id);
    if (!team || !teams.membershipOf(team, self(ctx))) return ocsFailure(ctx.version, ctx.format, 404, 'Circle not found');
    return team;
  };
  const isReply = (x: FakeTeam | FakeReply): x is FakeReply => 'status' in x && 'body' in x;
  const moderates = (team: FakeTeam, uid: string): boolean => (teams.membershipOf(team, uid)?.level ?? 0) >= 4;
  const C = '/apps/circles/circles';

  return [
    {
      method: 'GET',
      path: /^\/cloud\/user$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => withSubadmin(self(ctx), ctx) ?? ocsFailure(ctx.version, ctx.format, 998, ''),
    },
    {
      method: 'GET',
      path: /^\/cloud\/users\/([^/]+)$/,
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const uid = decode(m[1]);
        if (uid !== self(ctx) && !users.isAdmin(self(ctx))) return ocsFailure(ctx.version, ctx.format, 998, '');
        const user = users.get(uid);
        if (!user) return ocsFailure(ctx.version, ctx.format, 998, '');
        // Nextcloud shows `enabled` only to admins and the user's sub-admins, never in a self view.
        const enabled = users.isAdmin(self(ctx)) ? { enabled: user.enabled !== false } : {};
        return ocsData(ctx.version, ctx.format, { ...enabled, ...cloudUserData(user, ctx.now()), subadmin: teams.subAdminGroups(uid) });
      },
    },
    {
      method: 'GET',
      path: /^\/cloud\/groups$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => {
        const groups = manageable(ctx);
        return groups ? ocsData(ctx.version, ctx.format, { groups }) : ocsFailure(ctx.version, ctx.format, 403, SUBADMIN_REQUIRED);
      },
    },
    {
      method: 'GET',
      path: /^\/cloud\/groups\/details$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => {
        const groups = manageable(ctx);
        if (!groups) return ocsFailure(ctx.version, ctx.format, 403, SUBADMIN_REQUIRED);
        const limit = Number(ctx.params['limit'] ?? groups.length) || groups.length;
        return ocsData(ctx.version, ctx.format, {
          groups: groups
            .slice(0, limit)
            .map((id) => ({ id, displayname: id, usercount: users.members(id).length, disabled: 0, canAdd: true, canRemove: true })),
        });
      },
    },
    {
      method: 'GET',
      path: new RegExp(`^${C}$`),
      access: 'login',
      csrf: true,
      handle: (ctx) => {
        const uid = self(ctx);
        const list = [...teams.teams.values()].filter((t) => teams.membershipOf(t, uid)).map((t) => teams.formatTeam(t, uid, false));
        return ocsData(ctx.version, ctx.format, list);
      },
    },
    {
      method: 'POST',
      path: new RegExp(`^${C}$`),
      access: 'login',
      csrf: true,
      handle: (ctx) => {
        const name = String(ctx.params['name'] ?? '').trim();
        if (name === '') return ocsFailure(ctx.version, ctx.format, 400, 'Name is required');
        const team = teams.createTeam({ name, owner: self(ctx) });
        return ocsData(ctx.version, ctx.format, { ...teams.formatTeam(team, self(ctx), false), settings: [] });
      },
    },
    {
      method: 'GET',
      path: new RegExp(`^${C}/([A-Za-z0-9]+)$`),
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const team = visibleTeam(ctx, decode(m[1]));
        return isReply(team) ? team : ocsData(ctx.version, ctx.format, teams.formatTeam(team, self(ctx), true));
      },
    },
    {
      method: 'GET',
      path: new RegExp(`^${C}/([A-Za-z0-9]+)/members$`),
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const team = visibleTeam(ctx, decode(m[1]));
        return isReply(team)
          ? team
          : ocsData(
              ctx.version,
              ctx.format,
              team.members.map((x) => teams.formatMember(team, x)),
            );
      },
    },
    {
      method: 'POST',
      path: new RegExp(`^${C}/([A-Za-z0-9]+)/members$`),
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const team = visibleTeam(ctx, decode(m[1]));
        if (isReply(team)) return team;
        if (!moderates(team, self(ctx))) return ocsFailure(ctx.version, ctx.format, 403, 'Insufficient rights');
        const userId = String(ctx.params['userId'] ?? '');
        const type = Number(ctx.params['type'] ?? 1);
        const kind: TeamMemberType | null = type === 1 ? 'user' : type === 2 ? 'group' : type === 16 ? 'team' : type === 4 ? 'mail' : null;
        if (!kind || userId === '') return ocsFailure(ctx.version, ctx.format, 400, 'Invalid member');
        const member = teams.addMember(team.id, { userId, type: kind }, self(ctx));
        return ocsData(ctx.version, ctx.format, { ...teams.formatMember(team, member), circle: teams.formatTeam(team, self(ctx), false) });
      },
    },
    {
      method: 'PUT',
      path: new RegExp(`^${C}/([A-Za-z0-9]+)/members/([A-Za-z0-9]+)/level$`),
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const team = visibleTeam(ctx, decode(m[1]));
        if (isReply(team)) return team;
        if (!moderates(team, self(ctx))) return ocsFailure(ctx.version, ctx.format, 403, 'Insufficient rights');
        const member = team.members.find((x) => x.id === decode(m[2]));
        const level = Number(ctx.params['level']);
        if (!member || ![1, 4, 8].includes(level)) return ocsFailure(ctx.version, ctx.format, 400, 'Invalid level');
        member.level = level as TeamLevel;
        return ocsData(ctx.version, ctx.format, { ...teams.formatMember(team, member), circle: teams.formatTeam(team, self(ctx), false) });
      },
    },
    {
      method: 'DELETE',
      path: new RegExp(`^${C}/([A-Za-z0-9]+)/members/([A-Za-z0-9]+)$`),
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const team = visibleTeam(ctx, decode(m[1]));
        if (isReply(team)) return team;
        if (!moderates(team, self(ctx))) return ocsFailure(ctx.version, ctx.format, 403, 'Insufficient rights');
        const index = team.members.findIndex((x) => x.id === decode(m[2]));
        if (index < 0) return ocsFailure(ctx.version, ctx.format, 404, 'Member not found');
        team.members.splice(index, 1);
        return ocsData(ctx.version, ctx.format, []);
      },
    },
    {
      method: 'DELETE',
      path: new RegExp(`^${C}/([A-Za-z0-9]+)$`),
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const team = visibleTeam(ctx, decode(m[1]));
        if (isReply(team)) return team;
        if ((teams.membershipOf(team, self(ctx))?.level ?? 0) < 9) return ocsFailure(ctx.version, ctx.format, 403, 'Insufficient rights');
        const before = teams.formatTeam(team, self(ctx), false);
        teams.teams.delete(team.id);
        return ocsData(ctx.version, ctx.format, before);
      },
    },
    {
      // Talk: a user creates a conversation and becomes its owner (captures 32, 60).
      method: 'POST',
      path: /^\/apps\/spreed\/api\/v4\/room$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => {
        const uid = self(ctx);
        const roomType = Number(ctx.params['roomType']);
        if (roomType === 1) {
          const invite = String(ctx.params['invite'] ?? '');
          if (!users.has(invite) || invite === uid) return ocsFailure(ctx.version, ctx.format, 400, '', { error: 'invite' });
          const existing = [...talk.rooms.values()].find((r) => r.type === 1 && r.participant(uid) && r.participant(invite));
          const room =
            existing ??
            talk.createRoom({
              name: invite,
              type: 1,
              participants: [
                { actorId: uid, participantType: 1 },
                { actorId: invite, participantType: 1 },
              ],
            });
          return ocsData(ctx.version, ctx.format, talk.formatRoom(room, uid), existing ? 200 : 201);
        }
        if (roomType !== 2 && roomType !== 3) return ocsFailure(ctx.version, ctx.format, 400, '', { error: 'type' });
        const name = String(ctx.params['roomName'] ?? '').trim();
        if (name === '' || name.length > 255) return ocsFailure(ctx.version, ctx.format, 400, '', { error: 'name' });
        const room = talk.createRoom({ name, type: roomType as RoomType, participants: [{ actorId: uid, participantType: 1 }] });
        return ocsData(ctx.version, ctx.format, talk.formatRoom(room, uid), 201);
      },
    },
  ];
}
