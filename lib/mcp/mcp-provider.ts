// A ToolProvider per registered MCP server or companion: admin-set policies, pinned tool hashes, signed context.

import { createHash, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { isTurnTainted } from '../agent/turn-taints.ts';
import type { ConfirmationExecutor, ConfirmationService, StoredAction } from '../confirmations/confirmation-service.ts';
import type { Logger } from '../log/logger.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ConfirmationRequester, ConfirmedExecutionGate } from '../tools/first-party-provider.ts';
import { isPlainObject, setOwn } from '../tools/json-schema.ts';
import { canonicalJson } from '../validation/canonical-json.ts';
import { DEFAULT_CONFIRMATION_POLICY, type ConfirmationPolicy } from '../tools/resource-scope.ts';
import { policyFromMcpAnnotations, type ToolPolicy } from '../tools/tool-policy.ts';
import {
  createInvocationContext,
  deriveInvocationContext,
  errorResult,
  markOutcome,
  turnOf,
  textResult,
  type ConfigValidation,
  type ExecutionInfo,
  type InvocationContext,
  type ToolDefinition,
  type ToolMetadata,
  type ToolProvider,
  type ToolResult,
} from '../tools/tool-provider.ts';
import type { ProviderTier, ToolRegistry } from '../tools/tool-registry.ts';
import { McpConnection, McpUnreachableError, describeError, unreachableMessage, type FetchLike, type ListedTool, type McpCallOptions, type McpConnectionOptions } from './mcp-connection.ts';
import { bindingOf, describeCall, type McpCallBinding } from './mcp-confirmation.ts';
import type { McpServer, McpServerStore, McpToolPolicyName, McpToolPolicySetting } from './mcp-server-store.ts';
import { declaresConfirmation, effectiveToolRule, policyForSetting, REQUIRES_CONFIRMATION_META, type EffectiveToolRule } from './mcp-tool-rules.ts';

export { policyForSetting, REQUIRES_CONFIRMATION_META };

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
const TIER: ProviderTier = 'external';

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

// --- hashing ---------------------------------------------------------------

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

// --- per-assignment config -------------------------------------------------

type ScalarType = 'string' | 'number' | 'integer' | 'boolean';

interface ConfigField {
  type: ScalarType | 'array';
  itemType?: ScalarType;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength: number;
  maxItems: number;
}

export interface ConfigSchema {
  fields: Record<string, ConfigField>;
  required: string[];
}

const MAX_CONFIG_FIELDS = 32;
const MAX_CONFIG_STRING = 500;
const MAX_CONFIG_ITEMS = 50;
const SCALARS: ReadonlySet<string> = new Set(['string', 'number', 'integer', 'boolean']);
// Words that mark a field as an address, an identity or a credential (S17).
const FORBIDDEN_WORDS = new Set([
  'url', 'urls', 'uri', 'uris', 'href', 'link', 'links', 'endpoint', 'endpoints', 'host', 'hostname', 'domain', 'webhook', 'callback', 'redirect',
  'uid', 'uids', 'user', 'users', 'userid', 'username', 'owner', 'account', 'email', 'mail', 'login', 'principal',
  'password', 'passwd', 'pwd', 'secret', 'secrets', 'token', 'tokens', 'credential', 'credentials', 'auth', 'authorization',
  'apikey', 'key', 'keys', 'cookie', 'session', 'bearer', 'cert', 'certificate', 'jwt',
]);
const FORBIDDEN_FORMATS = new Set(['uri', 'url', 'uri-reference', 'iri', 'iri-reference', 'uri-template', 'email', 'idn-email', 'hostname', 'idn-hostname', 'ipv4', 'ipv6']);
const URL_LIKE = /(^[a-z][a-z0-9+.-]*:\/\/)|(^\/\/)|(:\/\/)|(^www\.)/i;

function fieldWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

export function isForbiddenConfigField(name: string): boolean {
  const words = fieldWords(name);
  if (words.some((w) => FORBIDDEN_WORDS.has(w))) return true;
  const joined = words.join('');
  return /(apikey|accesstoken|privatekey|clientsecret|userid|username)/.test(joined);
}

function nonNegative(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

/** Accepts a flat object schema of scalars (or lists of scalars) with no address, identity or credential fields. */
export function compileConfigSchema(schema: unknown): { ok: true; schema: ConfigSchema } | { ok: false; error: string } {
  if (schema === undefined || schema === null) return { ok: true, schema: { fields: {}, required: [] } };
  if (!isPlainObject(schema)) return { ok: false, error: 'The config schema must be an object schema' };
  if (schema['type'] !== undefined && schema['type'] !== 'object') return { ok: false, error: 'The config schema must have type "object"' };
  const props = schema['properties'] ?? {};
  if (!isPlainObject(props)) return { ok: false, error: 'The config schema properties must be an object' };
  const names = Object.keys(props);
  if (names.length > MAX_CONFIG_FIELDS) return { ok: false, error: `At most ${MAX_CONFIG_FIELDS} config fields` };
  const fields: Record<string, ConfigField> = {};
  for (const name of names) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name)) return { ok: false, error: `Config field "${name.slice(0, 64)}" has an unusable name` };
    if (isForbiddenConfigField(name)) return { ok: false, error: `Config field "${name}" looks like an address, user id or credential, which a provider may not ask for` };
    const prop = props[name];
    if (!isPlainObject(prop)) return { ok: false, error: `Config field "${name}" needs a schema` };
    if (typeof prop['format'] === 'string' && FORBIDDEN_FORMATS.has(prop['format'])) return { ok: false, error: `Config field "${name}" has a format that is not allowed` };
    const type = prop['type'];
    let field: ConfigField;
    if (typeof type === 'string' && SCALARS.has(type)) {
      field = { type: type as ScalarType, maxLength: Math.min(nonNegative(prop['maxLength']) ?? MAX_CONFIG_STRING, MAX_CONFIG_STRING), maxItems: 0 };
    } else if (type === 'array' && isPlainObject(prop['items']) && typeof prop['items']['type'] === 'string' && SCALARS.has(prop['items']['type'])) {
      const items = prop['items'];
      if (typeof items['format'] === 'string' && FORBIDDEN_FORMATS.has(items['format'])) return { ok: false, error: `Config field "${name}" has a format that is not allowed` };
      field = {
        type: 'array',
        itemType: items['type'] as ScalarType,
        maxLength: Math.min(nonNegative(items['maxLength']) ?? MAX_CONFIG_STRING, MAX_CONFIG_STRING),
        maxItems: Math.min(nonNegative(prop['maxItems']) ?? MAX_CONFIG_ITEMS, MAX_CONFIG_ITEMS),
      };
      if (Array.isArray(items['enum'])) field.enum = items['enum'];
    } else {
      return { ok: false, error: `Config field "${name}" must be a string, number, integer, boolean or a list of those` };
    }
    if (field.type !== 'array' && Array.isArray(prop['enum'])) field.enum = prop['enum'];
    if (typeof prop['minimum'] === 'number') field.minimum = prop['minimum'];
    if (typeof prop['maximum'] === 'number') field.maximum = prop['maximum'];
    const minLength = nonNegative(prop['minLength']);
    if (minLength !== undefined) field.minLength = minLength;
    setOwn(fields, name, field);
  }
  const required = Array.isArray(schema['required']) ? schema['required'].filter((r): r is string => typeof r === 'string') : [];
  for (const r of required) if (!Object.hasOwn(fields, r)) return { ok: false, error: `Required config field "${r}" is not declared` };
  return { ok: true, schema: { fields, required } };
}

function checkScalar(field: ConfigField, type: ScalarType, value: unknown): string | null {
  if (type === 'boolean' && typeof value !== 'boolean') return 'Must be true or false';
  if ((type === 'number' || type === 'integer') && (typeof value !== 'number' || !Number.isFinite(value))) return 'Must be a number';
  if (type === 'integer' && !Number.isInteger(value)) return 'Must be a whole number';
  if (type === 'string') {
    if (typeof value !== 'string') return 'Must be a text';
    if (value.length > field.maxLength) return `At most ${field.maxLength} characters`;
    if (field.minLength !== undefined && value.length < field.minLength) return `At least ${field.minLength} characters`;
    if (URL_LIKE.test(value)) return 'Addresses are not allowed in a tool configuration';
    if (/[\u0000-\u001f]/.test(value)) return 'No control characters';
  }
  if (typeof value === 'number') {
    if (field.minimum !== undefined && value < field.minimum) return `At least ${field.minimum}`;
    if (field.maximum !== undefined && value > field.maximum) return `At most ${field.maximum}`;
  }
  if (field.enum !== undefined && !field.enum.some((e) => e === value)) return 'Not one of the allowed values';
  return null;
}

export function validateConfigAgainst(schema: ConfigSchema, config: Record<string, unknown>): ConfigValidation {
  const errors: Record<string, string> = {};
  const out: Record<string, unknown> = {};
  if (!isPlainObject(config)) return { ok: false, errors: { config: 'Must be an object' } };
  for (const [key, value] of Object.entries(config)) {
    const field = Object.hasOwn(schema.fields, key) ? schema.fields[key] : undefined;
    if (field === undefined) {
      setOwn(errors, key, Object.keys(schema.fields).length === 0 ? 'This tool takes no configuration' : 'Unknown config field');
      continue;
    }
    if (field.type === 'array') {
      if (!Array.isArray(value)) setOwn(errors, key, 'Must be a list');
      else if (value.length > field.maxItems) setOwn(errors, key, `At most ${field.maxItems} entries`);
      else {
        const problem = value.map((v) => checkScalar(field, field.itemType ?? 'string', v)).find((p) => p !== null);
        if (problem) setOwn(errors, key, problem);
        else setOwn(out, key, [...value]);
      }
      continue;
    }
    const problem = checkScalar(field, field.type, value);
    if (problem) setOwn(errors, key, problem);
    else setOwn(out, key, value);
  }
  for (const r of schema.required) if (!Object.hasOwn(config, r) && !Object.hasOwn(errors, r)) setOwn(errors, r, 'Required');
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, config: out };
}

// --- the provider ----------------------------------------------------------

function firstLine(text: string, max = 200): string {
  const line = (text.split(/\r?\n/)[0] ?? '').trim();
  return line.length > max ? line.slice(0, max - 3) + '...' : line;
}

function settingOf(server: McpServer, name: string, approved: boolean): McpToolPolicyName | null {
  const set = Object.hasOwn(server.toolPolicies, name) ? server.toolPolicies[name]?.policy : undefined;
  if (set !== undefined) return set;
  // Approved without an explicit choice: not read-only, writes confirmed (S17).
  return approved ? 'write' : null;
}

export interface McpProviderOptions {
  server: McpServer;
  store: McpServerStore;
  logger: Logger;
  fetch?: FetchLike;
  now?: () => number;
  /** Timeouts and cache settings of the connection. */
  connection?: Pick<McpConnectionOptions, 'listTtlMs' | 'callTimeoutMs' | 'connectTimeoutMs' | 'retryBackoffMs'>;
  /** Called when the server announces a changed tool list (new or changed tools then await approval). */
  onToolsChanged?: (provider: McpProvider) => void;
  /** Where calls that need the user's confirmation wait (S7). Without it, such calls are refused. */
  confirmations?: McpConfirmations | null;
  /** Whether the turn already holds content the invoker did not type (S6); defaults to the turn's taint. */
  isTainted?: (ctx: InvocationContext) => boolean;
  /** Agent profiles: without them, agent-mode calls of a server with an agentCredential are refused (fail closed). */
  agentProfiles?: McpAgentProfiles | null;
}

function ruleOf(server: McpServer, tool: ListedTool): EffectiveToolRule {
  return effectiveToolRule(settingOf(server, tool.name, true) ?? 'write', tool);
}

export class McpProvider implements ToolProvider, ConfirmationExecutor {
  readonly id: string;
  readonly serverId: string;
  readonly #store: McpServerStore;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #connection: McpConnection;
  readonly #isTainted: (ctx: InvocationContext) => boolean;
  #confirmations: McpConfirmations | null;
  #agentProfiles: McpAgentProfiles | null;
  #server: McpServer;
  #listed: ListedTool[] | null = null;
  #reachable: boolean | null = null;

  constructor(options: McpProviderOptions) {
    this.#server = options.server;
    this.serverId = options.server.id;
    this.id = `mcp:${options.server.id}`;
    this.#store = options.store;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#confirmations = options.confirmations ?? null;
    this.#agentProfiles = options.agentProfiles ?? null;
    this.#isTainted = options.isTainted ?? isTurnTainted;
    const serverId = options.server.id;
    this.#connection = new McpConnection({
      ...options.connection,
      name: options.server.name,
      url: options.server.url,
      getHeaders: () => this.#store.headers(serverId),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      logger: options.logger,
      now: this.#now,
      onToolsChanged: () => {
        this.#logger.info({ provider: this.id }, 'MCP server changed its tool list');
        options.onToolsChanged?.(this);
      },
    });
  }

  get server(): McpServer {
    return this.#server;
  }

  get connection(): McpConnection {
    return this.#connection;
  }

  /** Takes the latest admin settings (policies, approval, enabled). */
  setServer(server: McpServer): void {
    if (server.id === this.serverId) this.#server = server;
  }

  /** Calls that need the user's confirmation are stored here; until set, they are refused. */
  useConfirmations(confirmations: McpConfirmations | null): void {
    this.#confirmations = confirmations;
  }

  /** Agent-mode credentials and the re-check of confirmed agent-mode calls. */
  useAgentProfiles(agentProfiles: McpAgentProfiles | null): void {
    this.#agentProfiles = agentProfiles;
  }

  get confirms(): boolean {
    return this.#confirmations !== null;
  }

  async getTools(ctx: InvocationContext | null): Promise<ToolDefinition[]> {
    const server = await this.#refresh();
    if (server === null || !server.enabled) return [];
    const listedAt = this.#connection.status().listedAt;
    const tools = await this.#list();
    if (tools === null) return [];
    // For a turn, a cached listing is not proof of life: a server that went down offers nothing.
    if (ctx !== null && this.#connection.status().listedAt === listedAt && !(await this.#alive())) return [];
    const defs: ToolDefinition[] = [];
    for (const tool of tools) {
      const approved = server.approvedTools[tool.name] === toolHash(tool);
      if (!approved) continue;
      const policy = ruleOf(server, tool).policy;
      if (policy === null) continue;
      const def: ToolDefinition = {
        name: tool.name,
        description: tool.description,
        schema: tool.inputSchema,
        policy,
        label: tool.title ?? tool.annotations.title ?? tool.name,
        summary: firstLine(tool.description),
      };
      if (tool.meta['requiresUser'] === true) def.requiresUser = true;
      defs.push(def);
    }
    return defs;
  }

  providesTool(name: string): boolean {
    return this.#knownNames().has(name);
  }

  getToolMetadata(): Record<string, McpToolMetadata> {
    const out: Record<string, McpToolMetadata> = {};
    const listed = new Map((this.#listed ?? []).map((t) => [t.name, t]));
    const pending = new Set(this.#pending());
    for (const name of this.#knownNames()) {
      const tool = listed.get(name);
      setOwn(out, name, {
        label: tool?.title ?? tool?.annotations.title ?? name,
        summary: tool ? firstLine(tool.description) : '',
        family: this.#server.name,
        pendingApproval: pending.has(name),
      });
    }
    return out;
  }

  validateConfig(name: string, config: Record<string, unknown>): ConfigValidation {
    const tool = (this.#listed ?? []).find((t) => t.name === name);
    const schema = compileConfigSchema(this.#server.kind === 'companion' ? tool?.meta['configSchema'] : undefined);
    if (!schema.ok) return { ok: false, errors: { config: schema.error } };
    return validateConfigAgainst(schema.schema, config);
  }

  async executeTool(name: string, args: Record<string, unknown>, config: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    const server = await this.#refresh();
    if (server === null || !server.enabled) return errorResult(`Tool not available: the tool server ${this.#server.name} is disabled.`);
    const tools = await this.#list();
    if (tools === null) return errorResult(`ERROR: ${unreachableMessage(server.name)}`);
    const tool = tools.find((t) => t.name === name);
    if (tool === undefined) return errorResult(`Tool not available: the tool server ${server.name} no longer offers ${name}.`);
    const hash = toolHash(tool);
    if (server.approvedTools[name] !== hash) {
      return errorResult(`Tool not available: ${name} changed on the tool server ${server.name} and stays off until an admin approves it again.`);
    }
    const rule = ruleOf(server, tool);
    if (rule.policy === null) return errorResult(`Tool not available: an admin turned ${name} off.`);

    const checked = this.validateConfig(name, config);
    if (!checked.ok) {
      const detail = Object.entries(checked.errors).map(([k, v]) => `${k}: ${v}`).join('; ');
      return errorResult(`ERROR: The configuration of ${name} is not valid (${detail}). An admin or the bot owner must fix it.`);
    }

    // The assignment's confirmation policy, as the server resolved it for this call (never from arguments):
    // 'never' forbids what would need a confirmation by nature, 'always' confirms every change.
    const assignment = ctx.execution?.confirmation ?? DEFAULT_CONFIRMATION_POLICY;
    if (assignment === 'never' && (rule.declared || rule.policy.destructive)) {
      return markOutcome(errorResult(`ERROR: This bot may not run ${name}: its settings forbid destructive actions. Nothing was sent to the tool server ${server.name}.`), 'refused');
    }
    const reason = this.#confirmationReason(server.name, name, rule, rule.policy, assignment, ctx);
    if (reason !== null) {
      const binding: McpCallBinding = { serverId: server.id, toolHash: hash, config: checked.config, threadId: ctx.threadId, messageId: ctx.messageId };
      return this.#requestConfirmation(ctx, name, args, binding, reason);
    }
    return this.#send(server, name, args, checked.config, ctx);
  }

  /**
   * Why the call is not sent but waits for the user (S6, S7), or null: a declared, destructive or admin-set
   * confirmation always, every change where the assignment says so, any other write once untrusted content
   * entered the turn.
   */
  #confirmationReason(serverName: string, name: string, rule: EffectiveToolRule, policy: ToolPolicy, assignment: ConfirmationPolicy, ctx: InvocationContext): string | null {
    if (rule.declared) return `the tool server ${serverName} declares that ${name} needs your confirmation`;
    if (rule.alwaysConfirm) return policy.destructive ? `an admin marked ${name} as destructive` : `an admin's policy asks for confirmation of ${name}`;
    if (policy.readOnly) return null;
    if (assignment === 'always') return "this bot's settings ask for confirmation of every change";
    if (this.#isTainted(ctx)) return 'this conversation turn contains content you did not type (tool results or other people\'s messages)';
    return null;
  }

  /**
   * Runs a confirmed call (ConfirmationExecutor): exactly the stored arguments, once, as the
   * confirming user, with a freshly signed context, and only while the server is enabled and
   * the tool is unchanged, approved and on.
   */
  async executeConfirmed(action: StoredAction, user: ActingUser): Promise<ToolResult> {
    const binding = bindingOf(action.binding);
    if (binding === null || binding.serverId !== this.serverId) return errorResult('ERROR: The stored call does not belong to this tool server. Nothing was done.');
    if (user.uid !== action.userUid) return errorResult('ERROR: Only the user who asked can confirm this.');
    const server = await this.#refresh();
    if (server === null) return errorResult('ERROR: The tool server is no longer registered. Nothing was done.');
    if (!server.enabled) return errorResult(`ERROR: The tool server ${server.name} was disabled. Nothing was done.`);
    let tools: ListedTool[];
    try {
      // Fresh, not cached: the tool must be the one the user was asked about.
      tools = await this.#connection.listTools({ force: true });
      this.#listed = tools;
      this.#reachable = true;
    } catch {
      this.#reachable = false;
      return errorResult(`ERROR: ${unreachableMessage(server.name)} Nothing was done.`);
    }
    const tool = tools.find((t) => t.name === action.tool);
    if (tool === undefined) return errorResult(`ERROR: The tool server ${server.name} no longer offers ${action.tool}. Nothing was done.`);
    const hash = toolHash(tool);
    if (hash !== binding.toolHash || server.approvedTools[tool.name] !== hash) {
      this.#logger.warn({ provider: this.id, tool: tool.name }, 'confirmed MCP call refused: the tool changed since the confirmation was requested');
      return errorResult(`ERROR: ${tool.name} changed on the tool server ${server.name} since you were asked, so the confirmed call was refused. Nothing was done.`);
    }
    if (ruleOf(server, tool).policy === null) return errorResult(`ERROR: An admin turned ${tool.name} off. Nothing was done.`);
    const checked = this.validateConfig(tool.name, binding.config);
    if (!checked.ok) return errorResult(`ERROR: The configuration of ${tool.name} is no longer valid. Nothing was done.`);
    // The call runs as the identity it was requested under, decided again now (profile, grant, account; S13).
    let acting = user;
    let execution: ExecutionInfo | null = null;
    const gate = this.#agentProfiles?.execution ?? null;
    if (gate !== null) {
      const resolved = await gate.resolveConfirmed(action, user);
      if (!resolved.ok) {
        await this.#auditConfirmed(action, user, null, action.execution?.['mode'] === 'agent' ? 'agent' : 'user', null, 'refused', resolved.message);
        return errorResult(`ERROR: Not allowed any more: ${resolved.message}. Nothing was done.`);
      }
      acting = resolved.user;
      execution = resolved.execution;
    } else if (action.execution?.['mode'] === 'agent') {
      return errorResult('ERROR: This call was requested through an agent profile, which cannot be checked now. Nothing was done.');
    }
    const base = createInvocationContext({
      user,
      actorKind: 'user',
      botId: action.botId,
      roomToken: action.roomToken,
      threadId: binding.threadId,
      messageId: binding.messageId,
    });
    const ctx = execution === null ? base : deriveInvocationContext(base, { user: acting, execution });
    const result = await this.#send(server, tool.name, action.args, checked.config, ctx);
    if (gate !== null) {
      const detail = result.isError ? String((result.content[0] as { text?: unknown } | undefined)?.text ?? '') : '';
      await this.#auditConfirmed(action, user, acting, execution?.mode ?? 'user', execution?.profileId ?? null, result.isError ? 'error' : 'ok', detail);
    }
    return result;
  }

  async #auditConfirmed(action: StoredAction, invoker: ActingUser, acting: ActingUser | null, mode: 'user' | 'agent', profileId: string | null, outcome: 'ok' | 'error' | 'refused', detail: string): Promise<void> {
    await this.#agentProfiles?.execution.record({
      mode,
      profileId,
      invokerUid: invoker.uid,
      actingUid: acting?.uid ?? null,
      botId: action.botId,
      roomToken: action.roomToken,
      tool: action.tool,
      args: action.args,
      outcome,
      detail: `confirmed${detail ? `: ${detail}` : ''}`,
    });
  }

  async #send(server: McpServer, name: string, args: Record<string, unknown>, config: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    const meta: Record<string, unknown> = {};
    if (server.kind === 'companion') {
      const token = await this.#contextToken(ctx);
      if (token === null) return errorResult(`ERROR: The tool server ${server.name} has no signing key. An admin must register it again.`);
      meta[CONTEXT_META_KEY] = token;
      if (Object.keys(config).length > 0) meta[CONFIG_META_KEY] = config;
    }
    const credential = await this.#callCredential(server, ctx);
    if (!credential.ok) return errorResult(credential.message);
    const result = await this.#connection.callTool(name, args, { meta, ...(ctx.signal ? { signal: ctx.signal } : {}), ...credential.options });
    if (result.isError) this.#logger.info({ provider: this.id, tool: name }, 'MCP tool returned an error result');
    return result;
  }

  /**
   * In agent mode on a server that names a profile credential: an authorizer that opens it for
   * this call's tools/call request only (S20: the value never lands on a long-lived object). A
   * profile without it is refused before anything is sent. In user mode nothing is added.
   */
  async #callCredential(server: McpServer, ctx: InvocationContext): Promise<{ ok: true; options: Pick<McpCallOptions, 'authorize' | 'unauthorizedMessage'> } | { ok: false; message: string }> {
    const name = server.agentCredential;
    if (name === null) return { ok: true, options: {} };
    const execution = ctx.execution;
    if (execution?.mode !== 'agent') {
      return {
        ok: true,
        options: { unauthorizedMessage: `ERROR: The tool server ${server.name} refused the request (HTTP 401/403): it accepts this tool only when the bot acts through an agent profile that holds its credential. Nothing was done.` },
      };
    }
    const profiles = this.#agentProfiles?.credentials ?? null;
    const profileId = execution.profileId;
    if (profiles === null || profileId === null) return { ok: false, message: `ERROR: The credential of the agent profile for the tool server ${server.name} cannot be read now. Nothing was sent.` };
    const names = await profiles.credentialNames(profileId).catch(() => null);
    if (names === null) return { ok: false, message: `ERROR: The credential of the agent profile for the tool server ${server.name} cannot be read now. Nothing was sent.` };
    if (!names.includes(name)) {
      return { ok: false, message: `ERROR: The tool server ${server.name} needs the agent profile credential "${name}", which this bot's agent profile does not have. An admin must add it to the profile. Nothing was sent.` };
    }
    return {
      ok: true,
      options: {
        authorize: (send) => profiles.withProfileCredential(profileId, name, (value) => send({ Authorization: `Bearer ${value}` })),
        unauthorizedMessage: `ERROR: The tool server ${server.name} refused the agent profile's credential "${name}". An admin must check it. Nothing was done.`,
      },
    };
  }

  async #requestConfirmation(ctx: InvocationContext, name: string, args: Record<string, unknown>, binding: McpCallBinding, reason: string): Promise<ToolResult> {
    const confirmations = this.#confirmations;
    // The invoker confirms, also in agent mode (where the call's user is the profile's account).
    const turn = turnOf(ctx);
    const user = turn.user;
    const execution = ctx.execution;
    if (confirmations === null || user === null || turn.actorKind !== 'user' || turn.roomToken === null) {
      return errorResult(`ERROR: ${name} needs the confirmation of a signed-in user (${reason}), which is only possible in a Talk conversation. Nothing was done.`);
    }
    const description = describeCall(name, this.#server.name, args);
    const requested = await confirmations
      .requestConfirmation(turn, {
        providerId: this.id,
        tool: name,
        args,
        binding: { ...binding },
        description,
        reason,
        ...(execution ? { execution: { mode: execution.mode, profileId: execution.profileId, scope: execution.scope.toJSON(), confirmation: execution.confirmation } } : {}),
      })
      .catch((err: unknown) => {
        this.#logger.warn({ err, provider: this.id, tool: name }, 'a confirmation could not be recorded');
        return null;
      });
    if (requested === null) return errorResult('ERROR: The confirmation could not be recorded, so nothing will happen.');
    const delivered = await confirmations.deliver(turn, requested);
    if (!delivered.posted && !delivered.notified) {
      await confirmations.cancel(requested.id);
      return errorResult('ERROR: The confirmation request could not be sent to the user, so nothing will happen. Try again later.');
    }
    // The code stays out of the model's context: only the user's own reply can confirm. The audit records the call as held.
    return markOutcome(
      textResult(
        `NOT DONE YET. ${name} was not sent to the tool server. The server asked ${user.uid} to confirm it (${reason}). ` +
          'It runs only if they answer the server\'s confirmation message in this conversation within 10 minutes. ' +
          'Do not say it is done; tell the user to confirm or cancel as the server\'s message explains.',
      ),
      'confirmation-requested',
    );
  }

  /** The listed tools with their approval state and suggested policies, for the admin. */
  async review(): Promise<ToolReview> {
    const server = (await this.#refresh()) ?? this.#server;
    const tools = await this.#connection.listTools({ force: true });
    this.#listed = tools;
    this.#reachable = true;
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

  /**
   * Pins the tool list the admin reviewed (identified by its hash) with their policies.
   * Tools without an explicit policy get 'write' (not read-only, writes confirmed).
   * Fails when the server's list changed since the review.
   */
  async approve(expectedHash: string, policies: Record<string, McpToolPolicyName | McpToolPolicySetting>): Promise<McpServer> {
    const server = (await this.#refresh()) ?? this.#server;
    const tools = await this.#connection.listTools({ force: true });
    this.#listed = tools;
    const hash = toolListHash(tools);
    if (hash !== expectedHash) throw new McpApprovalConflictError('The tool list changed since it was reviewed; review it again');
    const approvedTools: Record<string, string> = {};
    const toolPolicies: Record<string, McpToolPolicySetting> = {};
    for (const tool of tools) {
      setOwn(approvedTools, tool.name, toolHash(tool));
      const given = isPlainObject(policies) && Object.hasOwn(policies, tool.name) ? policies[tool.name] : undefined;
      const chosen = typeof given === 'string' ? given : given?.policy;
      const policy = chosen ?? (Object.hasOwn(server.toolPolicies, tool.name) ? server.toolPolicies[tool.name]?.policy : undefined) ?? 'write';
      setOwn(toolPolicies, tool.name, { policy });
    }
    const updated = await this.#store.approve(server.id, { approvedTools, approvedToolsHash: hash, toolPolicies });
    if (updated === null) throw new Error('The tool server no longer exists');
    this.#server = updated;
    return updated;
  }

  status(): McpProviderStatus {
    const connection = this.#connection.status();
    return {
      providerId: this.id,
      serverId: this.serverId,
      name: this.#server.name,
      kind: this.#server.kind,
      enabled: this.#server.enabled,
      reachable: this.#reachable,
      lastError: connection.lastError,
      pendingApproval: this.#pending(),
      approvedToolsHash: this.#server.approvedToolsHash,
      currentToolsHash: this.#listed === null ? null : toolListHash(this.#listed),
    };
  }

  async close(): Promise<void> {
    await this.#connection.close();
  }

  /** A ping over the live session (reconnecting once); false when the server is down. */
  async #alive(): Promise<boolean> {
    const alive = await this.#connection.ping();
    if (!alive) this.#reachable = false;
    return alive;
  }

  async #refresh(): Promise<McpServer | null> {
    const server = await this.#store.get(this.serverId);
    if (server !== null) this.#server = server;
    return server;
  }

  /** The current listing, or null when the server cannot be reached. */
  async #list(): Promise<ListedTool[] | null> {
    try {
      const tools = await this.#connection.listTools();
      this.#listed = tools;
      this.#reachable = true;
      return tools;
    } catch (error) {
      this.#reachable = false;
      if (!(error instanceof McpUnreachableError)) this.#logger.warn({ provider: this.id, error: describeError(error) }, 'MCP tools/list failed');
      return null;
    }
  }

  #knownNames(): Set<string> {
    const names = new Set<string>(Object.keys(this.#server.approvedTools));
    for (const name of Object.keys(this.#server.toolPolicies)) names.add(name);
    for (const tool of this.#listed ?? []) names.add(tool.name);
    return names;
  }

  #pending(): string[] {
    return (this.#listed ?? []).filter((t) => this.#server.approvedTools[t.name] !== toolHash(t)).map((t) => t.name);
  }

  async #contextToken(ctx: InvocationContext): Promise<string | null> {
    const key = await this.#store.contextKey(this.serverId);
    if (key === null || key.length < 32) return null;
    const now = Math.floor(this.#now() / 1000);
    const claims: Omit<InvocationClaims, 'iss' | 'aud' | 'iat' | 'exp' | 'jti'> = {
      bot_id: ctx.botId,
      room_token: ctx.roomToken,
      thread_id: ctx.threadId,
      message_id: ctx.messageId,
      uid: ctx.user?.uid ?? null,
      actor_kind: ctx.actorKind,
    };
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(CONTEXT_ISSUER)
      .setAudience(this.id)
      .setIssuedAt(now)
      .setExpirationTime(now + CONTEXT_TOKEN_TTL_SECONDS)
      .setJti(randomUUID())
      .sign(key);
  }
}

export interface McpProviderManagerOptions {
  registry: ToolRegistry;
  store: McpServerStore;
  logger: Logger;
  fetch?: FetchLike;
  now?: () => number;
  connection?: McpProviderOptions['connection'];
  onToolsChanged?: McpProviderOptions['onToolsChanged'];
  isTainted?: McpProviderOptions['isTainted'];
}

/**
 * Keeps one registered provider per stored server; call sync() after every admin change.
 * Once it has the confirmation service, its providers ask for confirmations themselves, so the
 * agent lets their calls through (it is then a SelfConfirmingProvider).
 */
export class McpProviderManager {
  readonly #options: McpProviderManagerOptions;
  readonly #providers = new Map<string, McpProvider>();
  #confirmations: McpConfirmations | null = null;
  #agentProfiles: McpAgentProfiles | null = null;
  /** Server ids with a registered executor; it outlives a provider rebuilt for a new URL. */
  readonly #executors = new Set<string>();

  constructor(options: McpProviderManagerOptions) {
    this.#options = options;
  }

  provider(serverId: string): McpProvider | undefined {
    return this.#providers.get(serverId);
  }

  /** Lets every provider, now and later, store calls that wait for a confirmation and run them once confirmed. */
  useConfirmations(confirmations: McpConfirmations): void {
    this.#confirmations = confirmations;
    for (const [id, provider] of this.#providers) {
      provider.useConfirmations(confirmations);
      this.#registerExecutor(id);
    }
  }

  /** Lets every provider, now and later, present agent profile credentials and re-check confirmed agent-mode calls. */
  useAgentProfiles(agentProfiles: McpAgentProfiles): void {
    this.#agentProfiles = agentProfiles;
    for (const provider of this.#providers.values()) provider.useAgentProfiles(agentProfiles);
  }

  /** Whether one of the providers runs `name` with its own confirmation workflow. */
  providesTool(name: string): boolean {
    if (this.#confirmations === null) return false;
    for (const provider of this.#providers.values()) if (provider.confirms && provider.providesTool(name)) return true;
    return false;
  }

  async sync(): Promise<void> {
    const servers = await this.#options.store.list();
    const seen = new Set<string>();
    for (const server of servers) {
      seen.add(server.id);
      const existing = this.#providers.get(server.id);
      if (existing && existing.server.url === server.url && existing.server.name === server.name) {
        existing.setServer(server);
        continue;
      }
      if (existing) await this.#remove(server.id, existing);
      const provider = new McpProvider({
        server,
        store: this.#options.store,
        logger: this.#options.logger,
        ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
        ...(this.#options.now ? { now: this.#options.now } : {}),
        ...(this.#options.connection ? { connection: this.#options.connection } : {}),
        ...(this.#options.onToolsChanged ? { onToolsChanged: this.#options.onToolsChanged } : {}),
        ...(this.#options.isTainted ? { isTainted: this.#options.isTainted } : {}),
        confirmations: this.#confirmations,
        agentProfiles: this.#agentProfiles,
      });
      this.#options.registry.register(provider, TIER);
      this.#providers.set(server.id, provider);
      this.#registerExecutor(server.id);
    }
    for (const [id, provider] of [...this.#providers]) if (!seen.has(id)) await this.#remove(id, provider);
  }

  async close(): Promise<void> {
    for (const [id, provider] of [...this.#providers]) await this.#remove(id, provider);
  }

  /** One executor per server id, delegating to its current provider (the service keeps executors for good). */
  #registerExecutor(serverId: string): void {
    if (this.#confirmations === null || this.#executors.has(serverId)) return;
    this.#executors.add(serverId);
    this.#confirmations.registerExecutor({
      id: `mcp:${serverId}`,
      executeConfirmed: async (action, user) => {
        const provider = this.#providers.get(serverId);
        if (provider === undefined) return errorResult('ERROR: The tool server that prepared this call is no longer registered. Nothing was done.');
        return provider.executeConfirmed(action, user);
      },
    });
  }

  async #remove(id: string, provider: McpProvider): Promise<void> {
    this.#options.registry.unregister(provider.id);
    this.#providers.delete(id);
    await provider.close();
  }
}
