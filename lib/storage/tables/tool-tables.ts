/**
 * Row types of the tool tables (migration 0004-tools). Timestamps are ms since
 * the epoch, booleans 0/1 integers, JSON as text.
 */
import type { Kysely } from 'kysely';

export interface BotToolsTable {
  bot_id: string;
  /** Stored by name, so a tool whose provider disappears stays assigned but inert. */
  tool_name: string;
  /** JSON object: the per-assignment config. */
  config: string;
  position: number;
  created_at: number;
}

export interface McpServersTable {
  id: string;
  name: string;
  url: string;
  kind: 'mcp' | 'companion';
  enabled: number;
  /** JSON: tool name → { policy: 'read' | 'write' | 'confirm' | 'destructive' | 'off' }. */
  tool_policies: string;
  /** JSON: tool name → hash of the tool as approved (name, description, schemas). */
  approved_tools: string;
  /** Hash of the whole approved tool list; null until the admin approves. */
  approved_tools_hash: string | null;
  /** JSON array of header names; the values live in the vault. */
  header_names: string;
  /** Name of the agent profile credential presented in agent mode (migration 0015); null: none. */
  agent_credential: string | null;
  created_at: number;
  updated_at: number;
}

export interface ToolTables {
  bot_tools: BotToolsTable;
  mcp_servers: McpServersTable;
}

/**
 * The same connection. `storage/schema.ts`'s `Database` already includes `ToolTables`, so this is an
 * identity kept for its callers; it takes the connection's own type so this file needs nothing from
 * `storage/schema.ts` (which imports it).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema: the function only widens its type
export function withToolTables<K extends Kysely<any>>(db: K): K {
  return db;
}
