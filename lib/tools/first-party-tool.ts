// The shape of one first-party tool. Read tools run directly. Write tools are split in two:
// `prepare` checks the arguments and the object's current state without changing anything,
// `execute` runs exactly the prepared action after checking that state again. A confirmed
// action is executed from its stored form, so the model never re-produces the arguments (S7).
import type { NextcloudSession } from '../nextcloud/client.ts';
import { NextcloudError } from '../nextcloud/errors.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { Capabilities } from './first-party-capabilities.ts';
import { InvalidArgumentError } from './files/user-paths.ts';
import type { ResourceScope } from './resource-scope.ts';
import { errorResult, type ToolDefinition, type ToolResult } from './tool-provider.ts';

export interface ToolEnv {
  readonly user: ActingUser;
  readonly session: NextcloudSession;
  readonly capabilities: Capabilities;
  readonly now: () => number;
  /** What this assignment may touch (folders, calendars, boards, collectives); check every resolved object against it. */
  readonly scope: ResourceScope;
}

/**
 * How much one write can hurt (S6), decided by the tool and Nextcloud, never by the model.
 * `destructive`: deletes or overwrites, always confirmed. `outward`: reaches or widens what
 * other people see, confirmed in a tainted turn. `private`: only the user sees it and it can
 * be undone, so it runs even in a tainted turn.
 */
export type RiskClass = 'destructive' | 'outward' | 'private';
/** A write tool's declared class; `by-visibility`: `prepare` says per call (private or outward), outward when it cannot tell. */
export type DeclaredRisk = RiskClass | 'by-visibility';

export interface PreparedAction {
  /** Canonical arguments: exactly what `execute` will do, nothing the model can add later. */
  args: Record<string, unknown>;
  /** The object state the action is bound to (file id + etag, share id + state, event href + etag). */
  binding: Record<string, unknown>;
  /** What will happen, in words a person can check. */
  description: string;
  /** Why this action always needs the user's confirmation; null when only policy or taint would demand it. */
  confirmReason: string | null;
  /** This call's class from Nextcloud facts fetched now (sharing of the folder, calendar, board); never lowers the declared one. */
  risk?: RiskClass;
  /** Values that must not wait in storage as plain text (a link password): sealed in the vault until the action runs. */
  secrets?: Record<string, string>;
}

export type ToolFamily = 'files' | 'sharing' | 'calendar' | 'deck' | 'collectives';

export interface FirstPartyTool {
  definition: ToolDefinition;
  family: ToolFamily;
  available(caps: Capabilities): boolean;
  /** Its output carries content the invoker did not type (file contents, calendar invitations; S6). */
  taints: boolean;
  /** Every write tool (`prepare`) declares one; see docs/SECURITY.md (S6) for the table. */
  risk?: DeclaredRisk;
  run?(args: Record<string, unknown>, env: ToolEnv): Promise<ToolResult>;
  prepare?(args: Record<string, unknown>, env: ToolEnv): Promise<PreparedAction | ToolResult>;
  execute?(action: { args: Record<string, unknown>; binding: Record<string, unknown>; secrets?: Record<string, string> }, env: ToolEnv): Promise<ToolResult>;
}

const RANK: Record<RiskClass, number> = { private: 0, outward: 1, destructive: 2 };

/** The class one prepared call runs under: the stricter of the declared class and the call's facts. */
export function riskOf(tool: FirstPartyTool, prepared: PreparedAction): RiskClass {
  const declared = tool.risk ?? 'outward';
  if (tool.definition.policy.destructive || declared === 'destructive') return 'destructive';
  const fact = prepared.risk ?? (declared === 'private' ? 'private' : 'outward');
  const floor: RiskClass = declared === 'outward' ? 'outward' : 'private';
  return RANK[fact] >= RANK[floor] ? fact : floor;
}

/** For `prepare`: outward when another person can see the target, or when that could not be established. */
export async function visibility(isShared: () => Promise<boolean>): Promise<RiskClass> {
  try {
    return (await isShared()) ? 'outward' : 'private';
  } catch {
    return 'outward';
  }
}

export function isToolResult(x: PreparedAction | ToolResult): x is ToolResult {
  return Array.isArray((x as ToolResult).content);
}

export function jsonResult(value: unknown): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 1) }], isError: false };
}

/** Nextcloud's own short message of an OCS error, without the operation prefix. */
export function nextcloudMessage(err: NextcloudError): string {
  const i = err.message.indexOf(': ');
  return (i >= 0 ? err.message.slice(i + 2) : err.message).trim();
}

/** Turns expected failures into results a model can act on; anything else propagates. */
export async function guarded(fn: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof InvalidArgumentError) return errorResult(`ERROR: ${err.message}`);
    if (err instanceof NextcloudError) {
      if (err.status === 401) return errorResult('ERROR: Nextcloud did not accept the request for this account.');
      if (err.status === 403) return errorResult(`ERROR: Nextcloud refused this for your account (${nextcloudMessage(err) || 'forbidden'}).`);
      if (err.status === 404) return errorResult(`ERROR: Not found (${nextcloudMessage(err) || 'no such item'}).`);
      return errorResult(`ERROR: Nextcloud could not do this: ${nextcloudMessage(err) || `HTTP ${err.status}`}.`);
    }
    throw err;
  }
}

/** `guarded` for prepare steps: expected failures become results, a prepared action passes through. */
export async function guardedPrepare(fn: () => Promise<PreparedAction | ToolResult>): Promise<PreparedAction | ToolResult> {
  let prepared: PreparedAction | null = null;
  const result = await guarded(async () => {
    const out = await fn();
    if (isToolResult(out)) return out;
    prepared = out;
    return { content: [], isError: false };
  });
  return prepared ?? result;
}

export function optionalString(args: Record<string, unknown>, key: string, max: number): string | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new InvalidArgumentError(`${key} must be a string`);
  if (v.length > max) throw new InvalidArgumentError(`${key} is longer than ${max} characters`);
  return v;
}

export function requiredString(args: Record<string, unknown>, key: string, max: number): string {
  const v = optionalString(args, key, max);
  if (v === undefined || v.trim() === '') throw new InvalidArgumentError(`${key} is required`);
  return v;
}

export function optionalBoolean(args: Record<string, unknown>, key: string): boolean | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new InvalidArgumentError(`${key} must be true or false`);
  return v;
}

export function optionalInteger(args: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = args[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new InvalidArgumentError(`${key} must be a whole number from ${min} to ${max}`);
  return v;
}

/** JSON-schema helper for an object with these properties (empty `properties` stays `{}`, not `[]`). */
export function objectSchema(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}
