// S16: the wiki root must be the invoker's own folder. Before initialising and before every
// write, the root and each ancestor below the home are read as the invoker (oc:owner-id,
// oc:share-types, nc:mount-type) and refused when someone else owns them, when they are a
// mount (a received share, external storage, a group folder) or when they are shared. For a
// Collective, its own folder (where the Collectives API says it is for the invoker) is the one
// mount allowed, and only when Nextcloud reports it as a Collective the invoker may edit.
import type { FileInfo, FilesDav } from '../nextcloud/files-dav.ts';
import type { UserPath } from '../tools/files/user-paths.ts';

/** nc:mount-type of a Collective's folder. */
export const COLLECTIVE_MOUNT_TYPE = 'collective';

export class WikiLocationError extends Error {
  override name = 'WikiLocationError';
}

export interface GuardResult {
  /** The root folder, or null when it (or an ancestor) does not exist yet. */
  root: FileInfo | null;
  /** The deepest existing prefix length (in segments). */
  existing: number;
}

/** Letters of oc:permissions that allow changing a folder's content. */
export function canWrite(info: FileInfo): boolean {
  return /[CK]/.test(info.permissions) || (info.type === 'file' && info.permissions.includes('W'));
}

function describe(path: string): string {
  return `"${path}"`;
}

function checkOwn(info: FileInfo, uid: string): void {
  if (info.type !== 'folder') throw new WikiLocationError(`${describe(info.path)} is a file, not a folder`);
  if (info.ownerId !== null && info.ownerId !== uid)
    throw new WikiLocationError(`${describe(info.path)} belongs to someone else (it was shared with you), so the wiki cannot live there`);
  if (info.ownerId === null) throw new WikiLocationError(`Nextcloud did not say who owns ${describe(info.path)}, so the wiki cannot live there`);
  if (info.mountType !== '') throw new WikiLocationError(`${describe(info.path)} is a mounted folder (${info.mountType}), not your own folder`);
  if (info.shareTypes.length > 0) throw new WikiLocationError(`${describe(info.path)} is shared with others, so the wiki cannot live there`);
}

/**
 * Checks every existing prefix of `root` (personal files). A missing prefix ends the walk:
 * folders below it do not exist and will be created (and checked again) by the caller.
 */
export async function checkPersonalRoot(dav: FilesDav, root: UserPath): Promise<GuardResult> {
  let info: FileInfo | null = null;
  for (let i = 1; i <= root.segments.length; i++) {
    const prefix = root.segments.slice(0, i);
    info = await dav.stat({ segments: prefix, relative: prefix.join('/') });
    if (!info) return { root: null, existing: i - 1 };
    checkOwn(info, dav.uid);
  }
  return { root: info, existing: root.segments.length };
}

/**
 * The Collective's folder, wherever this member's Collectives folder is (`Collectives/<name>`,
 * `Kollektive/<name>`, `.Collectives/<name>` in 4.x, `<name>` for members without quota: the
 * path comes from the Collectives API). Its nc:mount-type `collective` proves it is the
 * Collective's own mount as this member sees it; it must not be shared separately, and the
 * member must be able to edit it. The folders above it are not checked: they may be a plain
 * folder or the 4.x `collectives-user` mount, and the wiki never writes there.
 */
export async function checkCollectiveRoot(dav: FilesDav, root: UserPath): Promise<FileInfo> {
  const name = root.segments[root.segments.length - 1];
  if (!name) throw new WikiLocationError("a Collective wiki lives in the Collective's own folder");
  const folder = await dav.stat(root);
  if (!folder || folder.type !== 'folder') throw new WikiLocationError(`the Collective "${name}" is not available to you`);
  if (folder.mountType !== COLLECTIVE_MOUNT_TYPE) throw new WikiLocationError(`"${root.relative}" is not a Collective's folder`);
  if (folder.shareTypes.length > 0) throw new WikiLocationError(`"${root.relative}" is shared separately, so the wiki cannot live there`);
  if (!canWrite(folder)) throw new WikiLocationError(`you cannot edit the Collective "${name}"`);
  return folder;
}
