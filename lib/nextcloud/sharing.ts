// OCS files_sharing as the invoking user (test/fixtures/nextcloud29/23-ocs-share-create-*.json,
// 78-ocs-sharing.json, 79-ocs-sharing-errors-v1-vs-v2.json). Only share types user (0), group (1) and public link (3) can be created here (S6); share ids are digits only (S2).
import type { NextcloudSession } from './client.ts';
import { InvalidArgumentError } from './invalid-argument.ts';

const BASE = '/ocs/v2.php/apps/files_sharing/api/v1';

export const SHARE_TYPE_USER = 0;
export const SHARE_TYPE_GROUP = 1;
export const SHARE_TYPE_LINK = 3;
export type CreatableShareType = 0 | 1 | 3;
export const CREATABLE_SHARE_TYPES: ReadonlySet<number> = new Set([SHARE_TYPE_USER, SHARE_TYPE_GROUP, SHARE_TYPE_LINK]);

/** Permission bits of the contract: read 1, update 2, create 4, delete 8, share 16. */
export const PERMISSION_BITS = { read: 1, update: 2, create: 4, delete: 8, share: 16 } as const;
export type PermissionName = keyof typeof PERMISSION_BITS;
export const PERMISSION_NAMES = Object.keys(PERMISSION_BITS) as PermissionName[];
/** Bits that let others change content: raising a share to any of them needs confirmation. */
export const EDIT_BITS = PERMISSION_BITS.update | PERMISSION_BITS.create | PERMISSION_BITS.delete;
const FILE_BITS = PERMISSION_BITS.read | PERMISSION_BITS.update | PERMISSION_BITS.share;

export interface Share {
  id: string;
  shareType: number;
  path: string;
  itemType: string;
  fileId: string;
  permissions: number;
  shareWith: string | null;
  shareWithName: string | null;
  expiration: string | null;
  note: string;
  label: string;
  url: string | null;
  hasPassword: boolean;
  ownerId: string;
}

interface RawShare {
  id?: unknown;
  share_type?: unknown;
  path?: unknown;
  item_type?: unknown;
  item_source?: unknown;
  permissions?: unknown;
  share_with?: unknown;
  share_with_displayname?: unknown;
  expiration?: unknown;
  note?: unknown;
  label?: unknown;
  url?: unknown;
  password?: unknown;
  uid_owner?: unknown;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
}

export function toShare(raw: RawShare): Share {
  const type = Number(raw.share_type);
  return {
    id: str(raw.id),
    shareType: type,
    path: str(raw.path),
    itemType: str(raw.item_type),
    fileId: str(raw.item_source),
    permissions: Number(raw.permissions) || 0,
    // Link shares keep the password hash in share_with: never pass it on.
    shareWith: type === SHARE_TYPE_LINK ? null : str(raw.share_with) || null,
    shareWithName: str(raw.share_with_displayname) || null,
    expiration: str(raw.expiration) || null,
    note: str(raw.note),
    label: str(raw.label),
    url: str(raw.url) || null,
    hasPassword: type === SHARE_TYPE_LINK && str(raw.password) !== '',
    ownerId: str(raw.uid_owner),
  };
}

export function shareTypeName(type: number): string {
  return type === 0 ? 'user' : type === 1 ? 'group' : type === 3 ? 'public link' : type === 4 ? 'email' : type === 10 ? 'talk conversation' : `type ${type}`;
}

export function permissionNames(bits: number): PermissionName[] {
  return PERMISSION_NAMES.filter((n) => (bits & PERMISSION_BITS[n]) !== 0);
}

export function describePermissions(bits: number): string {
  if ((bits & EDIT_BITS) === 0) return (bits & PERMISSION_BITS.share) !== 0 ? 'read-only (may reshare)' : 'read-only';
  return `can ${permissionNames(bits).join(', ')}`;
}

/** Names → bits; read is always included; files take only read, update and share. */
export function permissionBits(input: unknown, itemType: 'file' | 'folder'): number {
  if (input === undefined || input === null) return PERMISSION_BITS.read;
  if (!Array.isArray(input) || input.length > 5) throw new InvalidArgumentError(`permissions must be a list of: ${PERMISSION_NAMES.join(', ')}`);
  let bits = PERMISSION_BITS.read;
  for (const name of input) {
    if (typeof name !== 'string' || !(name in PERMISSION_BITS))
      throw new InvalidArgumentError(`unknown permission "${String(name).slice(0, 20)}"; use ${PERMISSION_NAMES.join(', ')}`);
    bits |= PERMISSION_BITS[name as PermissionName];
  }
  if (itemType === 'file' && (bits & ~FILE_BITS) !== 0) throw new InvalidArgumentError('a file can only be shared with read, update and share permissions');
  return bits;
}

export function parseShareId(input: unknown): string {
  const s = typeof input === 'number' && Number.isSafeInteger(input) ? String(input) : input;
  if (typeof s !== 'string' || !/^[0-9]{1,18}$/.test(s)) throw new InvalidArgumentError('shareId must be the digits of a share id from sharing_list');
  return s;
}

/** A Nextcloud user or group id as a sharee (never a display name, S5). */
export function parseShareeId(input: unknown, field: string): string {
  if (typeof input !== 'string' || !/^[A-Za-z0-9 _.@\-']{1,64}$/.test(input) || input.trim() !== input) {
    throw new InvalidArgumentError(`${field} must be a Nextcloud ${field === 'group' ? 'group' : 'user'} id (as in a mention), not a display name`);
  }
  return input;
}

export function parseExpireDate(input: unknown, nowMs: number): string | undefined {
  if (input === undefined || input === null || input === '') return undefined;
  if (typeof input !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(input)) throw new InvalidArgumentError('expireDate must be a date YYYY-MM-DD');
  const ms = Date.parse(`${input}T00:00:00Z`);
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== input) throw new InvalidArgumentError('expireDate is not a valid date');
  if (ms <= nowMs) throw new InvalidArgumentError('expireDate must be in the future');
  return input;
}

export interface ShareeMatch {
  id: string;
  label: string;
}

interface ShareeEntry {
  label?: unknown;
  value?: { shareType?: unknown; shareWith?: unknown };
}

interface ShareesData {
  exact?: Record<string, ShareeEntry[] | undefined>;
  users?: ShareeEntry[];
  groups?: ShareeEntry[];
}

export class SharesApi {
  readonly #session: NextcloudSession;

  constructor(session: NextcloudSession) {
    this.#session = session;
  }

  async list(query: { path?: string; subfiles?: boolean }): Promise<Share[]> {
    const data = await this.#session.ocs<RawShare[]>('GET', `${BASE}/shares`, {
      query: { ...(query.path !== undefined ? { path: query.path, reshares: 'true' } : {}), ...(query.subfiles ? { subfiles: 'true' } : {}) },
    });
    return (Array.isArray(data) ? data : []).map(toShare);
  }

  async get(id: string): Promise<Share | null> {
    const data = await this.#session.ocs<RawShare[] | RawShare>('GET', `${BASE}/shares/{id}`, { params: { id: parseShareId(id) } });
    const raw = Array.isArray(data) ? data[0] : data;
    return raw ? toShare(raw) : null;
  }

  async create(input: {
    path: string;
    shareType: CreatableShareType;
    shareWith?: string;
    permissions: number;
    password?: string;
    expireDate?: string;
    label?: string;
    note?: string;
  }): Promise<Share> {
    if (!CREATABLE_SHARE_TYPES.has(input.shareType)) throw new InvalidArgumentError('only user, group and public link shares can be created');
    const body: Record<string, unknown> = { path: input.path, shareType: input.shareType, permissions: input.permissions };
    if (input.shareWith !== undefined) body['shareWith'] = input.shareWith;
    if (input.password !== undefined) body['password'] = input.password;
    if (input.expireDate !== undefined) body['expireDate'] = input.expireDate;
    if (input.label !== undefined) body['label'] = input.label;
    if (input.note !== undefined) body['note'] = input.note;
    if (input.shareType === SHARE_TYPE_LINK) body['publicUpload'] = 'false';
    return toShare(await this.#session.ocs<RawShare>('POST', `${BASE}/shares`, { body }));
  }

  async updatePermissions(id: string, permissions: number): Promise<Share> {
    return toShare(await this.#session.ocs<RawShare>('PUT', `${BASE}/shares/{id}`, { params: { id: parseShareId(id) }, body: { permissions } }));
  }

  async delete(id: string): Promise<void> {
    await this.#session.ocs<unknown>('DELETE', `${BASE}/shares/{id}`, { params: { id: parseShareId(id) } });
  }

  /** An exact sharee match of the given type, found by the server for this user. */
  async findSharee(id: string, type: 0 | 1, itemType: 'file' | 'folder'): Promise<ShareeMatch | null> {
    const data = await this.#session.ocs<ShareesData>('GET', `${BASE}/sharees`, { query: { search: id, itemType, perPage: 50, lookup: 'false' } });
    const bucket = type === 0 ? 'users' : 'groups';
    const entries = [...(data.exact?.[bucket] ?? []), ...((type === 0 ? data.users : data.groups) ?? [])];
    const hit = entries.find((e) => Number(e.value?.shareType) === type && e.value?.shareWith === id);
    return hit ? { id, label: typeof hit.label === 'string' && hit.label !== '' ? hit.label : id } : null;
  }
}
