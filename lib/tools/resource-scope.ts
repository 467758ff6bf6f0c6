// Which resources one tool assignment may touch: folder prefixes, calendars, Deck boards and
// collectives. Set by the bot owner within what an admin allowed; enforced on the server for
// every call after the tool parsed its arguments, in user mode and in agent mode alike.
// Model arguments never reach this: a tool asks "may I touch X?" with the object it resolved.
import { InvalidArgumentError } from './files/user-paths.ts';

/** How an assignment's write actions are confirmed; the server decides, never the model. */
export type ConfirmationPolicy = 'always' | 'destructive' | 'never';

export const CONFIRMATION_POLICIES: readonly ConfirmationPolicy[] = ['always', 'destructive', 'never'];
export const DEFAULT_CONFIRMATION_POLICY: ConfirmationPolicy = 'destructive';

export interface ResourceScopeInput {
  /** Folder prefixes relative to the acting user's home (`Projects/Alpha`); absent = any folder. */
  folders?: string[];
  /** Calendar ids (the URL segment, `personal`); absent = any calendar. */
  calendars?: string[];
  /** Deck board ids; absent = any board. */
  boards?: number[];
  /** Collective ids; absent = any collective. */
  collectives?: number[];
}

export type ScopeKind = 'folders' | 'calendars' | 'boards' | 'collectives';

export class ScopeError extends InvalidArgumentError {
  override name = 'ScopeError';
}

const MAX_ENTRIES = 50;

function folderSegments(raw: string): string[] {
  if (typeof raw !== 'string' || raw.length > 1024) throw new TypeError('a folder scope must be a path of at most 1024 characters');
  const trimmed = raw.trim().replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return [];
  return trimmed.split('/').map((s) => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(s);
    } catch {
      throw new TypeError(`folder scope "${raw}" is not a plain path`);
    }
    if (decoded === '' || decoded === '.' || decoded === '..' || /[\\?#\u0000-\u001f\u007f/]/.test(decoded))
      throw new TypeError(`folder scope "${raw}" is not a plain path`);
    return s;
  });
}

/**
 * An immutable scope. `null` for a kind means unrestricted. Folder prefixes are compared
 * segment by segment on the parsed path, so `Projects/Al` never admits `Projects/Alpha`,
 * and `..` can never appear (paths are parsed before they get here, S2).
 */
export class ResourceScope {
  readonly folders: ReadonlyArray<ReadonlyArray<string>> | null;
  readonly calendars: ReadonlySet<string> | null;
  readonly boards: ReadonlySet<number> | null;
  readonly collectives: ReadonlySet<number> | null;

  static readonly unrestricted = new ResourceScope({});

  /** Throws TypeError with a field-ready message for malformed input. */
  constructor(input: ResourceScopeInput) {
    const list = <T>(value: T[] | undefined, kind: ScopeKind): T[] | null => {
      if (value === undefined || value === null) return null;
      if (!Array.isArray(value)) throw new TypeError(`${kind} must be a list`);
      if (value.length > MAX_ENTRIES) throw new TypeError(`${kind}: at most ${MAX_ENTRIES} entries`);
      return value;
    };
    const folders = list(input.folders, 'folders');
    this.folders = folders === null ? null : Object.freeze(folders.map((f) => Object.freeze(folderSegments(f))));
    const calendars = list(input.calendars, 'calendars');
    if (calendars?.some((c) => typeof c !== 'string' || !/^[A-Za-z0-9._-]{1,128}$/.test(c) || c === '.' || c === '..'))
      throw new TypeError('calendars: each entry must be a calendar id');
    this.calendars = calendars === null ? null : new Set(calendars);
    const boards = list(input.boards, 'boards');
    if (boards?.some((b) => !Number.isSafeInteger(b) || b <= 0)) throw new TypeError('boards: each entry must be a board id (a positive whole number)');
    this.boards = boards === null ? null : new Set(boards);
    const collectives = list(input.collectives, 'collectives');
    if (collectives?.some((c) => !Number.isSafeInteger(c) || c <= 0))
      throw new TypeError('collectives: each entry must be a collective id (a positive whole number)');
    this.collectives = collectives === null ? null : new Set(collectives);
    Object.freeze(this);
  }

  get restricted(): boolean {
    return this.folders !== null || this.calendars !== null || this.boards !== null || this.collectives !== null;
  }

  allowsPath(segments: ReadonlyArray<string>): boolean {
    if (this.folders === null) return true;
    return this.folders.some((prefix) => prefix.length <= segments.length && prefix.every((s, i) => s === segments[i]));
  }

  /** For a folder that is listed or searched: inside a prefix, or an ancestor on the way to one. */
  allowsBrowsing(segments: ReadonlyArray<string>): boolean {
    if (this.folders === null || this.allowsPath(segments)) return true;
    return this.folders.some((prefix) => segments.length < prefix.length && segments.every((s, i) => s === prefix[i]));
  }

  allowsCalendar(id: string): boolean {
    return this.calendars === null || this.calendars.has(id);
  }

  allowsBoard(id: number): boolean {
    return this.boards === null || this.boards.has(id);
  }

  allowsCollective(id: number): boolean {
    return this.collectives === null || this.collectives.has(id);
  }

  /** Whether every entry of `inner` lies within this scope (an owner's scope inside an admin's grant). */
  covers(inner: ResourceScope): boolean {
    const sub = <T>(outer: ReadonlySet<T> | null, innerSet: ReadonlySet<T> | null): boolean =>
      outer === null || (innerSet !== null && [...innerSet].every((x) => outer.has(x)));
    const folders = this.folders === null || (inner.folders !== null && inner.folders.every((f) => this.allowsPath(f)));
    return folders && sub(this.calendars, inner.calendars) && sub(this.boards, inner.boards) && sub(this.collectives, inner.collectives);
  }

  /** The narrower of two scopes (an admin's grant applied over an owner's scope). */
  intersect(other: ResourceScope): ResourceScope {
    const both = <T>(a: ReadonlySet<T> | null, b: ReadonlySet<T> | null): T[] | undefined =>
      a === null ? (b === null ? undefined : [...b]) : b === null ? [...a] : [...a].filter((x) => b.has(x));
    let folders: string[] | undefined;
    if (this.folders === null) folders = other.folders?.map((f) => f.join('/'));
    else if (other.folders === null) folders = this.folders.map((f) => f.join('/'));
    else folders = [...this.folders.filter((f) => other.allowsPath(f)), ...other.folders.filter((f) => this.allowsPath(f))].map((f) => f.join('/'));
    return new ResourceScope({
      ...(folders !== undefined ? { folders: [...new Set(folders)] } : {}),
      ...optional('calendars', both(this.calendars, other.calendars)),
      ...optional('boards', both(this.boards, other.boards)),
      ...optional('collectives', both(this.collectives, other.collectives)),
    });
  }

  toJSON(): ResourceScopeInput {
    return {
      ...(this.folders !== null ? { folders: this.folders.map((f) => f.join('/')) } : {}),
      ...(this.calendars !== null ? { calendars: [...this.calendars] } : {}),
      ...(this.boards !== null ? { boards: [...this.boards] } : {}),
      ...(this.collectives !== null ? { collectives: [...this.collectives] } : {}),
    };
  }
}

function optional<K extends string, T>(key: K, value: T[] | undefined): Partial<Record<K, T[]>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, T[]>);
}

/** Throw from a tool when a resolved object lies outside the assignment's scope; the model sees the message. */
export function assertPathInScope(scope: ResourceScope, segments: ReadonlyArray<string>, shown: string): void {
  if (!scope.allowsPath(segments)) throw new ScopeError(`${shown} is outside the folders this bot may use (${describeFolders(scope)})`);
}

export function assertBrowsableInScope(scope: ResourceScope, segments: ReadonlyArray<string>, shown: string): void {
  if (!scope.allowsBrowsing(segments)) throw new ScopeError(`${shown} is outside the folders this bot may use (${describeFolders(scope)})`);
}

export function assertCalendarInScope(scope: ResourceScope, id: string): void {
  if (!scope.allowsCalendar(id)) throw new ScopeError(`calendar "${id}" is not one this bot may use`);
}

export function assertBoardInScope(scope: ResourceScope, id: number): void {
  if (!scope.allowsBoard(id)) throw new ScopeError(`Deck board ${id} is not one this bot may use`);
}

export function assertCollectiveInScope(scope: ResourceScope, id: number): void {
  if (!scope.allowsCollective(id)) throw new ScopeError(`collective ${id} is not one this bot may use`);
}

function describeFolders(scope: ResourceScope): string {
  const list = (scope.folders ?? []).map((f) => `/${f.join('/')}`);
  return list.length === 0 ? 'none' : list.join(', ');
}
