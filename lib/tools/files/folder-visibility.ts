// Who else sees a folder, asked of Nextcloud at the time of the call (S6): a share of the folder
// or of one above it (`oc:share-types`), or a mount from someone else (`nc:mount-type`, e.g. a
// folder shared with the user) [test/fixtures/nextcloud33/files-sharing-facts.json].
import type { FilesDav } from '../../nextcloud/files-dav.ts';
import type { UserPath } from './user-paths.ts';

const MAX_SHARE_CHECK_DEPTH = 12;

/** Whether a folder (or one above it) is shared by the user or mounted from someone else (S6). */
export async function visibleToOthers(files: FilesDav, folder: UserPath): Promise<boolean> {
  if (folder.segments.length > MAX_SHARE_CHECK_DEPTH) return true;
  for (let n = folder.segments.length; n >= 1; n--) {
    const segments = folder.segments.slice(0, n);
    const info = await files.stat({ segments, relative: segments.join('/') });
    if (!info) continue;
    if (info.shareTypes.length > 0 || info.mountType !== '') return true;
  }
  return false;
}
