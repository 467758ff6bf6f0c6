// One registered McpProvider per stored MCP server or companion.
import type { Logger } from '../log/logger.ts';
import { errorResult } from '../tools/tool-provider.ts';
import type { ProviderTier, ToolRegistry } from '../tools/tool-registry.ts';
import { type FetchLike } from './mcp-connection.ts';
import type { McpServerStore } from './mcp-server-store.ts';
import { McpProvider, type McpProviderOptions } from './mcp-provider.ts';
import type { McpAgentProfiles, McpConfirmations } from './mcp-provider-types.ts';

const TIER: ProviderTier = 'external';

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
