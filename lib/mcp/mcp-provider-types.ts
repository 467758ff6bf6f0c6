// The MCP providers' public shapes, constants and errors.
import type { ConfirmationService } from '../confirmations/confirmation-service.ts';
import type { ConfirmationRequester, ConfirmedExecutionGate } from '../tools/first-party-provider.ts';
import { type InvocationContext, type ToolMetadata } from '../tools/tool-provider.ts';
import { type ListedTool } from './mcp-connection.ts';
import type { McpServer, McpToolPolicyName } from './mcp-server-store.ts';

/**
 * What the MCP providers need of the agent profiles (lib/agent-profiles): the names of a profile's
 * credentials, a credential opened for one request, and the re-check of a confirmed agent-mode call.
 */
export interface McpAgentProfiles {
  credentials: {
    credentialNames(profileId: string): Promise<string[]>;
    withProfileCredential<T>(profileId: string, name: string, fn: (value: string) => Promise<T>): Promise<T>;
  };
  execution: ConfirmedExecutionGate;
}

/** What the MCP providers need of the confirmation service: store and post requests, run confirmed calls. */
export type McpConfirmations = ConfirmationRequester & Pick<ConfirmationService, 'registerExecutor'>;

/** `_meta` key of tools/call carrying the signed invocation context (companions only). */
export const CONTEXT_META_KEY = 'educai/context';
/** `_meta` key of tools/call carrying the validated per-assignment config (companions only). */
export const CONFIG_META_KEY = 'educai/config';
export const CONTEXT_ISSUER = 'educai';
export const CONTEXT_TOKEN_TTL_SECONDS = 60;

export interface InvocationClaims {
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
  bot_id: string;
  room_token: string | null;
  thread_id: string | null;
  message_id: string | null;
  /** The invoking Nextcloud user's uid; null for guests and other non-users. */
  uid: string | null;
  actor_kind: InvocationContext['actorKind'];
}

export type McpToolMetadata = ToolMetadata & { pendingApproval: boolean };

export interface ToolReviewItem {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ListedTool['annotations'];
  hash: string;
  /** approved: unchanged since approval; new: never approved; changed: differs from what was approved. */
  status: 'approved' | 'new' | 'changed';
  /** From the server's hints only; the admin decides. */
  suggestedPolicy: Exclude<McpToolPolicyName, 'off'>;
  policy: McpToolPolicyName | null;
  /** The server declared `_meta.requiresConfirmation`: every call is confirmed, whatever the admin chose. */
  declaresConfirmation: boolean;
  /** The admin's policy with the declaration applied (what runs); null while not approved. */
  effectivePolicy: McpToolPolicyName | null;
  configSchema: Record<string, unknown> | null;
  configSchemaError: string | null;
}

export interface ToolReview {
  serverId: string;
  hash: string;
  approvedToolsHash: string | null;
  tools: ToolReviewItem[];
  /** Approved tools the server no longer lists. */
  removed: string[];
}

export interface McpProviderStatus {
  providerId: string;
  serverId: string;
  name: string;
  kind: McpServer['kind'];
  enabled: boolean;
  reachable: boolean | null;
  lastError: string | null;
  /** Listed tools that are new or changed since approval; they stay off until approved. */
  pendingApproval: string[];
  approvedToolsHash: string | null;
  currentToolsHash: string | null;
}

export class McpApprovalConflictError extends Error {
  override name = 'McpApprovalConflictError';
}
