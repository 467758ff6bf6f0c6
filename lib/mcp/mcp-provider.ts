// A ToolProvider per registered MCP server or companion: admin-set policies, pinned tool hashes, signed context.

import { isTurnTainted } from '../tools/turn-taints.ts';
import type { ConfirmationExecutor, StoredAction } from '../tools/confirmable.ts';
import type { Logger } from '../log/logger.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { setOwn } from '../tools/json-schema.ts';
import { DEFAULT_CONFIRMATION_POLICY, type ConfirmationPolicy } from '../tools/resource-scope.ts';
import { type ToolPolicy } from '../tools/tool-policy.ts';
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
  type ToolProvider,
  type ToolResult,
} from '../tools/tool-provider.ts';
import {
  McpConnection,
  McpUnreachableError,
  describeError,
  unreachableMessage,
  type FetchLike,
  type ListedTool,
  type McpCallOptions,
  type McpConnectionOptions,
} from './mcp-connection.ts';
import { bindingOf, describeCall, type McpCallBinding } from './mcp-confirmation.ts';
import type { McpServer, McpServerStore, McpToolPolicyName, McpToolPolicySetting } from './mcp-server-store.ts';
import { effectiveToolRule, policyForSetting, REQUIRES_CONFIRMATION_META, type EffectiveToolRule } from './mcp-tool-rules.ts';
import {
  CONFIG_META_KEY,
  CONTEXT_META_KEY,
  McpApprovalConflictError,
  type McpAgentProfiles,
  type McpConfirmations,
  type McpProviderStatus,
  type McpToolMetadata,
  type ToolReview,
} from './mcp-provider-types.ts';
import { approvalOf, reviewOf, settingOf, toolHash, toolListHash } from './mcp-tool-review.ts';
import { signContextToken } from './mcp-context-token.ts';
import { compileConfigSchema, validateConfigAgainst } from './mcp-config-schema.ts';

export { policyForSetting, REQUIRES_CONFIRMATION_META };

// --- the provider ----------------------------------------------------------

function firstLine(text: string, max = 200): string {
  const line = (text.split(/\r?\n/)[0] ?? '').trim();
  return line.length > max ? line.slice(0, max - 3) + '...' : line;
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
      const detail = Object.entries(checked.errors)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ');
      return errorResult(`ERROR: The configuration of ${name} is not valid (${detail}). An admin or the bot owner must fix it.`);
    }

    // The assignment's confirmation policy, as the server resolved it for this call (never from arguments):
    // 'never' forbids what would need a confirmation by nature, 'always' confirms every change.
    const assignment = ctx.execution?.confirmation ?? DEFAULT_CONFIRMATION_POLICY;
    if (assignment === 'never' && (rule.declared || rule.policy.destructive)) {
      return markOutcome(
        errorResult(`ERROR: This bot may not run ${name}: its settings forbid destructive actions. Nothing was sent to the tool server ${server.name}.`),
        'refused',
      );
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
  #confirmationReason(
    serverName: string,
    name: string,
    rule: EffectiveToolRule,
    policy: ToolPolicy,
    assignment: ConfirmationPolicy,
    ctx: InvocationContext,
  ): string | null {
    if (rule.declared) return `the tool server ${serverName} declares that ${name} needs your confirmation`;
    if (rule.alwaysConfirm) return policy.destructive ? `an admin marked ${name} as destructive` : `an admin's policy asks for confirmation of ${name}`;
    if (policy.readOnly) return null;
    if (assignment === 'always') return "this bot's settings ask for confirmation of every change";
    if (this.#isTainted(ctx)) return "this conversation turn contains content you did not type (tool results or other people's messages)";
    return null;
  }

  /**
   * Runs a confirmed call (ConfirmationExecutor): exactly the stored arguments, once, as the
   * confirming user, with a freshly signed context, and only while the server is enabled and
   * the tool is unchanged, approved and on.
   */
  async executeConfirmed(action: StoredAction, user: ActingUser): Promise<ToolResult> {
    const binding = bindingOf(action.binding);
    if (binding === null || binding.serverId !== this.serverId)
      return errorResult('ERROR: The stored call does not belong to this tool server. Nothing was done.');
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
      return errorResult(
        `ERROR: ${tool.name} changed on the tool server ${server.name} since you were asked, so the confirmed call was refused. Nothing was done.`,
      );
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

  async #auditConfirmed(
    action: StoredAction,
    invoker: ActingUser,
    acting: ActingUser | null,
    mode: 'user' | 'agent',
    profileId: string | null,
    outcome: 'ok' | 'error' | 'refused',
    detail: string,
  ): Promise<void> {
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
  async #callCredential(
    server: McpServer,
    ctx: InvocationContext,
  ): Promise<{ ok: true; options: Pick<McpCallOptions, 'authorize' | 'unauthorizedMessage'> } | { ok: false; message: string }> {
    const name = server.agentCredential;
    if (name === null) return { ok: true, options: {} };
    const execution = ctx.execution;
    if (execution?.mode !== 'agent') {
      return {
        ok: true,
        options: {
          unauthorizedMessage: `ERROR: The tool server ${server.name} refused the request (HTTP 401/403): it accepts this tool only when the bot acts through an agent profile that holds its credential. Nothing was done.`,
        },
      };
    }
    const profiles = this.#agentProfiles?.credentials ?? null;
    const profileId = execution.profileId;
    if (profiles === null || profileId === null)
      return { ok: false, message: `ERROR: The credential of the agent profile for the tool server ${server.name} cannot be read now. Nothing was sent.` };
    const names = await profiles.credentialNames(profileId).catch(() => null);
    if (names === null)
      return { ok: false, message: `ERROR: The credential of the agent profile for the tool server ${server.name} cannot be read now. Nothing was sent.` };
    if (!names.includes(name)) {
      return {
        ok: false,
        message: `ERROR: The tool server ${server.name} needs the agent profile credential "${name}", which this bot's agent profile does not have. An admin must add it to the profile. Nothing was sent.`,
      };
    }
    return {
      ok: true,
      options: {
        authorize: (send) => profiles.withProfileCredential(profileId, name, (value) => send({ Authorization: `Bearer ${value}` })),
        unauthorizedMessage: `ERROR: The tool server ${server.name} refused the agent profile's credential "${name}". An admin must check it. Nothing was done.`,
      },
    };
  }

  async #requestConfirmation(
    ctx: InvocationContext,
    name: string,
    args: Record<string, unknown>,
    binding: McpCallBinding,
    reason: string,
  ): Promise<ToolResult> {
    const confirmations = this.#confirmations;
    // The invoker confirms, also in agent mode (where the call's user is the profile's account).
    const turn = turnOf(ctx);
    const user = turn.user;
    const execution = ctx.execution;
    if (confirmations === null || user === null || turn.actorKind !== 'user' || turn.roomToken === null) {
      return errorResult(
        `ERROR: ${name} needs the confirmation of a signed-in user (${reason}), which is only possible in a Talk conversation. Nothing was done.`,
      );
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
        ...(execution
          ? { execution: { mode: execution.mode, profileId: execution.profileId, scope: execution.scope.toJSON(), confirmation: execution.confirmation } }
          : {}),
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
          "It runs only if they answer the server's confirmation message in this conversation within 10 minutes. " +
          "Do not say it is done; tell the user to confirm or cancel as the server's message explains.",
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
    return reviewOf(server, tools);
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
    const { approvedTools, toolPolicies } = approvalOf(server, tools, policies);
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
    return signContextToken(key, this.id, ctx, this.#now());
  }
}
