/**
 * Row types of every table. Timestamps are milliseconds since the epoch;
 * booleans are 0/1 integers and JSON is text, so one schema fits SQLite and
 * PostgreSQL.
 */
import type { Generated } from 'kysely';

export interface SettingsTable {
  key: string;
  value: string;
  updated_at: number;
}

export interface SecretsTable {
  name: string;
  ciphertext: string;
  updated_at: number;
}

export interface Database {
  settings: SettingsTable;
  secrets: SecretsTable;
}

export type { Generated };
