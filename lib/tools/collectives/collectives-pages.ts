// Page helpers shared by the Collectives tools: strict id and title arguments (S2), the page's
// Markdown file located only from the server's page data (never from arguments), its revision
// (etag) read over WebDAV as the user, and the page tree.
import { FilesDav, isFailure } from '../files/files-dav.ts';
import { InvalidArgumentError, parseUserPath, type UserPath } from '../files/user-paths.ts';
import type { FileInfo } from '../files/files-dav.ts';
import type { ToolEnv } from '../first-party-tool.ts';
import type { PageInfo } from './collectives-api.ts';

/** Thrown for a page whose file cannot be used as it is (wrong id, odd path): the model sees the message. */
export class PageFileError extends InvalidArgumentError {
  override name = 'PageFileError';
}

/** An id argument: a JSON integer, or a string of digits only; anything else is refused before any URL exists. */
export function idArg(args: Record<string, unknown>, key: string): number {
  const v = args[key];
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
  if (typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
  throw new InvalidArgumentError(`${key} must be a positive whole number (an id from collectives_list or collectives_page_tree)`);
}

/** A page title: 1–200 characters without path separators or control characters. */
export function titleArg(args: Record<string, unknown>, key = 'title'): string {
  const v = args[key];
  if (typeof v !== 'string') throw new InvalidArgumentError(`${key} must be a string`);
  const title = v.trim();
  if (title === '' || title.length > 200) throw new InvalidArgumentError(`${key} must have 1 to 200 characters`);
  if (/[/\\\u0000-\u001f\u007f]/.test(title) || title === '.' || title === '..') throw new InvalidArgumentError(`${key} may not contain "/", "\\" or control characters`);
  return title;
}

export function normalizeEtag(etag: string): string {
  const bare = etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
  return `"${bare}"`;
}

export function sameEtag(a: string, b: string): boolean {
  return normalizeEtag(a) === normalizeEtag(b);
}

/** The page's Markdown file in the user's files: collective folder + filePath + fileName, each segment checked. */
export function pageFilePath(page: PageInfo): UserPath {
  if (page.collectivePath === null || !/\.md$/i.test(page.fileName)) throw new PageFileError(`page ${page.id} has no Markdown file Nextcloud told us about`);
  try {
    return parseUserPath([page.collectivePath, page.filePath, page.fileName].filter((s) => s !== '').join('/'), { field: 'page file' });
  } catch {
    throw new PageFileError(`the file of page ${page.id} has a path these tools cannot use`);
  }
}

export interface PageFile {
  path: UserPath;
  info: FileInfo;
}

/**
 * Stats the page's file as the user. The file must exist and carry the page's id: a Collectives
 * page id is the file id of its Markdown file (capture 91: page 262 ↔ oc-fileid 262).
 */
export async function statPageFile(env: ToolEnv, page: PageInfo): Promise<PageFile> {
  const path = pageFilePath(page);
  const info = await new FilesDav(env.session).stat(path);
  if (!info || info.type !== 'file') throw new PageFileError(`the file of page ${page.id} ("${page.title}") is missing`);
  if (info.fileId !== String(page.id)) throw new PageFileError(`the file at the path of page ${page.id} is not that page's file`);
  return { path, info };
}

export async function readPageText(env: ToolEnv, file: PageFile): Promise<{ text: string; etag: string }> {
  const res = await new FilesDav(env.session).get(file.path);
  return { text: new TextDecoder('utf-8', { fatal: false }).decode(res.body), etag: res.etag || file.info.etag };
}

export type PutResult = { ok: true; etag: string } | { ok: false; status: number };

/** PUT with If-Match: only the revision the action is bound to is replaced. */
export async function putPageText(env: ToolEnv, path: UserPath, text: string, etag: string): Promise<PutResult> {
  const res = await new FilesDav(env.session).put(path, text, { ifMatch: normalizeEtag(etag) }, 'text/markdown; charset=utf-8');
  if (isFailure(res)) return { ok: false, status: res.status };
  return { ok: true, etag: res.etag };
}

export interface TreeEntry {
  id: number;
  title: string;
  parentId: number;
  depth: number;
  lastEditedBy: string | null;
  modified: string | null;
  size: number;
}

/** Depth-first, each level in the collective's subpage order, then by title. */
export function pageTree(pages: readonly PageInfo[], limit = 500): { entries: TreeEntry[]; truncated: boolean } {
  const byParent = new Map<number, PageInfo[]>();
  for (const p of pages) byParent.set(p.parentId, [...(byParent.get(p.parentId) ?? []), p]);
  const byId = new Map(pages.map((p) => [p.id, p]));
  const entries: TreeEntry[] = [];
  const seen = new Set<number>();
  const visit = (parentId: number, depth: number): void => {
    const order = byId.get(parentId)?.subpageOrder ?? [];
    const kids = [...(byParent.get(parentId) ?? [])].sort((a, b) => {
      const ia = order.indexOf(a.id);
      const ib = order.indexOf(b.id);
      if (ia !== ib) return (ia < 0 ? Infinity : ia) - (ib < 0 ? Infinity : ib);
      return a.title.localeCompare(b.title);
    });
    for (const p of kids) {
      if (seen.has(p.id) || entries.length >= limit) continue;
      seen.add(p.id);
      entries.push({ id: p.id, title: p.title, parentId: p.parentId, depth, lastEditedBy: p.lastUserId, modified: p.timestamp > 0 ? new Date(p.timestamp * 1000).toISOString() : null, size: p.size });
      visit(p.id, depth + 1);
    }
  };
  visit(0, 0);
  return { entries, truncated: pages.length > entries.length };
}
