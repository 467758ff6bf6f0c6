// The wiki of one bot as one user sees it: where it is, whether that user may use it, and the
// operations the four tools run. Every Nextcloud call goes through `nextcloud.as(user)` with
// the invoking user: a personal bot's owner, or the team member talking to a team bot (never
// the owner on their behalf). The location is re-checked (S16) before initialising and before
// every write; the bot's rules are server-side, schema.md only explains them to people.
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudError } from '../nextcloud/errors.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { FilesDav, isFailure } from '../nextcloud/files-dav.ts';
import { InvalidArgumentError as PathError, parseUserPath, type UserPath } from '../tools/files/user-paths.ts';
import { locationOf, type WikiLocation } from './wiki-config.ts';
import { readText, toUserPath, walkPages, type WikiFile } from './wiki-files.ts';
import { checkCollectiveRoot, checkPersonalRoot, WikiLocationError } from './wiki-guard.ts';
import {
  defaultRootFor,
  INDEX_FILE,
  InvalidArgumentError,
  join,
  LOG_FILE,
  MANAGED_FILES,
  parseCustomRoot,
  parsePagePath,
  SCHEMA_FILE,
  SOURCES_FOLDER,
} from './wiki-paths.ts';
import type { WikiRootStore } from './wiki-roots.ts';
import { rankDocuments, type SearchDocument } from './wiki-search.ts';
import { initialIndex, initialLog, initialSchema, logEntry, titleOf, withExistingFiles, type IndexEntry } from './wiki-text.ts';
import { byteLength, MAX_PAGE_BYTES, paginate } from '../tools/page-text.ts';

export const UNAVAILABLE_TO_YOU = 'wiki tools are unavailable to you';
const MAX_SEARCH_BYTES = 4 * 1024 * 1024;
const MAX_TITLE_CACHE = 5000;

/** What the wiki needs to know of a bot. */
export interface WikiBot {
  id: string;
  mention: string;
  displayName: string;
  ownerUid: string;
  visibility: string;
  allowedTeams: string[];
}

export interface TeamOfUser {
  id: string;
  displayName: string;
}

export interface WikiServiceOptions {
  nextcloud: NextcloudClient;
  roots: WikiRootStore;
  /** Teams of a user, read as that user (MembershipService). */
  teamsOf(user: ActingUser): Promise<TeamOfUser[]>;
  /**
   * The folder (relative to the user's files) of the collective called `name` that belongs to
   * one of `teamIds`, asked of the Collectives API as `user`; null when there is none.
   */
  collectiveFolder(user: ActingUser, query: { name: string; teamIds: readonly string[] }): Promise<string | null>;
  logger?: Logger;
  now?: () => number;
}

/** The wiki reached as one user. */
export interface WikiHandle {
  bot: WikiBot;
  user: ActingUser;
  location: WikiLocation;
  root: UserPath;
  dav: FilesDav;
}

/** An answer the model can act on (refusals, bad arguments, conflicts). */
export class WikiRefusal extends Error {
  override name = 'WikiRefusal';
}

export type WriteMode = 'create' | 'overwrite' | 'append';

export class WikiService {
  readonly #nc: NextcloudClient;
  readonly #roots: WikiRootStore;
  readonly #teamsOf: (user: ActingUser) => Promise<TeamOfUser[]>;
  readonly #collectiveFolder: WikiServiceOptions['collectiveFolder'];
  readonly #logger: Logger | undefined;
  readonly #now: () => number;
  /** fileId\0etag → title, so an index sync reads only pages that changed. */
  readonly #titles = new Map<string, string>();

  constructor(options: WikiServiceOptions) {
    this.#nc = options.nextcloud;
    this.#roots = options.roots;
    this.#teamsOf = options.teamsOf;
    this.#collectiveFolder = options.collectiveFolder;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The wiki as `user` may use it. Personal bots: only the owner. Team bots: only a Collective
   * of one of the bot's teams, reached as the member talking, who must be able to edit it.
   */
  async open(bot: WikiBot, config: Record<string, unknown>, user: ActingUser): Promise<WikiHandle> {
    const location = locationOf(config);
    const dav = new FilesDav(this.#nc.as(user));
    if (bot.visibility === 'personal') {
      if (user.uid !== bot.ownerUid) throw new WikiRefusal(`${UNAVAILABLE_TO_YOU}: this is ${bot.ownerUid}'s personal wiki`);
      if (location.kind !== 'personal_files') throw new WikiRefusal("a personal bot's wiki lives in its owner's files, not in a Collective");
      return { bot, user, location, root: this.rootOf(bot, location), dav };
    }
    if (bot.visibility !== 'teams') throw new WikiRefusal('wiki tools are only available to personal bots and team bots');
    if (location.kind !== 'collective')
      throw new WikiRefusal("this team bot's wiki must be in a Collective of one of its teams; ask the bot's owner to choose one");
    const teams = await this.#teamsOf(user);
    const teamIds = teams.filter((t) => bot.allowedTeams.includes(t.id)).map((t) => t.id);
    if (teamIds.length === 0) throw new WikiRefusal(`${UNAVAILABLE_TO_YOU}: you are not in the team of the Collective "${location.collective}"`);
    // Where the Collective is for this member comes from Collectives, matched by name and team id.
    const folder = await this.#collectiveFolder(user, { name: location.collective, teamIds });
    if (folder === null) throw new WikiRefusal(`${UNAVAILABLE_TO_YOU}: the Collective "${location.collective}" of your team is not available to you`);
    let root: UserPath;
    try {
      root = parseUserPath(folder, { field: "the Collective's folder" });
    } catch (err) {
      if (err instanceof PathError) throw new WikiRefusal(`${UNAVAILABLE_TO_YOU}: ${err.message}`);
      throw err;
    }
    const handle = { bot, user, location, root, dav };
    try {
      await checkCollectiveRoot(dav, handle.root);
    } catch (err) {
      if (err instanceof WikiLocationError) throw new WikiRefusal(`${UNAVAILABLE_TO_YOU}: ${err.message}`);
      throw err;
    }
    return handle;
  }

  /** A personal bot's root (a Collective's folder comes from the Collectives API in `open`). */
  rootOf(bot: WikiBot, location: WikiLocation & { kind: 'personal_files' }): UserPath {
    return location.rootPath !== null ? parseCustomRoot(location.rootPath) : defaultRootFor(bot.mention);
  }

  /** S16 before any change: the root and its ancestors are the invoker's own (or the Collective they may edit). */
  async #guard(h: WikiHandle): Promise<{ exists: boolean; fileId: string; etag: string }> {
    try {
      if (h.location.kind === 'collective') {
        const folder = await checkCollectiveRoot(h.dav, h.root);
        return { exists: true, fileId: folder.fileId, etag: folder.etag };
      }
      const checked = await checkPersonalRoot(h.dav, h.root);
      return checked.root ? { exists: true, fileId: checked.root.fileId, etag: checked.root.etag } : { exists: false, fileId: '', etag: '' };
    } catch (err) {
      if (err instanceof WikiLocationError) throw new WikiRefusal(`The wiki location is refused: ${err.message}.`);
      throw err;
    }
  }

  /** Creates the root folders and index.md, log.md, schema.md where missing; registers the root. Idempotent. */
  async initialise(h: WikiHandle): Promise<void> {
    let state = await this.#guard(h);
    if (!state.exists) {
      for (let i = 1; i <= h.root.segments.length; i++) {
        const prefix = toUserPath(h.root.segments.slice(0, i).join('/'));
        const made = await h.dav.mkcol(prefix);
        if (isFailure(made) && made.status !== 405)
          throw new WikiRefusal(`Could not create the wiki folder "${prefix.relative}": ${made.message || `HTTP ${made.status}`}`);
      }
      // What now exists must pass the same check: a folder could have appeared meanwhile.
      state = await this.#guard(h);
      if (!state.exists) throw new WikiRefusal('The wiki folder could not be created.');
    }
    const name = h.bot.displayName || h.bot.mention;
    const files: Array<[string, string]> = [
      [INDEX_FILE, initialIndex(name)],
      [LOG_FILE, initialLog(name)],
      [SCHEMA_FILE, initialSchema(name)],
    ];
    let created = false;
    for (const [file, body] of files) {
      const put = await h.dav.put(join(h.root, toUserPath(file)), body, { ifNoneMatch: '*' }, 'text/markdown; charset=utf-8');
      if (isFailure(put)) {
        if (put.status !== 412) throw new WikiRefusal(`Could not create ${file}: ${put.message || `HTTP ${put.status}`}`);
      } else created = true;
    }
    await this.#roots.register({ botId: h.bot.id, uid: h.user.uid, location: h.location.kind, rootPath: h.root.relative, rootFileId: state.fileId });
    if (created) await this.syncIndex(h);
  }

  /** Lazily initialises a wiki whose files are missing (a first use, or files deleted by hand). */
  async #ready(h: WikiHandle): Promise<void> {
    const index = await h.dav.stat(join(h.root, toUserPath(INDEX_FILE)));
    const registered = await this.#roots.get(h.bot.id);
    if (!index || !registered || registered.rootPath !== h.root.relative) await this.initialise(h);
  }

  async search(h: WikiHandle, query: string, scope: 'wiki' | 'sources' | 'all', limit: number) {
    await this.#ready(h);
    const { files, truncated } = await walkPages(h.dav, h.root);
    const inScope = files.filter((f) => {
      if (f.rel === INDEX_FILE) return false;
      const source = f.rel === SOURCES_FOLDER || f.rel.startsWith(`${SOURCES_FOLDER}/`);
      return scope === 'all' || (scope === 'sources' ? source : !source);
    });
    const docs: SearchDocument[] = [];
    let bytes = 0;
    for (const f of inScope) {
      const size = f.info.size ?? 0;
      if (size > MAX_PAGE_BYTES || bytes + size > MAX_SEARCH_BYTES) continue;
      const got = await readText(h.dav, toUserPath(f.info.path)).catch(() => null);
      if (!got) continue;
      bytes += got.size;
      docs.push({ path: f.rel, text: got.text, size: got.size });
    }
    return { results: rankDocuments(query, docs, limit), searched_files: docs.length, truncated };
  }

  async read(h: WikiHandle, pathArg: unknown, offset: unknown, limit: unknown) {
    const rel = parsePagePath(pathArg);
    await this.#ready(h);
    const got = await readText(h.dav, join(h.root, rel));
    if (!got) throw new WikiRefusal(`The page "${rel.relative}" does not exist. Use wiki_search to find pages.`);
    return { path: rel.relative, etag: got.etag, size: got.size, ...paginate(got.text, offset, limit) };
  }

  async write(h: WikiHandle, pathArg: unknown, content: string, mode: WriteMode, expectedEtag: string | null) {
    const rel = parsePagePath(pathArg);
    if (rel.relative === SCHEMA_FILE) throw new WikiRefusal('schema.md is maintained by the server; write other pages instead.');
    if (byteLength(content) > MAX_PAGE_BYTES) throw new InvalidArgumentError(`content is larger than ${MAX_PAGE_BYTES / 1024} KiB`);
    await this.#guard(h);
    await this.#ready(h);
    const target = join(h.root, rel);
    await this.#mkdirs(h, rel);
    let result: { etag: string; fileId: string; size: number; action: 'written' | 'appended' };
    for (let attempt = 0; ; attempt++) {
      const current = mode === 'create' ? null : await readText(h.dav, target);
      if (expectedEtag !== null && current !== null && current.etag !== expectedEtag) {
        throw new WikiRefusal(`The page "${rel.relative}" changed since you read it (etag ${current.etag}); read it again before writing.`);
      }
      if (expectedEtag !== null && current === null && mode !== 'create') {
        throw new WikiRefusal(`The page "${rel.relative}" no longer exists; it was removed since you read it.`);
      }
      let body = content;
      if (mode === 'append' && current) body = current.text === '' || current.text.endsWith('\n') ? current.text + content : `${current.text}\n${content}`;
      if (byteLength(body) > MAX_PAGE_BYTES) throw new InvalidArgumentError(`the page would be larger than ${MAX_PAGE_BYTES / 1024} KiB`);
      const pre = current ? { ifMatch: current.etag } : { ifNoneMatch: '*' as const };
      const put = await h.dav.put(target, body, pre, contentTypeOf(rel.relative));
      if (!isFailure(put)) {
        result = { etag: put.etag, fileId: put.fileId, size: byteLength(body), action: mode === 'append' && current ? 'appended' : 'written' };
        break;
      }
      if (put.status === 412 && mode === 'create')
        throw new WikiRefusal(`The page "${rel.relative}" already exists; use mode "overwrite" or "append" (read it first).`);
      // Someone saved in between: an append re-reads and retries once; an overwrite does not guess.
      if (put.status === 412 && mode === 'append' && attempt === 0 && expectedEtag === null) continue;
      if (put.status === 412) throw new WikiRefusal(`The page "${rel.relative}" changed while writing; read it again and retry.`);
      if (put.status === 403 || put.status === 423)
        throw new WikiRefusal(`Nextcloud refused to save "${rel.relative}" for you (${put.message || `HTTP ${put.status}`}).`);
      throw new WikiRefusal(`Could not save "${rel.relative}": ${put.message || `HTTP ${put.status}`}.`);
    }
    if (!MANAGED_FILES.has(rel.relative) || rel.relative === INDEX_FILE) await this.syncIndex(h);
    return { path: rel.relative, ...result };
  }

  /**
   * What a write would change, without writing: the checked page path, the page's etag now
   * (null: absent) and the root's file id, for a confirmation bound to that state (S6, S7).
   * Refuses early what the write would refuse (schema.md, size, create over a page, stale etag).
   */
  async prepareWrite(h: WikiHandle, pathArg: unknown, content: string, mode: WriteMode, expectedEtag: string | null) {
    const rel = parsePagePath(pathArg);
    if (rel.relative === SCHEMA_FILE) throw new WikiRefusal('schema.md is maintained by the server; write other pages instead.');
    if (byteLength(content) > MAX_PAGE_BYTES) throw new InvalidArgumentError(`content is larger than ${MAX_PAGE_BYTES / 1024} KiB`);
    const rootFileId = await this.rootFileId(h);
    const current = await readText(h.dav, join(h.root, rel));
    if (mode === 'create' && current) throw new WikiRefusal(`The page "${rel.relative}" already exists; use mode "overwrite" or "append" (read it first).`);
    if (expectedEtag !== null && current !== null && current.etag !== expectedEtag) {
      throw new WikiRefusal(`The page "${rel.relative}" changed since you read it (etag ${current.etag}); read it again before writing.`);
    }
    if (expectedEtag !== null && current === null && mode !== 'create')
      throw new WikiRefusal(`The page "${rel.relative}" no longer exists; it was removed since you read it.`);
    const size = mode === 'append' && current ? current.size + byteLength(content) + 1 : byteLength(content);
    if (size > MAX_PAGE_BYTES) throw new InvalidArgumentError(`the page would be larger than ${MAX_PAGE_BYTES / 1024} KiB`);
    return { path: rel.relative, etag: current?.etag ?? null, rootFileId };
  }

  /** The root's file id after the S16 check, initialising the wiki where its files are missing. */
  async rootFileId(h: WikiHandle): Promise<string> {
    await this.#guard(h);
    await this.#ready(h);
    const state = await this.#guard(h);
    return state.fileId;
  }

  /** The page's etag now, or null when it is absent. */
  async pageEtag(h: WikiHandle, pathArg: unknown): Promise<string | null> {
    const got = await readText(h.dav, join(h.root, parsePagePath(pathArg)));
    return got?.etag ?? null;
  }

  async logEvent(h: WikiHandle, title: string, details: string) {
    await this.#guard(h);
    await this.#ready(h);
    const entry = logEntry(this.#now(), title, details);
    const target = join(h.root, toUserPath(LOG_FILE));
    for (let attempt = 0; attempt < 2; attempt++) {
      const current = await readText(h.dav, target);
      const base = current?.text ?? initialLog(h.bot.displayName || h.bot.mention);
      const body = base.endsWith('\n') ? base + entry.replace(/^\n/, base.endsWith('\n\n') ? '' : '\n') : `${base}\n${entry}`;
      if (byteLength(body) > MAX_PAGE_BYTES) throw new WikiRefusal('log.md has reached 512 KiB; move older entries to another page first.');
      const put = await h.dav.put(target, body, current ? { ifMatch: current.etag } : { ifNoneMatch: '*' }, 'text/markdown; charset=utf-8');
      if (!isFailure(put)) return { path: LOG_FILE, entry: entry.trim(), size: byteLength(body) };
      if (put.status !== 412) throw new WikiRefusal(`Could not write log.md: ${put.message || `HTTP ${put.status}`}.`);
    }
    throw new WikiRefusal('log.md changed while writing; try again.');
  }

  async #mkdirs(h: WikiHandle, rel: UserPath): Promise<void> {
    for (let i = 1; i < rel.segments.length; i++) {
      const folder = join(h.root, toUserPath(rel.segments.slice(0, i).join('/')));
      const info = await h.dav.stat(folder);
      if (info?.type === 'folder') continue;
      if (info) throw new WikiRefusal(`"${rel.segments.slice(0, i).join('/')}" is a file, not a folder.`);
      const made = await h.dav.mkcol(folder);
      if (isFailure(made) && made.status !== 405) throw new WikiRefusal(`Could not create the folder "${rel.segments.slice(0, i).join('/')}": ${made.message}`);
    }
  }

  /**
   * Rewrites the "Existing Files" section of index.md from the files under the root (managed
   * files and hidden paths left out). Writes only when the section changed, with If-Match, so
   * a person editing index.md at the same time loses nothing. Returns whether it wrote.
   */
  async syncIndex(h: WikiHandle): Promise<boolean> {
    // The root's etag is read before the walk, so an edit made while this sync runs still differs from
    // the one recorded and the next scan (or file event) syncs again.
    const before = await h.dav.stat(h.root);
    const { files } = await walkPages(h.dav, h.root);
    const entries: IndexEntry[] = [];
    for (const f of files) {
      if (MANAGED_FILES.has(f.rel)) continue;
      entries.push({ path: f.rel, title: await this.#title(h, f), size: f.info.size ?? 0 });
    }
    const target = join(h.root, toUserPath(INDEX_FILE));
    let wrote = false;
    for (let attempt = 0; attempt < 2; attempt++) {
      const current = await readText(h.dav, target);
      const next = withExistingFiles(current?.text ?? initialIndex(h.bot.displayName || h.bot.mention), entries);
      if (current && next === current.text) break;
      const put = await h.dav.put(target, next, current ? { ifMatch: current.etag } : { ifNoneMatch: '*' }, 'text/markdown; charset=utf-8');
      if (!isFailure(put)) {
        wrote = true;
        break;
      }
      if (put.status !== 412) throw new WikiRefusal(`Could not update index.md: ${put.message || `HTTP ${put.status}`}.`);
    }
    // Our own write moved the etag: the new one is recorded only when no page changed meanwhile.
    let root = before;
    if (wrote) {
      const after = await h.dav.stat(h.root);
      const again = await walkPages(h.dav, h.root);
      if (samePages(files, again.files)) root = after;
    }
    if (root) await this.#roots.markSynced(h.bot.id, root.etag, h.root.relative);
    return wrote;
  }

  async #title(h: WikiHandle, f: WikiFile): Promise<string> {
    if (!f.rel.toLowerCase().endsWith('.md')) return f.info.name;
    const key = `${f.info.fileId}\0${f.info.etag}`;
    const cached = this.#titles.get(key);
    if (cached !== undefined) return cached;
    let title = f.info.name.replace(/\.[^.]+$/, '');
    try {
      const got = await readText(h.dav, toUserPath(f.info.path));
      if (got) title = titleOf(got.text, f.info.name);
    } catch (err) {
      if (!(err instanceof NextcloudError)) this.#logger?.debug({ err }, 'wiki page title not read');
    }
    if (this.#titles.size >= MAX_TITLE_CACHE) this.#titles.clear();
    this.#titles.set(key, title);
    return title;
  }
}

function contentTypeOf(path: string): string {
  if (path.endsWith('.json')) return 'application/json; charset=utf-8';
  if (path.endsWith('.txt')) return 'text/plain; charset=utf-8';
  return 'text/markdown; charset=utf-8';
}

/** The same pages with the same etags, index.md and the other managed files aside. */
function samePages(a: readonly WikiFile[], b: readonly WikiFile[]): boolean {
  const pages = (files: readonly WikiFile[]) =>
    files
      .filter((f) => !MANAGED_FILES.has(f.rel))
      .map((f) => `${f.rel}\0${f.info.etag}`)
      .sort()
      .join('\n');
  return pages(a) === pages(b);
}
