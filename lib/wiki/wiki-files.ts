// Reading a wiki folder through the user's WebDAV session (lib/nextcloud/files-dav.ts):
// a bounded walk of the tree and text reads with a size cap.
import { FilesDav, type FileInfo } from '../nextcloud/files-dav.ts';
import type { UserPath } from '../tools/files/user-paths.ts';
import { isPageName } from './wiki-paths.ts';
import { MAX_PAGE_BYTES } from '../tools/page-text.ts';

export const MAX_FILES_PER_WALK = 200;
const MAX_FOLDERS_PER_WALK = 50;
const MAX_DEPTH = 8;

export interface WikiFile {
  /** Relative to the wiki root. */
  rel: string;
  info: FileInfo;
}

export function toUserPath(relative: string): UserPath {
  const segments = relative.split('/').filter((s) => s !== '');
  return { segments, relative: segments.join('/') };
}

/** Page files below the root (hidden names skipped), at most 200, breadth first. */
export async function walkPages(dav: FilesDav, root: UserPath, options: { maxFiles?: number } = {}): Promise<{ files: WikiFile[]; truncated: boolean }> {
  const maxFiles = options.maxFiles ?? MAX_FILES_PER_WALK;
  const files: WikiFile[] = [];
  const queue: Array<{ path: UserPath; depth: number }> = [{ path: root, depth: 0 }];
  let folders = 0;
  let truncated = false;
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (++folders > MAX_FOLDERS_PER_WALK) {
      truncated = true;
      break;
    }
    const listing = await dav.list(next.path);
    if (!listing) continue;
    const children = [...listing.children].sort((a, b) => a.name.localeCompare(b.name));
    for (const child of children) {
      if (child.name.startsWith('.')) continue;
      const rel = child.path.slice(root.relative.length).replace(/^\/+/, '');
      if (child.type === 'folder') {
        if (next.depth + 1 < MAX_DEPTH) queue.push({ path: toUserPath(child.path), depth: next.depth + 1 });
        continue;
      }
      if (!isPageName(child.name)) continue;
      if (files.length >= maxFiles) {
        truncated = true;
        break;
      }
      files.push({ rel, info: child });
    }
    if (truncated) break;
  }
  return { files, truncated };
}

export class PageTooLargeError extends Error {
  override name = 'PageTooLargeError';
}

/** UTF-8 text of a file and its etag; refuses files over 512 KiB. Null when missing. */
export async function readText(dav: FilesDav, path: UserPath): Promise<{ text: string; etag: string; size: number } | null> {
  const info = await dav.stat(path);
  if (!info) return null;
  if (info.type !== 'file') throw new PageTooLargeError('this path is a folder, not a page');
  if ((info.size ?? 0) > MAX_PAGE_BYTES) throw new PageTooLargeError(`the page is larger than ${MAX_PAGE_BYTES / 1024} KiB`);
  const got = await dav.get(path);
  if (got.body.byteLength > MAX_PAGE_BYTES) throw new PageTooLargeError(`the page is larger than ${MAX_PAGE_BYTES / 1024} KiB`);
  return { text: new TextDecoder('utf-8').decode(got.body), etag: got.etag || info.etag, size: got.body.byteLength };
}
