// How one MCP or companion tool runs: the admin's policy, made stricter by what the companion
// declares. A declaration can only add confirmation; the admin can never take it away (S17).

import { destructivePolicy, policyFromMcpAnnotations, readPolicy, searchPolicy, writePolicy, type ToolPolicy } from '../tools/tool-policy.ts';
import type { ListedTool } from './mcp-connection.ts';
import type { McpToolPolicyName } from './mcp-server-store.ts';

/** `_meta` key with which a companion declares that every call of a tool needs the user's confirmation. */
export const REQUIRES_CONFIRMATION_META = 'requiresConfirmation';

export interface EffectiveToolRule {
  /** The admin's setting after the declaration was applied ('off' stays off). */
  setting: McpToolPolicyName;
  /** The execution policy; null when the tool is off. */
  policy: ToolPolicy | null;
  /** Every call waits for the user's confirmation, tainted turn or not. */
  alwaysConfirm: boolean;
  /** The tool server declared that the tool needs confirmation. */
  declared: boolean;
}

export function declaresConfirmation(tool: Pick<ListedTool, 'meta'>): boolean {
  return tool.meta[REQUIRES_CONFIRMATION_META] === true;
}

/** The execution policy for the admin's setting; null for 'off'. */
export function policyForSetting(setting: McpToolPolicyName, tool: Pick<ListedTool, 'name' | 'description'>): ToolPolicy | null {
  switch (setting) {
    case 'read':
      return policyFromMcpAnnotations(tool.name, tool.description, {}).kind === 'search' ? searchPolicy() : readPolicy();
    case 'write':
    case 'confirm':
      return writePolicy();
    case 'destructive':
      return destructivePolicy();
    default:
      return null;
  }
}

/**
 * The admin's setting combined with the tool's declaration: a declared tool set to 'read' or
 * 'write' runs as 'confirm'; 'destructive' stays destructive and is always confirmed; 'off' wins.
 */
export function effectiveToolRule(setting: McpToolPolicyName, tool: Pick<ListedTool, 'name' | 'description' | 'meta'>): EffectiveToolRule {
  const declared = declaresConfirmation(tool);
  const effective: McpToolPolicyName = declared && (setting === 'read' || setting === 'write') ? 'confirm' : setting;
  const policy = policyForSetting(effective, tool);
  return { setting: effective, policy, alwaysConfirm: policy !== null && (effective === 'confirm' || effective === 'destructive' || declared), declared };
}
