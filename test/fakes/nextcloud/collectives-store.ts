// The Collectives app behind both API generations of the fake. Pages ARE the Markdown files in
// the collective's folder (`<user folder>/<name>/…` in every member's files, `Collectives/<name>`
// by default, capture 91; each member's `user_folder` setting decides, setUserFolder), so a
// WebDAV write and the page API always agree:
//   - the landing page is `Readme.md` of the collective folder (title "Readme", parentId 0);
//   - a page without subpages is `<title>.md`; one with subpages is the folder `<title>/` with
//     its own `Readme.md`; creating a subpage under a leaf turns the leaf into such a folder;
//   - a page id is the file id of its Markdown file (capture 91: page 262 ↔ oc-fileid 262);
//   - titles and file names follow NodeHelper (sanitiseFilename keeps `#` and `%`; generateFilename
//     adds ` (2)` on a clash), moves PageService::move (parentId/title/index), trash PageService::trash
//     (no files_trashbin for the user: deleted for good, no trashTimestamp).
// Which generation answers is chosen per test (`generation`); every call records its acting uid.
import { randomBytes } from 'node:crypto';
import type { FakeFiles, FakeNode } from './dav-files.ts';
import type { UserDirectory } from './users.ts';

export type CollectivesGeneration = 2 | 3;

export interface FakeCollective {
  id: number;
  name: string;
  circleId: string;
  folder: FakeNode;
  /** uid → the collective's folder in that member's files (`Collectives/<name>`, `Kollektive/<name>`…): PageInfo's collectivePath. */
  mounts: Record<string, string>;
  /** uid → oc:permissions in the mount (`RGDNVCK` may edit, `RG` reads only). */
  members: Record<string, string>;
  /** The uid that created it (level 9, admin); others are level 1. */
  owner: string;
  trashTimestamp: number | null;
}

export interface FakePageInfo {
  id: number;
  lastUserId: string | null;
  lastUserDisplayName: string | null;
  emoji: string | null;
  isFullWidth: boolean;
  subpageOrder: number[];
  trashTimestamp: number | null;
  title: string;
  timestamp: number;
  size: number;
  fileName: string;
  filePath: string;
  collectivePath: string;
  parentId: number;
  shareToken: null;
}

/** A failure the controllers turn into 403/404/422 (NotPermitted, NotFound, AlreadyExists). */
export class CollectivesFailure extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

interface Located {
  info: FakePageInfo;
  /** The node that moves with the page: the leaf file, or the page's folder. */
  node: FakeNode;
  /** The folder holding `node`. */
  container: FakeNode;
  /** The page's Markdown file. */
  file: FakeNode;
  /** Folder the page's subpages live in (only for folder pages and the landing page). */
  subFolder: FakeNode | null;
}

interface PageMeta {
  lastUserId: string;
  subpageOrder: number[];
}

export class FakeCollectivesStore {
  /** null: the app is not installed (both APIs answer like an unknown route). */
  generation: CollectivesGeneration | null = null;
  /** Every API call: which generation, which route, and as whom (the session's or the OCS user). */
  readonly calls: Array<{ generation: CollectivesGeneration; uid: string; method: string; route: string }> = [];
  readonly #files: FakeFiles;
  readonly #users: UserDirectory;
  readonly #now: () => number;
  readonly #collectives = new Map<number, FakeCollective>();
  readonly #meta = new Map<number, PageMeta>();
  readonly #trashed = new Map<number, { collectiveId: number; info: FakePageInfo }>();
  readonly #deleted = new Set<number>();
  /** Users for whom files_trashbin is disabled (`isEnabledForUser`): trashing deletes for good. */
  readonly trashbinDisabledFor = new Set<string>();
  /** uid → the `user_folder` setting (UserFolderHelper): '' is the home root; unset is `Collectives`. */
  readonly #userFolders = new Map<string, string>();
  #nextId = 4;

  constructor(files: FakeFiles, users: UserDirectory, now: () => number) {
    this.#files = files;
    this.#users = users;
    this.#now = now;
  }

  record(generation: CollectivesGeneration, uid: string, method: string, route: string): void {
    this.calls.push({ generation, uid, method, route });
  }

  // --- test helpers ---

  /** Where `uid`'s collectives are mounted: `Collectives` by default, `Kollektive` for a German user, '' for the home root. Set before creating collectives. */
  setUserFolder(uid: string, folder: string): void {
    this.#userFolders.set(uid, folder.replace(/^\/+|\/+$/g, ''));
  }

  /** Where a member's collectives are mounted unless set: `Collectives` (2.x/3.x), `.Collectives` (4.x, collectives-4.5.json). */
  defaultUserFolder = 'Collectives';

  userFolderOf(uid: string): string {
    return this.#userFolders.get(uid) ?? this.defaultUserFolder;
  }

  /**
   * A collective with its landing page; `members` maps uid → permissions (first member is the owner).
   * `options.circleId` is its team's id (default: a random one); each member sees it under their own folder.
   */
  createCollective(name: string, members: Record<string, string>, options: string | { landing?: string; circleId?: string } = {}): FakeCollective {
    const { landing = `# ${name}\n\nWelcome to the collective.\n`, circleId = randomCircleId() } = typeof options === 'string' ? { landing: options } : options;
    const owner = Object.keys(members)[0] ?? 'admin';
    const folder = this.#files.mountCollective(name, members, (uid) => this.userFolderOf(uid));
    const mounts = Object.fromEntries(Object.keys(members).map((uid) => [uid, [this.userFolderOf(uid), name].filter((s) => s !== '').join('/')]));
    const readme = this.#files.putFile(owner, `${mounts[owner]}/Readme.md`, landing, 'text/markdown');
    this.#meta.set(readme.fileId, { lastUserId: owner, subpageOrder: [] });
    const collective: FakeCollective = { id: this.#nextId++, name, circleId, folder, mounts, members: { ...members }, owner, trashTimestamp: null };
    this.#collectives.set(collective.id, collective);
    return collective;
  }

  byName(name: string): FakeCollective | undefined {
    return [...this.#collectives.values()].find((c) => c.name === name);
  }

  // --- what the controllers do ---

  collectiveInfo(c: FakeCollective, uid: string): Record<string, unknown> {
    const perms = c.members[uid] ?? '';
    const canEdit = /[CW]/.test(perms);
    return {
      id: c.id,
      circleId: c.circleId,
      emoji: null,
      trashTimestamp: c.trashTimestamp,
      pageMode: 0,
      name: c.name,
      level: c.owner === uid ? 9 : 1,
      editPermissionLevel: 1,
      sharePermissionLevel: 1,
      canEdit,
      canShare: canEdit,
      shareToken: null,
      isPageShare: false,
      sharePageId: 0,
      shareEditable: false,
      userPageOrder: 0,
      userShowRecentPages: true,
      userFavoritePages: [],
      canLeave: null,
    };
  }

  collectivesOf(uid: string): FakeCollective[] {
    return [...this.#collectives.values()].filter((c) => c.members[uid] !== undefined && c.trashTimestamp === null);
  }

  /** `POST _api` (capture 91 createCollective): the creator becomes its admin. */
  createAs(uid: string, name: string): FakeCollective {
    if (name.trim() === '' || /[/\\]/.test(name)) throw new CollectivesFailure(422, 'Invalid collective name');
    if (this.byName(name)) throw new CollectivesFailure(422, 'A collective with this name already exists');
    return this.createCollective(name, { [uid]: 'RGDNVCK' });
  }

  collective(uid: string, id: number): FakeCollective {
    const c = this.#collectives.get(id);
    if (!c || c.trashTimestamp !== null || c.members[uid] === undefined) throw new CollectivesFailure(404, `Collective not found: ${id}`);
    return c;
  }

  #assertCanEdit(c: FakeCollective, uid: string): void {
    if (!/[CW]/.test(c.members[uid] ?? '')) throw new CollectivesFailure(403, 'Not allowed to edit collective');
  }

  pages(uid: string, collectiveId: number): FakePageInfo[] {
    const c = this.collective(uid, collectiveId);
    return this.#locateAll(c).map((l) => this.#as(c, uid, l.info));
  }

  page(uid: string, collectiveId: number, id: number): FakePageInfo {
    const c = this.collective(uid, collectiveId);
    return this.#as(c, uid, this.#locate(c, id).info);
  }

  /** PageInfo::fromFile: collectivePath is the collective's mount point in the asking member's files. */
  #as(c: FakeCollective, uid: string, info: FakePageInfo): FakePageInfo {
    return { ...info, collectivePath: c.mounts[uid] ?? info.collectivePath };
  }

  createPage(uid: string, collectiveId: number, parentId: number, rawTitle: string): FakePageInfo {
    const c = this.collective(uid, collectiveId);
    this.#assertCanEdit(c, uid);
    const title = sanitizeTitle(rawTitle);
    const parent = this.#locate(c, parentId);
    const folder = this.#subFolderOf(c, parent);
    const file = this.#files.putFile(c.owner, `${this.#pathOf(c, folder)}/${freeName(folder, title)}.md`.replace(/^\//, ''), '', 'text/markdown');
    this.#meta.set(file.fileId, { lastUserId: uid, subpageOrder: [] });
    const parentMeta = this.#metaOf(parent.file.fileId);
    parentMeta.subpageOrder = [file.fileId, ...parentMeta.subpageOrder.filter((i) => i !== file.fileId)];
    return this.#as(c, uid, this.#locate(c, file.fileId).info);
  }

  touch(uid: string, collectiveId: number, id: number): FakePageInfo {
    const c = this.collective(uid, collectiveId);
    this.#assertCanEdit(c, uid);
    this.#metaOf(this.#locate(c, id).file.fileId).lastUserId = uid;
    return this.#as(c, uid, this.#locate(c, id).info);
  }

  /**
   * PageService::move: `$parentId ?: $oldParentId`; an empty title keeps the name; a clash in the
   * target folder gets ` (2)`; only a new parent changes subpage orders, the page going in at `index`
   * of the new parent's order (SubpageOrderService::add, array_splice: past the end appends).
   */
  move(uid: string, collectiveId: number, id: number, parentId: number | null, rawTitle: string | null, index = 0): FakePageInfo {
    const c = this.collective(uid, collectiveId);
    this.#assertCanEdit(c, uid);
    const page = this.#locate(c, id);
    if (page.info.parentId === 0) throw new CollectivesFailure(403, 'Not allowed to move or copy landing page');
    const oldParentId = page.info.parentId;
    const targetId = parentId || oldParentId;
    if (targetId === id) throw new CollectivesFailure(403, 'Not allowed to move or copy a page to itself');
    const target = this.#locate(c, targetId);
    if (page.subFolder !== null && this.#isInside(target.file, page.subFolder))
      throw new CollectivesFailure(403, 'Not allowed to move or copy a page to a subpage of itself');
    const title = rawTitle ? sanitizeTitle(rawTitle) : page.info.title;
    const folder = this.#subFolderOf(c, target);
    const fresh = this.#locate(c, id);
    const name = freeName(folder, title, fresh.node);
    const newName = fresh.subFolder ? name : `${name}.md`;
    fresh.container.children.delete(fresh.node.name);
    fresh.node.name = newName;
    folder.children.set(newName, fresh.node);
    fresh.file.mtime = this.#now();
    this.#metaOf(fresh.file.fileId).lastUserId = uid;
    if (targetId !== oldParentId) {
      const old = this.#metaOf(oldParentId);
      old.subpageOrder = old.subpageOrder.filter((i) => i !== id);
      const next = this.#metaOf(targetId);
      const order = next.subpageOrder.filter((i) => i !== id);
      order.splice(index < 0 ? Math.max(0, order.length + index) : Math.min(index, order.length), 0, id);
      next.subpageOrder = order;
    }
    return this.#as(c, uid, this.#locate(c, id).info);
  }

  /** PageController::trash: the page (and its subpages) leave the tree for the page trash. */
  trash(uid: string, collectiveId: number, id: number): FakePageInfo {
    const c = this.collective(uid, collectiveId);
    this.#assertCanEdit(c, uid);
    const page = this.#locate(c, id);
    if (page.info.parentId === 0) throw new CollectivesFailure(403, 'Not allowed to trash the landing page');
    page.container.children.delete(page.node.name);
    const parent = this.#metaOf(page.info.parentId);
    parent.subpageOrder = parent.subpageOrder.filter((i) => i !== id);
    if (this.trashbinDisabledFor.has(uid)) {
      // "Delete directly if … trash is not available": the answer has no trashTimestamp.
      this.#deleted.add(id);
      return { ...this.#as(c, uid, page.info), trashTimestamp: null };
    }
    const info = { ...this.#as(c, uid, page.info), trashTimestamp: Math.floor(this.#now() / 1000) };
    this.#trashed.set(id, { collectiveId, info });
    return info;
  }

  isTrashed(id: number): boolean {
    return this.#trashed.has(id);
  }

  /** Deleted for good by a trash without files_trashbin. */
  isDeleted(id: number): boolean {
    return this.#deleted.has(id);
  }

  // --- the page tree from the files ---

  #metaOf(fileId: number): PageMeta {
    let m = this.#meta.get(fileId);
    if (!m) {
      m = { lastUserId: '', subpageOrder: [] };
      this.#meta.set(fileId, m);
    }
    return m;
  }

  #pathOf(c: FakeCollective, folder: FakeNode): string {
    const trail = this.#trail(c.folder, folder);
    if (trail === null) throw new CollectivesFailure(404, 'Page folder not found');
    return [c.mounts[c.owner] ?? '', ...trail].filter((s) => s !== '').join('/');
  }

  /** Names from `root` down to `target` (empty for root itself), or null. */
  #trail(root: FakeNode, target: FakeNode): string[] | null {
    if (root === target) return [];
    for (const child of root.children.values()) {
      if (!child.folder) continue;
      const rest = this.#trail(child, target);
      if (rest) return [child.name, ...rest];
    }
    return null;
  }

  #isInside(node: FakeNode, folder: FakeNode): boolean {
    if (folder.children.has(node.name) && folder.children.get(node.name) === node) return true;
    return [...folder.children.values()].some((c) => c.folder && this.#isInside(node, c));
  }

  /** The folder a page's subpages go in; a leaf page becomes `<title>/Readme.md` first. */
  #subFolderOf(c: FakeCollective, page: Located): FakeNode {
    if (page.subFolder) return page.subFolder;
    const title = page.info.title;
    page.container.children.delete(page.file.name);
    const folder = this.#files.mkdir(c.owner, `${this.#pathOf(c, page.container)}/${title}`);
    page.file.name = 'Readme.md';
    folder.children.set('Readme.md', page.file);
    return folder;
  }

  #locate(c: FakeCollective, id: number): Located {
    const hit = this.#locateAll(c).find((l) => l.info.id === id);
    if (!hit) throw new CollectivesFailure(404, `Page not found: ${id}`);
    return hit;
  }

  #locateAll(c: FakeCollective): Located[] {
    const out: Located[] = [];
    const collectivePath = c.mounts[c.owner] ?? c.name;
    const info = (file: FakeNode, title: string, filePath: string[], parentId: number): FakePageInfo => {
      const meta = this.#metaOf(file.fileId);
      return {
        id: file.fileId,
        lastUserId: meta.lastUserId || null,
        lastUserDisplayName: meta.lastUserId ? this.#users.displayName(meta.lastUserId) : null,
        emoji: null,
        isFullWidth: false,
        subpageOrder: [...meta.subpageOrder],
        trashTimestamp: null,
        title,
        timestamp: Math.floor(file.mtime / 1000),
        size: file.content.length,
        fileName: file.name,
        filePath: filePath.join('/'),
        collectivePath,
        parentId,
        shareToken: null,
      };
    };
    const walk = (folder: FakeNode, trail: string[], parentId: number): void => {
      for (const child of [...folder.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
        if (!child.folder && child.name.endsWith('.md') && child.name !== 'Readme.md') {
          out.push({ info: info(child, child.name.slice(0, -3), trail, parentId), node: child, container: folder, file: child, subFolder: null });
        } else if (child.folder) {
          const readme = child.children.get('Readme.md');
          if (!readme || readme.folder) continue;
          out.push({ info: info(readme, child.name, [...trail, child.name], parentId), node: child, container: folder, file: readme, subFolder: child });
          walk(child, [...trail, child.name], readme.fileId);
        }
      }
    };
    const landing = c.folder.children.get('Readme.md');
    if (!landing) return out;
    out.push({ info: info(landing, 'Readme', [], 0), node: landing, container: c.folder, file: landing, subFolder: c.folder });
    walk(c.folder, [], landing.fileId);
    return out;
  }
}

/** A Circles id (31 alphanumerics, capture 91). */
function randomCircleId(): string {
  return randomBytes(24)
    .toString('base64url')
    .replace(/[^A-Za-z0-9]/g, 'x')
    .slice(0, 31);
}

/**
 * NodeHelper::sanitiseFilename: '/' becomes '-', * | \\ : " < > ? are dropped, spaces and dots are
 * trimmed at both ends, '' becomes "New Page"; `#` and `%` stay. Control characters would fail in
 * Nextcloud's path check, so the fake refuses them.
 */
function sanitizeTitle(raw: string): string {
  if (/\p{Cc}/u.test(raw)) throw new CollectivesFailure(400, 'Invalid page title');
  const title = raw
    .replace(/\//g, '-')
    .replace(/[*|\\:"<>?]/g, '')
    .replace(/^[ .]+|[ .]+$/g, '');
  return title === '' ? 'New Page' : title;
}

/** NodeHelper::generateFilename: `Title (2)`, `Title (3)`… while `Title` or `Title.md` is taken (by another node). */
function freeName(folder: FakeNode, title: string, self?: FakeNode): string {
  const taken = (t: string): boolean => [t, `${t}.md`].some((n) => folder.children.has(n) && folder.children.get(n) !== self);
  let name = title;
  while (taken(name)) {
    const m = /^(.*)\s\((\d+)\)$/u.exec(name);
    name = m ? `${m[1]} (${Number(m[2]) + 1})` : `${name} (2)`;
  }
  return name;
}
