// Zod issues as the `fields` record of a 400 answer: one message per dotted path, the first one wins.
import type { z } from 'zod';

export interface FieldErrorOptions {
  /** The key of an issue about the whole value (empty path). */
  root?: string;
  /**
   * The message for each key a strict object refuses, reported under `<path>.<key>`; null keeps the
   * issue as zod reports it (under the object's path, with zod's message).
   */
  unknownKey?: string | null;
}

export function collectFieldErrors(issues: readonly z.core.$ZodIssue[], fields: Record<string, string>, options: FieldErrorOptions = {}): void {
  const root = options.root ?? 'input';
  const unknownKey = options.unknownKey === undefined ? 'Unknown field' : options.unknownKey;
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys' && unknownKey !== null) {
      for (const key of issue.keys) fields[[...issue.path.map(String), key].join('.')] ??= unknownKey;
      continue;
    }
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : root;
    fields[key] ??= issue.message;
  }
}
