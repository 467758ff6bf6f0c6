// What both Collectives clients share: the interface they implement (`CollectivesApi`), the page and
// collective records, and the strict parsing of the answers (ids are integers, strings are strings).
import { NextcloudError } from '../errors.ts';

export interface CollectiveInfo {
  id: number;
  name: string;
  canEdit: boolean;
  /** The team (circle) the collective belongs to; null when the server does not say. */
  circleId: string | null;
}

export interface PageInfo {
  id: number;
  collectiveId: number;
  title: string;
  /** 0 for the collective's landing page. */
  parentId: number;
  fileName: string;
  /** Folder of the page file inside the collective ('' at its top). */
  filePath: string;
  /** The collective's folder in the user's files, e.g. `Collectives/Math Team`. */
  collectivePath: string | null;
  size: number;
  /** Seconds since the epoch. */
  timestamp: number;
  lastUserId: string | null;
  subpageOrder: number[];
  /**
   * Set only when the page went to the collective's trash; a page trashed while files_trashbin is
   * disabled for the user is deleted for good and comes back without it (PageService::trash).
   */
  trashTimestamp: number | null;
}

/**
 * A body for PageController::moveOrCopy, as the Collectives UI sends it: a rename carries only the
 * title, a move only the new parent and the position in its subpage order (PageService::move keeps
 * whatever is left out: `$parentId ?: $oldParentId`, the old name when the title is empty).
 */
export type MoveTarget = { kind: 'rename'; title: string } | { kind: 'move'; parentId: number; index: number };

export function moveBody(to: MoveTarget): Record<string, string | number> {
  return to.kind === 'rename' ? { title: to.title } : { parentId: to.parentId, index: to.index };
}

export interface CollectivesApi {
  readonly generation: 2 | 3;
  listCollectives(): Promise<CollectiveInfo[]>;
  listPages(collectiveId: number): Promise<PageInfo[]>;
  getPage(collectiveId: number, pageId: number): Promise<PageInfo>;
  createPage(collectiveId: number, parentId: number, title: string): Promise<PageInfo>;
  touchPage(collectiveId: number, pageId: number): Promise<PageInfo>;
  movePage(collectiveId: number, pageId: number, to: MoveTarget): Promise<PageInfo>;
  trashPage(collectiveId: number, pageId: number): Promise<PageInfo>;
  /** Before any write: prove the API acts as the invoking user (2.x: `cloud/user` with the call's jar). */
  confirmActingUser(): Promise<void>;
}

function bad(operation: string, what: string): NextcloudError {
  return new NextcloudError(operation, 200, `unexpected answer from Collectives (${what})`);
}

function int(v: unknown, operation: string, what: string, min = 0): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw bad(operation, what);
  return v;
}

function str(v: unknown, operation: string, what: string): string {
  if (typeof v !== 'string' || v.length > 4096) throw bad(operation, what);
  return v;
}

export function parseCollective(raw: unknown, operation: string): CollectiveInfo {
  const c = raw as Record<string, unknown> | null;
  if (!c || typeof c !== 'object') throw bad(operation, 'collective');
  return {
    id: int(c['id'], operation, 'collective id', 1),
    name: str(c['name'], operation, 'collective name'),
    canEdit: c['canEdit'] === true,
    circleId: circleIdOf(c['circleId'], operation),
  };
}

/** A team id as Circles gives it (test/fixtures/nextcloud29/91-collectives.json: 31 characters); absent or null reads as null. */
function circleIdOf(v: unknown, operation: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > 64) throw bad(operation, 'collective circleId');
  return v;
}

export function parsePage(raw: unknown, collectiveId: number, operation: string): PageInfo {
  const p = raw as Record<string, unknown> | null;
  if (!p || typeof p !== 'object') throw bad(operation, 'page');
  const order = Array.isArray(p['subpageOrder']) ? p['subpageOrder'].filter((x): x is number => typeof x === 'number' && Number.isSafeInteger(x)) : [];
  return {
    id: int(p['id'], operation, 'page id', 1),
    collectiveId,
    title: str(p['title'], operation, 'page title'),
    parentId: int(p['parentId'], operation, 'parent id'),
    fileName: str(p['fileName'], operation, 'file name'),
    filePath: typeof p['filePath'] === 'string' ? p['filePath'] : '',
    collectivePath: typeof p['collectivePath'] === 'string' ? p['collectivePath'] : null,
    size: typeof p['size'] === 'number' ? p['size'] : 0,
    timestamp: typeof p['timestamp'] === 'number' ? p['timestamp'] : 0,
    lastUserId: typeof p['lastUserId'] === 'string' ? p['lastUserId'] : null,
    subpageOrder: order,
    trashTimestamp: typeof p['trashTimestamp'] === 'number' && Number.isSafeInteger(p['trashTimestamp']) ? p['trashTimestamp'] : null,
  };
}

export function parseList<T>(raw: unknown, operation: string, one: (x: unknown) => T): T[] {
  if (!Array.isArray(raw)) throw bad(operation, 'list');
  return raw.map(one);
}
