// Which tools each bot has, stored by tool name with a per-assignment config.

import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { isPlainObject } from './json-schema.ts';
import { isValidToolName } from './tool-provider.ts';
import type { ToolAssignment } from './tool-registry.ts';
import { withToolTables } from '../storage/tables/tool-tables.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';

export const MAX_ASSIGNMENTS_PER_BOT = 200;
export const MAX_CONFIG_JSON_CHARS = 8192;

export class ToolAssignmentError extends Error {
  override name = 'ToolAssignmentError';
}

function parseConfig(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return isPlainObject(value) ? value : {};
  } catch {
    return {};
  }
}

/** Lets a feature shape and prepare a bot's assignments before they are stored (the wiki: all four tools, initialised). */
export interface AssignmentHooks {
  expand?(assignments: ToolAssignment[]): ToolAssignment[];
  /**
   * Runs before the write; a ToolAssignmentError refuses the save and nothing is stored.
   * `scope`: the bot's visibility as it will be saved, when it changes together with the tools (bots API).
   */
  beforeSave?(botId: string, assignments: ToolAssignment[], scope?: { visibility: string; allowedTeams: string[] }): Promise<void>;
}

// Read on every Talk turn: prepared once (storage/prepared-query.ts).
const ASSIGNMENTS = new PreparedQuery((db: Kysely<Database>, p: { botId: string }) =>
  db.selectFrom('bot_tools').select(['tool_name', 'config']).where('bot_id', '=', p.botId).orderBy('position').orderBy('tool_name'),
);

export class ToolAssignmentStore {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;
  readonly #hooks: AssignmentHooks[] = [];

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = withToolTables(db);
    this.#now = now;
  }

  useHooks(hooks: AssignmentHooks): void {
    this.#hooks.push(hooks);
  }

  async list(botId: string): Promise<ToolAssignment[]> {
    const rows = await ASSIGNMENTS.rows(this.#db, { botId });
    return rows.map((r) => ({ name: r.tool_name, config: parseConfig(r.config) }));
  }

  /**
   * Replaces all assignments of a bot in one transaction. A name listed twice keeps
   * its first position and config. Names are not checked against providers: an
   * assignment may outlive the provider that offers it.
   */
  async replace(botId: string, assignments: ReadonlyArray<ToolAssignment>): Promise<ToolAssignment[]> {
    if (typeof botId !== 'string' || botId === '' || botId.length > 36) throw new ToolAssignmentError('invalid bot id');
    if (!Array.isArray(assignments)) throw new ToolAssignmentError('assignments must be a list');
    for (const h of this.#hooks) if (h.expand) assignments = h.expand([...assignments]);
    const unique = new Map<string, Record<string, unknown>>();
    for (const a of assignments) {
      if (a === null || typeof a !== 'object' || !isValidToolName(a.name)) throw new ToolAssignmentError(`invalid tool name: ${String(a?.name).slice(0, 80)}`);
      const config = a.config === undefined ? {} : a.config;
      if (!isPlainObject(config)) throw new ToolAssignmentError(`config of ${a.name} must be an object`);
      if (!unique.has(a.name)) unique.set(a.name, config);
    }
    if (unique.size > MAX_ASSIGNMENTS_PER_BOT) throw new ToolAssignmentError(`at most ${MAX_ASSIGNMENTS_PER_BOT} tools per bot`);
    const now = this.#now();
    const rows = [...unique].map(([name, config], position) => {
      const json = JSON.stringify(config);
      if (json.length > MAX_CONFIG_JSON_CHARS) throw new ToolAssignmentError(`config of ${name} is too large`);
      return { bot_id: botId, tool_name: name, config: json, position, created_at: now };
    });
    for (const h of this.#hooks)
      await h.beforeSave?.(
        botId,
        rows.map((r) => ({ name: r.tool_name, config: parseConfig(r.config) })),
      );
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('bot_tools').where('bot_id', '=', botId).execute();
      if (rows.length > 0) await trx.insertInto('bot_tools').values(rows).execute();
    });
    return rows.map((r) => ({ name: r.tool_name, config: parseConfig(r.config) }));
  }

  async removeBot(botId: string): Promise<void> {
    await this.#db.deleteFrom('bot_tools').where('bot_id', '=', botId).execute();
  }
}
