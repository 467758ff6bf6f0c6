import type { Migration } from 'kysely/migration';
import * as m0001 from './0001-foundation.ts';

/** Ordered migrations; names sort in the order they must run. Append only. */
export const migrations: Record<string, Migration> = {
  '0001-foundation': m0001,
};
