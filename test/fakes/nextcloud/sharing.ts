// OCS files_sharing as NC 29 answers it (captures 23, 78, 79): shares of the caller's own
// files, by id, create (user, group, link), update, delete, and the sharee search.
import { createHash, randomBytes } from 'node:crypto';
import type { FakeFiles } from './dav-files.ts';
import { ocsData, ocsFailure, type FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';
import type { UserDirectory } from './users.ts';

export interface FakeShare {
  id: number;
  shareType: number;
  owner: string;
  fileId: number;
  permissions: number;
  shareWith: string | null;
  stime: number;
  expiration: string | null;
  token: string | null;
  note: string;
  label: string;
  passwordHash: string | null;
}

const A = '/apps/files_sharing/api/v1';

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
}

export class FakeSharing {
  readonly shares = new Map<number, FakeShare>();
  /**
   * Nextcloud 33 answers a user or group share that exists already with that share, unchanged
   * (Share20\Manager::createShare catches AlreadySharedException; ocs-sharing-33.json
   * create-user-share-again-with-edit). Not captured on 29, where the fake adds a second share.
   */
  returnsExistingShare = false;
  readonly #files: FakeFiles;
  readonly #users: UserDirectory;
  readonly #baseUrl: () => string;
  readonly #now: () => number;
  #nextId = 40;

  constructor(files: FakeFiles, users: UserDirectory, baseUrl: () => string, now: () => number) {
    this.#files = files;
    this.#users = users;
    this.#baseUrl = baseUrl;
    this.#now = now;
    files.shareTypesOf = (owner, fileId) =>
      [...new Set([...this.shares.values()].filter((s) => s.owner === owner && s.fileId === fileId).map((s) => s.shareType))].sort();
  }

  /** Shares owned by `uid`. */
  of(uid: string): FakeShare[] {
    return [...this.shares.values()].filter((s) => s.owner === uid);
  }

  #data(s: FakeShare, viewer: string): Record<string, unknown> {
    const path = this.#files.pathOf(s.owner, s.fileId) ?? [];
    const node = this.#files.node(s.owner, path.join('/'));
    const parentPath = path.slice(0, -1).join('/');
    const parent = this.#files.node(s.owner, parentPath);
    const isLink = s.shareType === 3;
    const out: Record<string, unknown> = {
      id: String(s.id),
      share_type: s.shareType,
      uid_owner: s.owner,
      displayname_owner: this.#users.displayName(s.owner),
      permissions: s.permissions,
      can_edit: viewer === s.owner,
      can_delete: true,
      stime: Math.floor(s.stime / 1000),
      parent: null,
      expiration: s.expiration,
      token: s.token,
      uid_file_owner: s.owner,
      note: s.note,
      label: s.label === '' && s.shareType !== 3 ? null : s.label,
      displayname_file_owner: this.#users.displayName(s.owner),
      path: `/${path.join('/')}`,
      item_type: node?.folder ? 'folder' : 'file',
      item_permissions: node?.folder ? 31 : 27,
      mimetype: node?.mime ?? 'application/octet-stream',
      has_preview: !node?.folder,
      storage_id: `home::${s.owner}`,
      storage: 5,
      item_source: s.fileId,
      file_source: s.fileId,
      file_parent: parent?.fileId ?? null,
      file_target: `/${path[path.length - 1] ?? ''}`,
      item_size: node ? node.content.length : 0,
      item_mtime: Math.floor((node?.mtime ?? 0) / 1000),
      share_with: isLink ? s.passwordHash : s.shareWith,
      share_with_displayname: isLink ? '(Shared link)' : s.shareType === 0 ? this.#users.displayName(s.shareWith ?? '') : s.shareWith,
    };
    if (s.shareType === 0) out['share_with_displayname_unique'] = this.#users.get(s.shareWith ?? '')?.email ?? s.shareWith;
    if (isLink) {
      out['password'] = s.passwordHash;
      out['send_password_by_talk'] = false;
      out['url'] = `${this.#baseUrl()}/index.php/s/${s.token ?? ''}`;
    }
    out['mail_send'] = 0;
    out['hide_download'] = 0;
    out['attributes'] = null;
    return out;
  }

  #visible(s: FakeShare, uid: string): boolean {
    return s.owner === uid;
  }

  routes(): FakeRoute[] {
    const route = (method: string, path: RegExp, handle: (ctx: RouteContext, m: RegExpExecArray) => FakeReply): FakeRoute => ({
      method,
      path,
      access: 'login',
      csrf: true,
      handle,
    });
    const fail = (ctx: RouteContext, status: number, message: string): FakeReply => ocsFailure(ctx.version, ctx.format, status, message);
    const noShare = (ctx: RouteContext): FakeReply => fail(ctx, 404, 'Wrong share ID, share does not exist');
    return [
      route('GET', new RegExp(`^${A}/shares$`), (ctx) => {
        const uid = ctx.user ?? '';
        const path = str(ctx.params['path']);
        let list = this.of(uid);
        if (path !== undefined) {
          const node = this.#files.node(uid, path);
          if (!node) return fail(ctx, 404, 'Wrong path, file/folder does not exist');
          if (ctx.params['subfiles'] === 'true') {
            if (!node.folder) return fail(ctx, 400, 'Not a directory');
            const ids = new Set([...node.children.values()].map((c) => c.fileId));
            list = list.filter((s) => ids.has(s.fileId));
          } else list = list.filter((s) => s.fileId === node.fileId);
        }
        return ocsData(
          ctx.version,
          ctx.format,
          list.sort((a, b) => a.id - b.id).map((s) => this.#data(s, uid)),
        );
      }),
      route('GET', new RegExp(`^${A}/shares/(\\d+)$`), (ctx, m) => {
        const s = this.shares.get(Number(m[1]));
        if (!s || !this.#visible(s, ctx.user ?? '')) return noShare(ctx);
        return ocsData(ctx.version, ctx.format, [this.#data(s, ctx.user ?? '')]);
      }),
      route('POST', new RegExp(`^${A}/shares$`), (ctx) => this.#create(ctx)),
      route('PUT', new RegExp(`^${A}/shares/(\\d+)$`), (ctx, m) => {
        const s = this.shares.get(Number(m[1]));
        if (!s || !this.#visible(s, ctx.user ?? '')) return noShare(ctx);
        const perms = ctx.params['permissions'];
        if (perms !== undefined) {
          const n = Number(perms);
          if (!Number.isInteger(n) || n < 1 || n > 31) return fail(ctx, 400, 'Wrong permissions');
          s.permissions = s.shareType === 3 && n === 1 ? 17 : n;
        }
        if (ctx.params['note'] !== undefined) s.note = String(ctx.params['note']);
        if (ctx.params['expireDate'] !== undefined) s.expiration = ctx.params['expireDate'] === '' ? null : `${String(ctx.params['expireDate'])} 00:00:00`;
        return ocsData(ctx.version, ctx.format, this.#data(s, ctx.user ?? ''));
      }),
      route('DELETE', new RegExp(`^${A}/shares/(\\d+)$`), (ctx, m) => {
        const s = this.shares.get(Number(m[1]));
        if (!s || !this.#visible(s, ctx.user ?? '')) return noShare(ctx);
        this.shares.delete(s.id);
        return ocsData(ctx.version, ctx.format, []);
      }),
      route('GET', new RegExp(`^${A}/sharees$`), (ctx) => {
        const uid = ctx.user ?? '';
        const search = (str(ctx.params['search']) ?? '').toLowerCase();
        const userEntry = (id: string): Record<string, unknown> => ({
          label: this.#users.displayName(id),
          subline: '',
          icon: 'icon-user',
          value: { shareType: 0, shareWith: id },
          shareWithDisplayNameUnique: this.#users.get(id)?.email ?? id,
          status: [],
        });
        const groupEntry = (g: string): Record<string, unknown> => ({ label: g, value: { shareType: 1, shareWith: g } });
        const users = this.#users
          .ids()
          .filter((id) => id !== uid && search !== '' && (id.toLowerCase().includes(search) || this.#users.displayName(id).toLowerCase().includes(search)));
        const groups = this.#users.groupIds().filter((g) => search !== '' && g.toLowerCase().includes(search));
        const exactUsers = users.filter((id) => id.toLowerCase() === search);
        const exactGroups = groups.filter((g) => g.toLowerCase() === search);
        return ocsData(ctx.version, ctx.format, {
          exact: { users: exactUsers.map(userEntry), groups: exactGroups.map(groupEntry), remotes: [], remote_groups: [], emails: [], circles: [], rooms: [] },
          users: users.filter((u) => !exactUsers.includes(u)).map(userEntry),
          groups: groups.filter((g) => !exactGroups.includes(g)).map(groupEntry),
          remotes: [],
          remote_groups: [],
          emails: [],
          lookup: [],
          circles: [],
          rooms: [],
          lookupEnabled: true,
        });
      }),
    ];
  }

  #create(ctx: RouteContext): FakeReply {
    const uid = ctx.user ?? '';
    const fail = (status: number, message: string): FakeReply => ocsFailure(ctx.version, ctx.format, status, message);
    const path = str(ctx.params['path']);
    const node = path === undefined ? null : this.#files.node(uid, path);
    if (!node || path === undefined || path.replace(/\//g, '') === '') return fail(404, 'Wrong path, file/folder does not exist');
    const type = Number(ctx.params['shareType']);
    const permsRaw = ctx.params['permissions'];
    let permissions = permsRaw === undefined ? 31 : Number(permsRaw);
    if (!node.folder) permissions &= 19;
    const shareWith = str(ctx.params['shareWith']);
    const base = {
      id: this.#nextId++,
      owner: uid,
      fileId: node.fileId,
      stime: this.#now(),
      note: str(ctx.params['note']) ?? '',
      label: str(ctx.params['label']) ?? '',
      token: null as string | null,
      passwordHash: null as string | null,
    };
    const expireDate = str(ctx.params['expireDate']);
    const expiration = expireDate ? `${expireDate} 00:00:00` : null;
    let share: FakeShare;
    if (type === 0) {
      if (!shareWith || !this.#users.has(shareWith)) return fail(404, 'Please specify a valid account to share with');
      if (shareWith === uid) return fail(403, 'Cannot share with yourself');
      share = { ...base, shareType: 0, permissions, shareWith, expiration };
    } else if (type === 1) {
      if (!shareWith || !this.#users.groupIds().includes(shareWith)) return fail(404, 'Please specify a valid group');
      share = { ...base, shareType: 1, permissions, shareWith, expiration };
    } else if (type === 3) {
      const upload = ctx.params['publicUpload'] === 'true';
      const password = str(ctx.params['password']);
      share = {
        ...base,
        shareType: 3,
        // Capture 23/78: a read link comes back as 17 (read + share), an upload link as 31.
        permissions: upload ? 31 : 17,
        shareWith: null,
        expiration,
        token: randomBytes(8).toString('base64url').slice(0, 15),
        passwordHash: password ? `3|$argon2id$v=19$m=65536,t=4,p=1$${createHash('sha256').update(password).digest('base64')}` : null,
      };
    } else {
      return fail(400, 'Unknown share type');
    }
    if (this.returnsExistingShare && share.shareType !== 3) {
      const existing = [...this.shares.values()].find(
        (x) => x.owner === uid && x.fileId === share.fileId && x.shareType === share.shareType && x.shareWith === share.shareWith,
      );
      if (existing) {
        this.#nextId--;
        return ocsData(ctx.version, ctx.format, this.#data(existing, uid));
      }
    }
    this.shares.set(share.id, share);
    return ocsData(ctx.version, ctx.format, this.#data(share, uid));
  }
}
