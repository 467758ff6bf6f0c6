// Paths the model gives are relative to the invoking user's home. They are split and every
// segment checked (S2) before any URL exists; the uid never comes from the path.
import type { UserPath } from '../../nextcloud/files-dav.ts';
import { InvalidArgumentError } from '../../nextcloud/invalid-argument.ts';
import { assertSafeSegment, splitSafePath } from '../../nextcloud/url-template.ts';

export { InvalidArgumentError };
export type { UserPath };

const MAX_PATH_CHARS = 1024;
const MAX_SEGMENT_CHARS = 250;

export function parseUserPath(input: unknown, options: { allowRoot?: boolean; field?: string } = {}): UserPath {
  const field = options.field ?? 'path';
  if (typeof input !== 'string') throw new InvalidArgumentError(`${field} must be a string`);
  if (input.length > MAX_PATH_CHARS) throw new InvalidArgumentError(`${field} is too long`);
  let segments: string[];
  try {
    segments = splitSafePath(input.trim(), `path ${field}`);
  } catch {
    throw new InvalidArgumentError(`${field} "${printable(input)}" is not allowed: use a plain path inside your files, without "..", "?", "#" or backslashes`);
  }
  if (segments.some((s) => s.length > MAX_SEGMENT_CHARS)) throw new InvalidArgumentError(`${field} has a name that is too long`);
  // A percent sign is part of a real file name, never an escape: splitSafePath only validated.
  if (segments.length === 0 && !options.allowRoot) throw new InvalidArgumentError(`${field} must name a file or folder, not your home folder`);
  return { segments, relative: segments.join('/') };
}

export function parentOf(path: UserPath): UserPath {
  const segments = path.segments.slice(0, -1);
  return { segments, relative: segments.join('/') };
}

export function baseName(path: UserPath): string {
  return path.segments[path.segments.length - 1] ?? '';
}

/** `/a/b` as shown to people and sent in OCS bodies. */
export function displayPath(path: UserPath): string {
  return `/${path.relative}`;
}

/** One opaque name the server gave us (a trash item, a version id), as a single safe segment. */
export function parseHandle(input: unknown, field: string, pattern?: RegExp): string {
  if (typeof input !== 'string' || input === '' || input.length > MAX_SEGMENT_CHARS) throw new InvalidArgumentError(`${field} must be a non-empty string`);
  try {
    assertSafeSegment(input, field);
  } catch {
    throw new InvalidArgumentError(`${field} "${printable(input)}" is not allowed`);
  }
  if (pattern && !pattern.test(input)) throw new InvalidArgumentError(`${field} "${printable(input)}" has the wrong form`);
  return input;
}

export function printable(s: string): string {
  const flat = s.replace(/[\u0000-\u001f\u007f]/g, '?');
  return flat.length > 80 ? `${flat.slice(0, 77)}...` : flat;
}
