// Checks an assignment's `agentProfile` and `scope` when a bot's tools are saved: the profile must
// exist, be enabled, cover the tool's family and be granted to this bot or its owner, and the
// owner's scope must lie inside the grant's (S13: "attached only to bots whose scope an admin
// approved"). The registry checked the shapes already; the resolver checks all of it again at use.
import { ToolAssignmentError, type AssignmentHooks } from '../tools/tool-assignments.ts';
import { ResourceScope, type ResourceScopeInput } from '../tools/resource-scope.ts';
import type { ToolAssignment } from '../tools/tool-registry.ts';
import { profileCovers } from './profile-coverage.ts';
import type { AgentProfileStore } from './profile-store.ts';

export interface AssignmentCheckDeps {
  profiles: AgentProfileStore;
  /** The tool's family (files, sharing, calendar, deck, collectives) from the registry; null: none. */
  familyOf: (tool: string) => string | null;
  /** The tool's provider id (`mcp:<server id>` for a tool server); a profile may name a tool server by it. */
  providerOf?: (tool: string) => string | null;
  bots: { get(id: string): Promise<{ id: string; ownerUid: string } | null> };
}

export class AgentProfileAssignments {
  readonly #d: AssignmentCheckDeps;

  constructor(deps: AssignmentCheckDeps) {
    this.#d = deps;
  }

  /** Field errors (`tools.<name>.agentProfile` / `.scope`) for a bot (id null: not created yet) of `ownerUid`. */
  async problems(bot: { id: string | null; ownerUid: string }, tools: ReadonlyArray<ToolAssignment>): Promise<Record<string, string>> {
    const fields: Record<string, string> = {};
    for (const t of tools) {
      const profileId = t.config['agentProfile'];
      if (profileId === undefined) continue;
      const key = `tools.${t.name}.agentProfile`;
      const profile = typeof profileId === 'string' ? await this.#d.profiles.get(profileId) : null;
      if (!profile || !profile.enabled) {
        fields[key] = 'No such agent profile, or it is disabled';
        continue;
      }
      if (!profileCovers(profile.toolFamilies, this.#d.familyOf(t.name), this.#d.providerOf?.(t.name) ?? null)) {
        fields[key] = `The agent profile "${profile.label}" does not cover this tool`;
        continue;
      }
      const grants = (await this.#d.profiles.grantsFor(profile.id, { id: bot.id ?? '', ownerUid: bot.ownerUid })).filter(
        (g) => g.botId === null || g.botId === bot.id,
      );
      if (grants.length === 0) {
        fields[key] = `The agent profile "${profile.label}" is not granted to this bot or its owner`;
        continue;
      }
      let scope: ResourceScope;
      try {
        scope = t.config['scope'] === undefined ? ResourceScope.unrestricted : new ResourceScope(t.config['scope'] as ResourceScopeInput);
      } catch (err) {
        fields[`tools.${t.name}.scope`] = err instanceof Error ? err.message : 'Invalid scope';
        continue;
      }
      if (!grants.some((g) => new ResourceScope(g.maxScope).covers(scope))) {
        fields[`tools.${t.name}.scope`] =
          'Must lie inside the scope an administrator approved for this agent profile (choose its folders, calendars, boards or collectives, or a part of them)';
      }
    }
    return fields;
  }

  /** The same check for ToolAssignmentStore (the tools API): a problem refuses the save. */
  hooks(): AssignmentHooks {
    return {
      beforeSave: async (botId, assignments) => {
        if (!assignments.some((a) => a.config['agentProfile'] !== undefined)) return;
        const bot = await this.#d.bots.get(botId);
        if (!bot) throw new ToolAssignmentError('unknown bot');
        const problems = await this.problems(bot, assignments);
        const first = Object.entries(problems)[0];
        if (first) throw new ToolAssignmentError(`${first[0]}: ${first[1]}`);
      },
    };
  }
}
