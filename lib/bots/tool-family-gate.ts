// Bot owners assign only first-party tools of families they enabled in their personal settings
// (issue 7). Checked when a bot's tools are saved, for the tools the save adds; tools assigned
// before a family was switched off are kept, like inert assignments.
import type { ToolFamilyName } from '../appapi/settings-forms.ts';
import { isToolFamily } from '../appapi/tool-family-preferences.ts';
import { issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import { FIRST_PARTY_PROVIDER_ID } from '../tools/first-party-provider.ts';
import type { ToolRegistry } from '../tools/tool-registry.ts';

export interface ToolFamilyGate {
  /** `tools` → a message naming the refused tools and where to enable them; {} when all may be added. */
  problems(ownerUid: string, added: ReadonlyArray<{ name: string }>): Promise<Record<string, string>>;
}

export function toolFamilyGate(deps: {
  registry: Pick<ToolRegistry, 'metadata'>;
  enabledFamilies: (owner: ActingUser) => Promise<Set<ToolFamilyName>>;
}): ToolFamilyGate {
  return {
    async problems(ownerUid, added): Promise<Record<string, string>> {
      const meta = deps.registry.metadata();
      const families = new Map<string, ToolFamilyName>();
      for (const a of added) {
        const m = Object.hasOwn(meta, a.name) ? meta[a.name] : undefined;
        if (m?.provider === FIRST_PARTY_PROVIDER_ID && isToolFamily(m.family)) families.set(a.name, m.family);
      }
      if (families.size === 0) return {};
      // The owner was recorded from a verified request when the bot was created.
      const enabled = await deps.enabledFamilies(issueForStoredPrincipal(ownerUid));
      const refused = [...families].filter(([, f]) => !enabled.has(f));
      if (refused.length === 0) return {};
      const off = [...new Set(refused.map(([, f]) => f))].join(', ');
      return {
        tools: `The bot's owner has not enabled these tool families in their personal settings (Talk AI \u2192 Personal settings): ${off}. Not added: ${refused.map(([n]) => n).join(', ')}`,
      };
    },
  };
}
