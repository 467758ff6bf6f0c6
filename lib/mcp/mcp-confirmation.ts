// What an MCP or companion call that waits for the user's confirmation stores and shows (S7).

import { isPlainObject } from '../tools/json-schema.ts';

const MAX_ARGS_CHARS = 400;

/** The state a confirmed call is bound to: it runs only while all of it still holds. */
export interface McpCallBinding {
  serverId: string;
  /** The pinned hash of the tool as approved when the confirmation was requested. */
  toolHash: string;
  /** The validated per-assignment config the call was prepared with. */
  config: Record<string, unknown>;
  /** Of the turn that asked, for the freshly signed invocation context. */
  threadId: string | null;
  messageId: string | null;
}

export function bindingOf(raw: Record<string, unknown>): McpCallBinding | null {
  const { serverId, toolHash, config, threadId, messageId } = raw;
  if (typeof serverId !== 'string' || typeof toolHash !== 'string' || !isPlainObject(config)) return null;
  if ((threadId !== null && typeof threadId !== 'string') || (messageId !== null && typeof messageId !== 'string')) return null;
  return { serverId, toolHash, config, threadId, messageId };
}

/**
 * Model-written arguments as one inert line for the server's own message: no links Talk would
 * resolve (S8), no mentions, no code fences, and short.
 */
export function inertArguments(args: Record<string, unknown>): string {
  let text = JSON.stringify(args) ?? '{}';
  text = text
    .replace(/[\u0000-\u001f\u007f`]/g, ' ')
    .replace(/:\/\//g, '[:]//')
    .replace(/@/g, '\uFF20');
  return text.length > MAX_ARGS_CHARS ? `${text.slice(0, MAX_ARGS_CHARS - 3)}...` : text;
}

/** "run bridge_publish on the tool server NuQloud bridge with `{…}`". */
export function describeCall(tool: string, serverName: string, args: Record<string, unknown>): string {
  const server = serverName.replace(/[\u0000-\u001f\u007f`]/g, ' ').replace(/@/g, '\uFF20');
  return `run ${tool} on the tool server ${server} with \`${inertArguments(args)}\``;
}
