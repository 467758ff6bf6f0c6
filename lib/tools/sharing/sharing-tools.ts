// Sharing as the invoking user: list, direct user share (read-only by default), group share,
// public link (read-only, optional password and expiry), permission change, removal.
// Group shares, public links, raising to edit and removals need the user's confirmation.
import { FilesDav } from '../../nextcloud/files-dav.ts';
import { displayPath, InvalidArgumentError, parseUserPath, type UserPath } from '../files/user-paths.ts';
import { assertBrowsableInScope, assertPathInScope } from '../resource-scope.ts';
import {
  guarded,
  guardedPrepare,
  jsonResult,
  objectSchema,
  optionalBoolean,
  optionalString,
  type FirstPartyTool,
  type PreparedAction,
  type ToolEnv,
} from '../first-party-tool.ts';
import { destructivePolicy, readPolicy, writePolicy } from '../tool-policy.ts';
import { errorResult, type ToolResult } from '../tool-provider.ts';
import {
  describePermissions,
  EDIT_BITS,
  parseExpireDate,
  parseShareeId,
  parseShareId,
  permissionBits,
  permissionNames,
  PERMISSION_BITS,
  PERMISSION_NAMES,
  SharesApi,
  SHARE_TYPE_GROUP,
  SHARE_TYPE_LINK,
  SHARE_TYPE_USER,
  shareTypeName,
  type Share,
} from '../../nextcloud/sharing.ts';

const PERMISSIONS_SCHEMA = {
  type: 'array',
  items: { type: 'string', enum: PERMISSION_NAMES },
  description: 'Permissions to give; read is always included. Default: read only. Files take only read, update, share.',
};

function api(env: ToolEnv): SharesApi {
  return new SharesApi(env.session);
}

function view(s: Share): Record<string, unknown> {
  return {
    id: s.id,
    type: shareTypeName(s.shareType),
    path: s.path,
    ...(s.shareWith ? { sharedWith: s.shareWith, sharedWithName: s.shareWithName } : {}),
    permissions: permissionNames(s.permissions),
    ...(s.expiration ? { expires: s.expiration.slice(0, 10) } : {}),
    ...(s.url ? { url: s.url } : {}),
    ...(s.shareType === SHARE_TYPE_LINK ? { passwordProtected: s.hasPassword } : {}),
    ...(s.note ? { note: s.note } : {}),
    ...(s.label ? { label: s.label } : {}),
  };
}

/**
 * What a create answered. Nextcloud 33 answers a share that exists already (same item, same sharee)
 * with that share, unchanged (test/fixtures/nextcloud33/ocs-sharing-33.json,
 * create-user-share-again-with-edit): never report the asked-for permissions as given.
 */
function createdView(s: Share, requested: number): Record<string, unknown> {
  if (s.permissions === requested) return { shared: view(s) };
  return {
    shared: view(s),
    permissionsAsked: permissionNames(requested),
    note: `Nextcloud answered with share ${s.id}, which is ${describePermissions(s.permissions)}, not what was asked: the item was shared with ${s.shareWith ?? 'them'} already (Nextcloud keeps an existing share as it is) or your own rights on it are lower. To change it, use sharing_update_permissions with share id ${s.id}.`,
  };
}

/** The state a share-changing action is bound to (S7). */
function shareState(s: Share): Record<string, unknown> {
  return {
    shareId: s.id,
    shareType: s.shareType,
    path: s.path,
    fileId: s.fileId,
    shareWith: s.shareWith,
    permissions: s.permissions,
    expiration: s.expiration,
  };
}

function sameState(a: Record<string, unknown>, s: Share): boolean {
  const b = shareState(s);
  return Object.keys(b).every((k) => (a[k] ?? null) === (b[k] ?? null));
}

async function sharedItem(env: ToolEnv, path: UserPath): Promise<{ fileId: string; type: 'file' | 'folder' } | ToolResult> {
  const info = await new FilesDav(env.session).stat(path);
  if (!info) return errorResult(`ERROR: Nothing exists at ${displayPath(path)}.`);
  return { fileId: info.fileId, type: info.type };
}

function isItem(x: { fileId: string; type: 'file' | 'folder' } | ToolResult): x is { fileId: string; type: 'file' | 'folder' } {
  return 'fileId' in x;
}

/** The path still points at the same node when a confirmed share is created. */
async function recheckItem(env: ToolEnv, action: { args: Record<string, unknown>; binding: Record<string, unknown> }): Promise<ToolResult | null> {
  const path = scopedPath(env, action.args['path']);
  const info = await new FilesDav(env.session).stat(path);
  if (!info || info.fileId !== String(action.binding['fileId'] ?? '')) {
    return errorResult(`ERROR: ${displayPath(path)} is no longer the item this share was prepared for. Nothing was shared.`);
  }
  return null;
}

const sharingList: FirstPartyTool = {
  family: 'sharing',
  taints: false,
  available: (c) => c.has('sharing'),
  definition: {
    name: 'sharing_list',
    description:
      "Lists the user's shares: all of them, or those of one path (with subfiles: the shares inside a folder). Gives share ids for the other sharing tools.",
    schema: objectSchema({
      path: { type: 'string', description: 'Only shares of this path, relative to the home folder.' },
      subfiles: { type: 'boolean', description: 'With path: list the shares of the items inside that folder.' },
    }),
    policy: readPolicy(),
    label: 'List shares',
    summary: 'List what you share and with whom',
    requiresUser: true,
  },
  run: (args, env) =>
    guarded(async () => {
      const path = args['path'] === undefined || args['path'] === null || args['path'] === '' ? undefined : parseUserPath(args['path']);
      if (path) assertBrowsableInScope(env.scope, path.segments, displayPath(path));
      const subfiles = optionalBoolean(args, 'subfiles') ?? false;
      // Only shares of items inside the scope are shown.
      const shares = (await api(env).list({ ...(path ? { path: displayPath(path) } : {}), subfiles })).filter((x) => env.scope.allowsPath(segmentsOf(x.path)));
      return jsonResult({ count: shares.length, shares: shares.slice(0, 200).map(view) });
    }),
};

function createShareTool(kind: 'user' | 'group'): FirstPartyTool {
  const type = kind === 'user' ? SHARE_TYPE_USER : SHARE_TYPE_GROUP;
  return {
    family: 'sharing',
    risk: 'outward',
    taints: false,
    available: (c) => c.has('sharing') && (kind === 'user' || c.has('sharing-group')),
    definition: {
      name: kind === 'user' ? 'sharing_create_user_share' : 'sharing_create_group_share',
      description:
        kind === 'user'
          ? "Shares a file or folder with one Nextcloud user (by user id, e.g. from a mention), read-only unless permissions say otherwise. Giving edit rights needs the user's confirmation."
          : "Shares a file or folder with a Nextcloud group (by group id). Always needs the user's confirmation.",
      schema: objectSchema(
        {
          path: { type: 'string', description: 'Path relative to the home folder.' },
          [kind]: { type: 'string', description: kind === 'user' ? 'The user id to share with (not a display name).' : 'The group id.' },
          permissions: PERMISSIONS_SCHEMA,
          expireDate: { type: 'string', description: 'Optional expiry date YYYY-MM-DD.' },
          note: { type: 'string', description: 'Optional note for the recipient.' },
        },
        ['path', kind],
      ),
      policy: writePolicy(),
      label: kind === 'user' ? 'Share with a user' : 'Share with a group',
      summary: kind === 'user' ? 'Share a file or folder with a person' : 'Share a file or folder with a group, with your confirmation',
      requiresUser: true,
    },
    prepare: (args, env) =>
      guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
        const path = scopedPath(env, args['path']);
        const target = parseShareeId(args[kind], kind);
        const expireDate = parseExpireDate(args['expireDate'], env.now());
        const note = optionalString(args, 'note', 1000);
        const item = await sharedItem(env, path);
        if (!isItem(item)) return item;
        const permissions = permissionBits(args['permissions'], item.type);
        if (kind === 'user' && target === env.user.uid) return errorResult('ERROR: You cannot share with yourself.');
        const sharee = await api(env).findSharee(target, type as 0 | 1, item.type);
        if (!sharee) return errorResult(`ERROR: There is no ${kind} "${target}" you can share with. Use the exact ${kind} id.`);
        const raising = (permissions & EDIT_BITS) !== 0;
        const confirmReason = kind === 'group' ? 'sharing with a whole group' : raising ? 'giving edit access' : null;
        return {
          args: { path: path.relative, [kind]: target, permissions, ...(expireDate ? { expireDate } : {}), ...(note ? { note } : {}) },
          binding: { fileId: item.fileId },
          description: `share the ${item.type} ${displayPath(path)} with the ${kind} ${sharee.label} (${target}): ${describePermissions(permissions)}${expireDate ? `, until ${expireDate}` : ''}`,
          confirmReason,
        };
      }),
    execute: (action, env) =>
      guarded(async () => {
        const stale = await recheckItem(env, action);
        if (stale) return stale;
        const path = scopedPath(env, action.args['path']);
        const permissions = Number(action.args['permissions']);
        const share = await api(env).create({
          path: displayPath(path),
          shareType: type as 0 | 1,
          shareWith: String(action.args[kind]),
          permissions,
          ...(typeof action.args['expireDate'] === 'string' ? { expireDate: action.args['expireDate'] } : {}),
          ...(typeof action.args['note'] === 'string' ? { note: action.args['note'] } : {}),
        });
        return jsonResult(createdView(share, permissions));
      }),
  };
}

const sharingCreateLink: FirstPartyTool = {
  family: 'sharing',
  risk: 'outward',
  taints: false,
  available: (c) => c.has('sharing') && c.has('sharing-link'),
  definition: {
    name: 'sharing_create_public_link',
    description: "Creates a read-only public link to a file or folder, optionally with a password and an expiry date. Always needs the user's confirmation.",
    schema: objectSchema(
      {
        path: { type: 'string', description: 'Path relative to the home folder.' },
        password: { type: 'string', description: 'Optional password for the link.' },
        expireDate: { type: 'string', description: 'Optional expiry date YYYY-MM-DD.' },
        label: { type: 'string', description: 'Optional label for the link.' },
      },
      ['path'],
    ),
    policy: writePolicy(),
    label: 'Create a public link',
    summary: 'Create a public read-only link, with your confirmation',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const path = scopedPath(env, args['path']);
      const password = optionalString(args, 'password', 200);
      const expireDate = parseExpireDate(args['expireDate'], env.now());
      const label = optionalString(args, 'label', 200);
      if (env.capabilities.has('sharing-link-password-enforced') && !password) {
        return errorResult('ERROR: This server requires a password for public links; ask the user for one.');
      }
      const item = await sharedItem(env, path);
      if (!isItem(item)) return item;
      return {
        args: { path: path.relative, ...(expireDate ? { expireDate } : {}), ...(label ? { label } : {}) },
        ...(password ? { secrets: { password } } : {}),
        binding: { fileId: item.fileId },
        description: `create a public link (anyone with the link can read) to the ${item.type} ${displayPath(path)}${password ? ', protected by a password' : ', without a password'}${expireDate ? `, expiring ${expireDate}` : ', with no expiry date'}`,
        confirmReason: 'creating a public link',
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const stale = await recheckItem(env, action);
      if (stale) return stale;
      const path = scopedPath(env, action.args['path']);
      const share = await api(env).create({
        path: displayPath(path),
        shareType: SHARE_TYPE_LINK,
        permissions: PERMISSION_BITS.read,
        ...(action.secrets?.['password'] !== undefined ? { password: action.secrets['password'] } : {}),
        ...(typeof action.args['expireDate'] === 'string' ? { expireDate: action.args['expireDate'] } : {}),
        ...(typeof action.args['label'] === 'string' ? { label: action.args['label'] } : {}),
      });
      return jsonResult({ created: view(share) });
    }),
};

async function currentShare(env: ToolEnv, id: string): Promise<Share | ToolResult> {
  const share = await api(env).get(id);
  if (!share) return errorResult(`ERROR: There is no share ${id}; use sharing_list.`);
  // The share's path as Nextcloud reports it, checked before any action on it (both modes).
  assertPathInScope(env.scope, segmentsOf(share.path), share.path);
  return share;
}

function segmentsOf(path: string | null | undefined): string[] {
  return String(path ?? '')
    .split('/')
    .filter((x) => x !== '');
}

/** A path argument, parsed (S2) and checked against the assignment's folder scope. */
function scopedPath(env: ToolEnv, input: unknown): UserPath {
  const path = parseUserPath(input);
  assertPathInScope(env.scope, path.segments, displayPath(path));
  return path;
}

function isShare(x: Share | ToolResult): x is Share {
  return 'shareType' in x;
}

function describeShare(s: Share): string {
  if (s.shareType === SHARE_TYPE_LINK) return `the public link to ${s.path}`;
  return `the ${shareTypeName(s.shareType)} share of ${s.path} with ${s.shareWithName ?? s.shareWith ?? '?'} (${s.shareWith ?? '?'})`;
}

const sharingUpdate: FirstPartyTool = {
  family: 'sharing',
  risk: 'outward',
  taints: false,
  available: (c) => c.has('sharing'),
  definition: {
    name: 'sharing_update_permissions',
    description:
      "Changes the permissions of one of the user's shares (by share id). Raising a share to edit access needs the user's confirmation. Public links stay read-only.",
    schema: objectSchema({ shareId: { type: 'string', description: 'Share id from sharing_list.' }, permissions: PERMISSIONS_SCHEMA }, [
      'shareId',
      'permissions',
    ]),
    policy: writePolicy(),
    label: 'Change share permissions',
    summary: 'Change what someone may do with a share',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const id = parseShareId(args['shareId']);
      const share = await currentShare(env, id);
      if (!isShare(share)) return share;
      if (share.shareType !== SHARE_TYPE_USER && share.shareType !== SHARE_TYPE_GROUP && share.shareType !== SHARE_TYPE_LINK) {
        return errorResult(`ERROR: Share ${id} is a ${shareTypeName(share.shareType)} share; only user, group and link shares can be changed here.`);
      }
      const bits = permissionBits(args['permissions'], share.itemType === 'file' ? 'file' : 'folder');
      if (share.shareType === SHARE_TYPE_LINK && bits !== PERMISSION_BITS.read) throw new InvalidArgumentError('public links stay read-only');
      const raising = (bits & EDIT_BITS & ~share.permissions) !== 0;
      return {
        args: { shareId: id, permissions: bits },
        binding: shareState(share),
        description: `change ${describeShare(share)} from ${describePermissions(share.permissions)} to ${describePermissions(bits)}`,
        confirmReason: raising ? 'raising a share to edit access' : null,
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const id = parseShareId(action.args['shareId']);
      const share = await currentShare(env, id);
      if (!isShare(share)) return share;
      if (!sameState(action.binding, share))
        return errorResult(`ERROR: Share ${id} changed since this was prepared. Nothing was done; check it with sharing_list.`);
      const updated = await api(env).updatePermissions(id, Number(action.args['permissions']));
      return jsonResult({ updated: view(updated) });
    }),
};

const sharingDelete: FirstPartyTool = {
  family: 'sharing',
  risk: 'destructive',
  taints: false,
  available: (c) => c.has('sharing'),
  definition: {
    name: 'sharing_delete',
    description: "Removes one of the user's shares or public links (by share id). Needs the user's confirmation.",
    schema: objectSchema({ shareId: { type: 'string', description: 'Share id from sharing_list.' } }, ['shareId']),
    policy: destructivePolicy(),
    label: 'Remove a share',
    summary: 'Stop sharing something, with your confirmation',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const id = parseShareId(args['shareId']);
      const share = await currentShare(env, id);
      if (!isShare(share)) return share;
      return {
        args: { shareId: id },
        binding: shareState(share),
        description: `remove ${describeShare(share)} (share ${id})`,
        confirmReason: 'removing a share',
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const id = parseShareId(action.args['shareId']);
      const share = await currentShare(env, id);
      if (!isShare(share)) return share;
      if (!sameState(action.binding, share))
        return errorResult(`ERROR: Share ${id} changed since this was prepared. Nothing was done; check it with sharing_list.`);
      await api(env).delete(id);
      return jsonResult({ removed: id, path: share.path });
    }),
};

export const SHARING_TOOLS: readonly FirstPartyTool[] = [
  sharingList,
  createShareTool('user'),
  createShareTool('group'),
  sharingCreateLink,
  sharingUpdate,
  sharingDelete,
];
