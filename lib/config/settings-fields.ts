import { z } from 'zod';

/** zod fields shared by the admin settings of models, knowledge and media endpoints. */

export const trimmedOrNull = (v: string | null): string | null => (v === null || v.trim() === '' ? null : v.trim());

/** Why an endpoint URL is refused, or null. Credentials, query and fragment would end up in logs or break the SDK's path joining. */
export function endpointProblem(value: string): string | null {
  if (value.length > 2048) return 'must be at most 2048 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http:// or https://';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password; put the key in the key field';
  if (url.search !== '' || url.hash !== '') return 'must not contain a query string or fragment';
  return null;
}

export const endpointField = z
  .string({ error: 'must be a URL string or null' })
  .nullable()
  .transform(trimmedOrNull)
  .superRefine((v, ctx) => {
    const problem = v === null ? null : endpointProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const intField = (min: number, max: number, unit: string) =>
  z
    .number({ error: `must be a number of ${unit}` })
    .int(`must be a whole number of ${unit}`)
    .min(min, `must be at least ${min} ${unit}`)
    .max(max, `must be at most ${max} ${unit}`);
