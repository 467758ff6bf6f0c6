// Page helpers shared by the Collectives tools: strict id and title arguments (S2), etags and the
// page tree. The page's Markdown file is in nextcloud/collectives/page-file.ts.
import { InvalidArgumentError } from '../files/user-paths.ts';
import type { PageInfo } from '../../nextcloud/collectives/api.ts';
import { normalizeEtag } from '../../nextcloud/collectives/page-file.ts';

/** An id argument: a JSON integer, or a string of digits only; anything else is refused before any URL exists. */
export function idArg(args: Record<string, unknown>, key: string): number {
  const v = args[key];
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
  if (typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
  throw new InvalidArgumentError(`${key} must be a positive whole number (an id from collectives_list or collectives_page_tree)`);
}

// NodeHelper::sanitiseFilename turns "/" into "-", drops * | \ : " < > ? and trims spaces and dots
// at both ends. Such titles are refused rather than cleaned here: the title the user confirms is
// then the title Collectives saves, and the model can pick another one knowingly.
const CHANGED_BY_COLLECTIVES = /[/\\*|:"<>?]/;

/** A page title: 1–200 characters that Collectives saves unchanged (no control characters). */
export function titleArg(args: Record<string, unknown>, key = 'title'): string {
  const v = args[key];
  if (typeof v !== 'string') throw new InvalidArgumentError(`${key} must be a string`);
  const title = v.trim();
  if (title === '' || title.length > 200) throw new InvalidArgumentError(`${key} must have 1 to 200 characters`);
  if (/\p{Cc}/u.test(title)) throw new InvalidArgumentError(`${key} may not contain control characters`);
  if (CHANGED_BY_COLLECTIVES.test(title))
    throw new InvalidArgumentError(
      `${key} may not contain any of / \\ * | : " < > ? (Collectives would change or drop them in the saved title): choose a title without them`,
    );
  if (title.startsWith('.') || title.endsWith('.')) throw new InvalidArgumentError(`${key} may not start or end with a dot (Collectives would drop it)`);
  return title;
}

export { normalizeEtag };

export function sameEtag(a: string, b: string): boolean {
  return normalizeEtag(a) === normalizeEtag(b);
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
      entries.push({
        id: p.id,
        title: p.title,
        parentId: p.parentId,
        depth,
        lastEditedBy: p.lastUserId,
        modified: p.timestamp > 0 ? new Date(p.timestamp * 1000).toISOString() : null,
        size: p.size,
      });
      visit(p.id, depth + 1);
    }
  };
  visit(0, 0);
  return { entries, truncated: pages.length > entries.length };
}
