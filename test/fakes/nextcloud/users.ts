// Users and groups: cloud/user, capabilities, provisioning users/groups (captures 20, 25, 92).
import { ocsData, ocsFailure } from './ocs.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';

export interface FakeUser {
  id: string;
  displayName: string;
  groups: string[];
  enabled?: boolean;
  email?: string;
  language?: string;
}

/** The users of the captures: admin, alice and bob (the last two in educai-students). */
export const DEFAULT_USERS: readonly FakeUser[] = [
  { id: 'admin', displayName: 'admin', groups: ['admin'] },
  { id: 'alice', displayName: 'Alice', groups: ['educai-students'], email: 'alice@example.com' },
  { id: 'bob', displayName: 'Bob', groups: ['educai-students'], email: 'bob@example.com' },
];

/** Candidate service accounts for agent profiles (S13): one that may back a profile, a disabled one, an admin. */
export const AGENT_ACCOUNT_USERS: readonly FakeUser[] = [
  { id: 'nuqloud-ai', displayName: 'NuQloud AI', groups: ['service-accounts'] },
  { id: 'retired-ai', displayName: 'Retired AI', groups: ['service-accounts'], enabled: false },
  { id: 'root-ai', displayName: 'Root AI', groups: ['admin'] },
];

export class UserDirectory {
  readonly #users = new Map<string, FakeUser>();

  add(user: FakeUser): void {
    this.#users.set(user.id, { ...user, groups: [...user.groups] });
  }

  /** The account is deleted in Nextcloud. */
  remove(id: string): void {
    this.#users.delete(id);
  }

  get(id: string): FakeUser | undefined {
    return this.#users.get(id);
  }

  has(id: string): boolean {
    return this.#users.has(id);
  }

  ids(): string[] {
    return [...this.#users.keys()].sort();
  }

  isAdmin(id: string): boolean {
    return this.#users.get(id)?.groups.includes('admin') ?? false;
  }

  displayName(id: string): string {
    return this.#users.get(id)?.displayName ?? id;
  }

  groupIds(): string[] {
    const all = new Set<string>();
    for (const u of this.#users.values()) for (const g of u.groups) all.add(g);
    return [...all].sort();
  }

  members(group: string): string[] {
    return this.ids().filter((id) => this.#users.get(id)?.groups.includes(group));
  }
}

/** `cloud/user` data with the keys and order of capture 20. */
export function cloudUserData(user: FakeUser, nowMs: number): Record<string, unknown> {
  return {
    id: user.id,
    lastLogin: nowMs,
    backend: 'Database',
    subadmin: [],
    quota: { free: 83346677760, used: 4467, total: 83346682227, relative: 0, quota: -3 },
    manager: '',
    avatarScope: 'v2-federated',
    email: user.email ?? null,
    emailScope: 'v2-federated',
    additional_mail: [],
    additional_mailScope: [],
    displayname: user.displayName,
    'display-name': user.displayName,
    displaynameScope: 'v2-federated',
    phone: '',
    phoneScope: 'v2-local',
    address: '',
    addressScope: 'v2-local',
    website: '',
    websiteScope: 'v2-local',
    twitter: '',
    twitterScope: 'v2-local',
    fediverse: '',
    fediverseScope: 'v2-local',
    organisation: '',
    organisationScope: 'v2-local',
    role: '',
    roleScope: 'v2-local',
    headline: '',
    headlineScope: 'v2-local',
    biography: '',
    biographyScope: 'v2-local',
    profile_enabled: '1',
    profile_enabledScope: 'v2-local',
    groups: [...user.groups],
    language: user.language ?? 'en',
    locale: '',
    notify_email: null,
    backendCapabilities: { setDisplayName: true, setPassword: true },
  };
}

const SUBADMIN_REQUIRED = 'Logged in account must be at least a sub admin';

function paged(ids: string[], ctx: RouteContext): string[] {
  const search = String(ctx.params['search'] ?? '').toLowerCase();
  const offset = Number(ctx.params['offset'] ?? 0) || 0;
  const limitRaw = ctx.params['limit'];
  const filtered = search === '' ? ids : ids.filter((id) => id.toLowerCase().includes(search));
  const limit = limitRaw === undefined || limitRaw === '' ? filtered.length : Number(limitRaw);
  return filtered.slice(offset, offset + limit);
}

export function userRoutes(users: UserDirectory, capabilitiesData: () => unknown): FakeRoute[] {
  const self = (ctx: RouteContext): string => ctx.user ?? '';
  const notFound998 = (ctx: RouteContext): FakeReply => ocsFailure(ctx.version, ctx.format, 998, '');
  const adminOnly = (ctx: RouteContext): FakeReply | null => (users.isAdmin(self(ctx)) ? null : ocsFailure(ctx.version, ctx.format, 403, SUBADMIN_REQUIRED));

  return [
    { method: 'GET', path: /^\/cloud\/capabilities$/, access: 'public', csrf: true, handle: (ctx) => ocsData(ctx.version, ctx.format, capabilitiesData()) },
    {
      method: 'GET',
      path: /^\/cloud\/user$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => {
        const user = users.get(self(ctx));
        return user ? ocsData(ctx.version, ctx.format, cloudUserData(user, ctx.now())) : notFound998(ctx);
      },
    },
    {
      method: 'GET',
      path: /^\/cloud\/users$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => adminOnly(ctx) ?? ocsData(ctx.version, ctx.format, { users: paged(users.ids(), ctx) }),
    },
    {
      method: 'GET',
      path: /^\/cloud\/users\/([^/]+)$/,
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const uid = decodeURIComponent(m[1] ?? '');
        const user = users.get(uid);
        if (!user || (uid !== self(ctx) && !users.isAdmin(self(ctx)))) return notFound998(ctx);
        return ocsData(ctx.version, ctx.format, cloudUserData(user, ctx.now()));
      },
    },
    {
      method: 'GET',
      path: /^\/cloud\/users\/([^/]+)\/groups$/,
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        // Only yourself or an admin; anyone else gets the capture's 404/998.
        const uid = decodeURIComponent(m[1] ?? '');
        const user = users.get(uid);
        if (!user || (uid !== self(ctx) && !users.isAdmin(self(ctx)))) return notFound998(ctx);
        return ocsData(ctx.version, ctx.format, { groups: [...user.groups] });
      },
    },
    {
      method: 'GET',
      path: /^\/cloud\/groups$/,
      access: 'login',
      csrf: true,
      handle: (ctx) => adminOnly(ctx) ?? ocsData(ctx.version, ctx.format, { groups: paged(users.groupIds(), ctx) }),
    },
    {
      method: 'GET',
      path: /^\/cloud\/groups\/([^/]+)\/users$/,
      access: 'login',
      csrf: true,
      handle: (ctx, m) => {
        const denied = adminOnly(ctx);
        if (denied) return denied;
        const gid = decodeURIComponent(m[1] ?? '');
        if (!users.groupIds().includes(gid)) return ocsFailure(ctx.version, ctx.format, 404, 'The requested group could not be found');
        return ocsData(ctx.version, ctx.format, { users: users.members(gid) });
      },
    },
  ];
}
