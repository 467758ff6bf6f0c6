// What an admin reviews and approves of an MCP server's tools: each tool pinned by hash, so a changed tool waits for a new approval.
import { createHash } from 'node:crypto';
import { isPlainObject, setOwn } from '../tools/json-schema.ts';
import type { ListedTool } from './mcp-connection.ts';
import type { McpServer, McpToolPolicyName, McpToolPolicySetting } from './mcp-server-store.ts';
import { declaresConfirmation, effectiveToolRule } from './mcp-tool-rules.ts';
import { compileConfigSchema } from './mcp-config-schema.ts';
import type { ToolReview, ToolReviewItem } from './mcp-provider-types.ts';
import { canonicalJson } from '../validation/canonical-json.ts';
import { policyFromMcpAnnotations } from '../tools/tool-policy.ts';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * What the admin approves of a tool: its name, description, input schema, config schema, user
 * requirement and declared confirmation. The declaration is hashed only when set, so the hashes
 * of tools without it stay as they were; dropping it later makes the tool "changed".
 */
export function toolHash(tool: ListedTool): string {
  return sha256(
    canonicalJson({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      configSchema: tool.meta['configSchema'] ?? null,
      requiresUser: tool.meta['requiresUser'] === true,
      ...(declaresConfirmation(tool) ? { requiresConfirmation: true } : {}),
    }),
  );
}

export function toolListHash(tools: ReadonlyArray<ListedTool>): string {
  const pairs = tools.map((t) => [t.name, toolHash(t)] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return sha256(JSON.stringify(pairs));
}

// --- policies --------------------------------------------------------------

/** Pre-fills the admin's choice from the server's hints and declaration; the hint never decides. */
export function suggestPolicy(tool: ListedTool): Exclude<McpToolPolicyName, 'off'> {
  const p = policyFromMcpAnnotations(tool.name, tool.description, tool.annotations);
  if (p.destructive) return 'destructive';
  if (declaresConfirmation(tool)) return 'confirm';
  return p.readOnly ? 'read' : 'write';
}

export function settingOf(server: McpServer, name: string, approved: boolean): McpToolPolicyName | null {
  const set = Object.hasOwn(server.toolPolicies, name) ? server.toolPolicies[name]?.policy : undefined;
  if (set !== undefined) return set;
  // Approved without an explicit choice: not read-only, writes confirmed (S17).
  return approved ? 'write' : null;
}

/** The listed tools with their approval state and suggested policies, for the admin. */
export function reviewOf(server: McpServer, tools: ListedTool[]): ToolReview {
  const items = tools.map((tool): ToolReviewItem => {
    const hash = toolHash(tool);
    const pinned = server.approvedTools[tool.name];
    const status = pinned === undefined ? 'new' : pinned === hash ? 'approved' : 'changed';
    const rawSchema = tool.meta['configSchema'];
    const compiled = compileConfigSchema(server.kind === 'companion' ? rawSchema : undefined);
    const policy = settingOf(server, tool.name, status === 'approved');
    const item: ToolReviewItem = {
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      annotations: { ...tool.annotations },
      hash,
      status,
      suggestedPolicy: suggestPolicy(tool),
      policy,
      declaresConfirmation: declaresConfirmation(tool),
      effectivePolicy: policy === null ? null : effectiveToolRule(policy, tool).setting,
      configSchema: server.kind === 'companion' && isPlainObject(rawSchema) ? rawSchema : null,
      configSchemaError: compiled.ok ? null : compiled.error,
    };
    if (tool.title !== undefined) item.title = tool.title;
    return item;
  });
  const names = new Set(tools.map((t) => t.name));
  return {
    serverId: server.id,
    hash: toolListHash(tools),
    approvedToolsHash: server.approvedToolsHash,
    tools: items,
    removed: Object.keys(server.approvedTools).filter((n) => !names.has(n)),
  };
}

/** The pins and policies an approval stores; a tool without an explicit policy gets 'write'. */
export function approvalOf(
  server: McpServer,
  tools: ListedTool[],
  policies: Record<string, McpToolPolicyName | McpToolPolicySetting>,
): { approvedTools: Record<string, string>; toolPolicies: Record<string, McpToolPolicySetting> } {
  const approvedTools: Record<string, string> = {};
  const toolPolicies: Record<string, McpToolPolicySetting> = {};
  for (const tool of tools) {
    setOwn(approvedTools, tool.name, toolHash(tool));
    const given = isPlainObject(policies) && Object.hasOwn(policies, tool.name) ? policies[tool.name] : undefined;
    const chosen = typeof given === 'string' ? given : given?.policy;
    const policy = chosen ?? (Object.hasOwn(server.toolPolicies, tool.name) ? server.toolPolicies[tool.name]?.policy : undefined) ?? 'write';
    setOwn(toolPolicies, tool.name, { policy });
  }
  return { approvedTools, toolPolicies };
}
