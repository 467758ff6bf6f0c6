// Paths inside a wiki. Everything the model or an owner gives is relative to the wiki root (or,
// for a custom root, to the user's home under `Talk AI/`) and is checked segment by segment
// before any URL exists: no absolute paths, no `..`, no hidden segments, only text page types.
import { InvalidArgumentError, parseUserPath, printable, type UserPath } from '../tools/files/user-paths.ts';

export const WIKI_BASE_FOLDER = 'Talk AI';
export const PERSONAL_WIKIS_FOLDER = `${WIKI_BASE_FOLDER}/Personal Wikis`;
export const MAX_ROOT_PATH_CHARS = 512;
export const MAX_PAGE_PATH_CHARS = 512;
export const PAGE_EXTENSIONS: ReadonlySet<string> = new Set(['md', 'txt', 'json']);
/** Managed files at the root: created by the server, the index section rewritten by it. */
export const INDEX_FILE = 'index.md';
export const LOG_FILE = 'log.md';
export const SCHEMA_FILE = 'schema.md';
export const MANAGED_FILES: ReadonlySet<string> = new Set([INDEX_FILE, LOG_FILE, SCHEMA_FILE]);
export const SOURCES_FOLDER = 'sources';

export { InvalidArgumentError };

/** Plain relative segments: the problem in words, or null when the path is acceptable. */
export function relativePathProblem(input: string): string | null {
  if (input.trim() === '') return 'must not be empty';
  if (/^[\\/]/.test(input) || /^[A-Za-z]:/.test(input)) return 'must be relative (no leading "/")';
  if (input.includes('\\')) return 'must use "/" between folders, not backslashes';
  if (/[\u0000-\u001f\u007f]/.test(input)) return 'must not contain control characters';
  const segments = input.split('/');
  if (segments.some((s) => s === '..')) return 'must not contain ".."';
  if (segments.some((s) => s === '' || s === '.')) return 'must not contain empty or "." segments';
  if (segments.some((s) => s.trim() !== s)) return 'must not have names that start or end with spaces';
  if (segments.some((s) => s.startsWith('.'))) return 'must not contain hidden names (starting with ".")';
  return null;
}

function checked(input: string, field: string): UserPath {
  const problem = relativePathProblem(input);
  if (problem !== null) throw new InvalidArgumentError(`${field} "${printable(input)}" ${problem}`);
  return parseUserPath(input, { field });
}

/** A custom wiki root: under `Talk AI/`, relative, at most 512 characters. */
export function parseCustomRoot(input: unknown): UserPath {
  if (typeof input !== 'string') throw new InvalidArgumentError('rootPath must be a string');
  if (input.length > MAX_ROOT_PATH_CHARS) throw new InvalidArgumentError(`rootPath must be at most ${MAX_ROOT_PATH_CHARS} characters`);
  const path = checked(input.replace(/\/+$/, ''), 'rootPath');
  if (path.segments[0] !== WIKI_BASE_FOLDER || path.segments.length < 2)
    throw new InvalidArgumentError(`rootPath must be a folder inside "${WIKI_BASE_FOLDER}/"`);
  return path;
}

/** A page path relative to the wiki root, of an allowed type. */
export function parsePagePath(input: unknown, field = 'path'): UserPath {
  if (typeof input !== 'string') throw new InvalidArgumentError(`${field} must be a string`);
  if (input.length > MAX_PAGE_PATH_CHARS) throw new InvalidArgumentError(`${field} must be at most ${MAX_PAGE_PATH_CHARS} characters`);
  const path = checked(input.trim(), field);
  const name = path.segments[path.segments.length - 1] ?? '';
  const ext = name.includes('.') ? (name.split('.').pop() ?? '').toLowerCase() : '';
  if (!PAGE_EXTENSIONS.has(ext)) throw new InvalidArgumentError(`${field} "${printable(input)}" must end in .md, .txt or .json`);
  return path;
}

export function isPageName(name: string): boolean {
  const ext = name.includes('.') ? (name.split('.').pop() ?? '').toLowerCase() : '';
  return PAGE_EXTENSIONS.has(ext) && !name.startsWith('.');
}

/** `Talk AI/Personal Wikis/tutor` for the mention `tutor`. */
export function defaultRootFor(mention: string): UserPath {
  const slug = slugOf(mention);
  const segments = [...PERSONAL_WIKIS_FOLDER.split('/'), slug];
  return { segments, relative: segments.join('/') };
}

export function slugOf(mention: string): string {
  const slug = mention
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100);
  return slug === '' ? 'bot' : slug;
}

/** The root joined with a relative page path. */
export function join(root: UserPath, rel: UserPath): UserPath {
  const segments = [...root.segments, ...rel.segments];
  return { segments, relative: segments.join('/') };
}
