import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import type { AppConfig } from './config/env.ts';
import { AdminCheck } from './appapi/admin-check.ts';
import { UserDirectory } from './users/user-directory.ts';
import { RECONCILE_INTERVAL_MS, UserReconciler } from './users/user-reconciler.ts';
import { UserStates } from './users/user-states.ts';
import { EnabledHandler, type Registrar } from './appapi/enabled-handler.ts';
import { InitRunner } from './appapi/init-runner.ts';
import { NextcloudLogForwarder } from './appapi/nextcloud-log.ts';
import { StatusReporter } from './appapi/status-reporter.ts';
import { AgentLoop } from './agent/agent-loop.ts';
import { loadAgentSettings } from './agent/agent-settings.ts';
import { GovernanceAccessPolicy, type BotAccessPolicy } from './bots/bot-access.ts';
import { BotConfigResolver, asReviewer } from './bots/bot-config.ts';
import { BotDeletion } from './bots/bot-deletion.ts';
import { DedicatedTalkBotService, mayHaveOwnIdentity } from './bots/dedicated-talk-bots.ts';
import { Governance, registryToolGate } from './bots/governance.ts';
import { MembershipService } from './bots/memberships.ts';
import { RoomBots } from './talk/room-bots.ts';
import { botsApiRoutes } from './server/routes/bots-api.ts';
import { openApiRoutes } from './server/openapi.ts';
import { apiDocument } from './server/api-specs.ts';
import { BotStore } from './bots/bot-store.ts';
import { createKnowledgeModule, type KnowledgeModule, type KnowledgeModuleOptions } from './knowledge/knowledge-module.ts';
import { RoomUploads } from './knowledge/room-uploads.ts';
import { wikiFileEventsRegistrar } from './wiki/wiki-file-events.ts';
import { createWikiModule, DEFAULT_SCAN_INTERVAL_MS, type WikiModule } from './wiki/wiki-module.ts';
import { knowledgeApiRoutes } from './server/routes/knowledge-api.ts';
import { ConversationMemory } from './conversation/memory.ts';
import { TurnRunner } from './pipeline/turn-runner.ts';
import { ChatClient } from './llm/chat-client.ts';
import { LlmSettingsService } from './llm/llm-settings.ts';
import { ModelCatalog } from './llm/model-catalog.ts';
import { createEgressFetch } from './egress/egress-fetch.ts';
import { EgressSettingsService } from './egress/egress-settings.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { McpProviderManager } from './mcp/mcp-provider-manager.ts';
import { McpServerStore } from './mcp/mcp-server-store.ts';
import { registerSecret } from './log/redact.ts';
import { NextcloudClient } from './nextcloud/client.ts';
import { MessageRouter } from './router/message-router.ts';
import { QueueProcessor, type QueueRunResult } from './ratelimit/queue-processor.ts';
import { observingRateLimits, observingStreamRateLimits } from './ratelimit/provider-headers.ts';
import type { RateGateOptions } from './ratelimit/rate-gate.ts';
import { RateLimiter } from './ratelimit/rate-limiter.ts';
import { RequestQueue } from './ratelimit/request-queue.ts';
import { OnboardingService } from './router/onboarding.ts';
import { createApp } from './server/app.ts';
import { adminSettingsRoutes } from './server/routes/admin-settings.ts';
import { lifecycleRoutes } from './server/routes/lifecycle.ts';
import { loadRateLimitSettings } from './ratelimit/rate-limit-settings.ts';
import { sessionInfoRoutes } from './server/routes/session-info.ts';
import { staticAssetRoutes } from './server/routes/static-assets.ts';
import { mcpAdminRoutes } from './server/routes/mcp-admin.ts';
import { adminPolicyRoutes } from './server/routes/admin-policy.ts';
import { LinkAllowList } from './replies/link-allow-list.ts';
import { toolsApiRoutes } from './server/routes/tools-api.ts';
import { rateLimitAdminRoutes } from './server/routes/ratelimit-admin.ts';
import { tracesApiRoutes } from './server/routes/traces-api.ts';
import { runtimeStatusRoutes } from './server/routes/runtime-status.ts';
import { wikiFileEventRoutes } from './server/routes/wiki-file-events.ts';
import { RuntimeMetrics } from './server/runtime-metrics.ts';
import { ProcessingThread } from './processing/processing-thread.ts';
import { startHousekeeping } from './processing/housekeeping.ts';
import type { Side } from './processing/roles.ts';
import { inboxDrained, startScaleOut, type ScaleOut } from './processing/scale-out.ts';
import { LeaderLock } from './storage/leader-lock.ts';
import { InboxLeases } from './intake/inbox-leases.ts';
import { ConfirmationService } from './confirmations/confirmation-service.ts';
import { isOwnReferenceId } from './confirmations/reference-ids.ts';
import { ReactionWatcher } from './confirmations/reaction-watcher.ts';
import { talkLanguageOf } from './l10n/talk-language.ts';
import { issueForStoredPrincipal } from './nextcloud/identity.ts';
import { collectiveFolderResolver } from './tools/collectives/collective-folder.ts';
import { CapabilityProbe } from './tools/first-party-capabilities.ts';
import { FirstPartyToolProvider, settingsToolPolicy } from './tools/first-party-provider.ts';
import { exemptSelfConfirming, type SelfConfirmingProvider } from './tools/confirmation-gate.ts';
import { isTurnTainted } from './tools/turn-taints.ts';
import { DEFAULT_AFFIRMATIVES, DEFAULT_NEGATIVES, parseConfirmationReply } from './confirmations/confirmation-reply.ts';
import { Router } from 'express';
import { Checkpointer } from './storage/checkpointer.ts';
import { openDatabase, type DatabaseHandle } from './storage/database.ts';
import { migrateToLatest } from './storage/migrate.ts';
import { SettingsStore } from './storage/settings-store.ts';
import { BotSender } from './replies/bot-sender.ts';
import { EventProcessor } from './pipeline/event-processor.ts';
import { Inbox, type HandedRow } from './intake/inbox.ts';
import { InboxWorker } from './pipeline/inbox-worker.ts';
import { MessageVerifier } from './talk/message-verifier.ts';
import { ReplyLog } from './replies/reply-log.ts';
import { RoomInfo } from './talk/room-info.ts';
import { RoutingIndex } from './talk/routing-index.ts';
import { sharedTalkBotRegistrar, SHARED_ROUTE, TalkIdentities } from './talk/talk-identities.ts';
import type { TalkSeams } from './pipeline/talk-seams.ts';
import { uiRegistrar } from './appapi/ui-registrar.ts';
import { AdminFormSync } from './appapi/admin-form-sync.ts';
import { adminForm, personalForm } from './appapi/settings-forms.ts';
import { settingsRegistrar } from './appapi/settings-registrar.ts';
import { WebhookListeners } from './appapi/webhook-listeners.ts';
import { ToolFamilyPreferences } from './appapi/tool-family-preferences.ts';
import { toolFamilyGate } from './bots/tool-family-gate.ts';
import { personalSettingsRoutes } from './server/routes/personal-settings.ts';
import { talkWebhookRoutes } from './intake/webhook-route.ts';
import { dedicatedWebhookRoutes } from './intake/dedicated-webhooks.ts';
import { IdentityGate } from './router/identity-gate.ts';
import { UserLanguages } from './users/user-languages.ts';
import { ToolAssignmentStore } from './tools/tool-assignments.ts';
import { ToolRegistry } from './tools/tool-registry.ts';
import { TraceStore } from './traces/trace-store.ts';
import { loadVaultKey, Vault } from './vault/vault.ts';
import { AccountCheck } from './agent-profiles/account-check.ts';
import { AgentProfileAssignments } from './agent-profiles/assignment-check.ts';
import { ExecutionResolver } from './agent-profiles/execution-resolver.ts';
import { AgentProfileStore } from './agent-profiles/profile-store.ts';
import { ToolAudit } from './agent-profiles/tool-audit.ts';
import { agentProfilesApiRoutes, DELEGATED_ADMIN_GROUPS_KEY } from './server/routes/agent-profiles-api.ts';

export interface Application {
  app: Express;
  config: AppConfig;
  logger: Logger;
  database: DatabaseHandle;
  nextcloud: NextcloudClient;
  vault: Vault;
  settings: SettingsStore;
  llmSettings: LlmSettingsService;
  /** The admin allow-list of private hosts the egress module may reach (S18). */
  egressSettings: EgressSettingsService;
  bots: BotStore;
  /** RAG sources, room documents and images, vision and speech; its job worker runs in the processing role. */
  knowledge: KnowledgeModule;
  /** Bot wikis: the four wiki tools (a core provider), root registry and index sync (scan in the processing role). */
  wiki: WikiModule;
  inbox: Inbox;
  worker: InboxWorker;
  index: RoutingIndex;
  init: InitRunner;
  enabled: EnabledHandler;
  /** Tool providers (core, first-party, MCP servers and companions). */
  registry: ToolRegistry;
  toolAssignments: ToolAssignmentStore;
  mcpServers: McpServerStore;
  /** Call sync() after every change to the stored MCP servers. */
  mcpProviders: McpProviderManager;
  rateLimiter: RateLimiter;
  requestQueue: RequestQueue;
  /** Replays queued turns now (the admin's "process queue now"); the same work as the background processor. */
  processQueueNow(): Promise<QueueRunResult>;
  traces: TraceStore;
  agent: AgentLoop;
  /** One Talk event through the whole pipeline (the worker's, or the terminal playground's with its seams). */
  processor: EventProcessor;
  identities: TalkIdentities;
  /** The Talk worker and queue, here or in the processing thread. */
  processing: ProcessingControl;
  close(): Promise<void>;
}

export interface ProcessingControl {
  /** A new inbox row (see InboxWorker.notify). */
  notify(row?: HandedRow): void;
  /** A reaction webhook (Talk's `Like`): pending confirmations in the room read their reactions soon. */
  reactionSeen(roomToken: string, messageId: string): void;
  idle(timeoutMs?: number): Promise<void>;
  processQueueNow(): Promise<QueueRunResult>;
  /** Admin changes (models, MCP servers, limits, bots) reach the processing side. */
  settingsChanged(): Promise<void>;
  runtime(seconds: number): Promise<unknown>;
  /** A webhook_listeners file event: the wiki's scan runs where the Talk worker runs. */
  wikiFileEvent(): void;
}

/**
 * 'all': one thread does everything (tests). 'http': the webhook intake and the API here, the Talk
 * worker in a processing thread (EDUCAI_ROLE=all) or in worker processes (web). 'processing': that
 * thread's side, or a worker process (processing/roles.ts).
 */
export type Role = Side;

export interface BuildOptions {
  logger?: Logger;
  /** fetch for model providers; default: the egress module (S18) with the admin allow-list. */
  llmFetch?: typeof fetch;
  now?: () => number;
  /** PostgreSQL schema (tests isolate themselves this way). */
  pgSchema?: string;
  exAppDir?: string;
  worker?: { concurrency?: number; pollMs?: number };
  /** Age after which a Talk event gets an apology instead of an answer. */
  maxEventAgeMs?: number;
  /** Don't start the inbox worker (benchmarks of the intake alone). */
  startWorker?: boolean;
  /** How often queued (rate-limited) turns are retried in the background; 0 = only on request. Default 15 s. */
  queuePollMs?: number;
  /** Who may use a bot (default: local users only). */
  botAccess?: BotAccessPolicy;
  /** How later model calls of a turn wait out short rate-limit refusals. */
  rateGate?: RateGateOptions;
  /** Time-based flush interval of streamed replies (default 500 ms). */
  replyTickMs?: number;
  role?: Role;
  /** EDUCAI_ROLE=web|worker on PostgreSQL: no processing thread; inbox leases, LISTEN/NOTIFY and housekeeping leaders. */
  scaleOut?: boolean;
  /** In the processing role: refreshes the intake's routing index on the HTTP thread. */
  refreshHttpIndex?: () => Promise<void>;
  /** Tests: knowledge worker polling, extraction limits, DNS answers. */
  knowledge?: Pick<KnowledgeModuleOptions, 'worker' | 'extractor' | 'resolve' | 'index'>;
  /** Tests: wiki index-sync debounce and scan interval. */
  wiki?: { debounceMs?: number; scanIntervalMs?: number };
  /** The terminal playground (`make chat`): the Talk ends replaced, the pipeline between them the same. */
  talk?: TalkSeams;
}

const REPO_ROOT = new URL('..', import.meta.url).pathname;
const DAY = 24 * 3600_000;
export const TRACE_RETENTION_KEY = 'traces.retention-days';
const DEFAULT_TRACE_RETENTION_DAYS = 30;

/** The composition root: every module is wired here, and only here. */
export async function buildApplication(config: AppConfig, options: BuildOptions = {}): Promise<Application> {
  registerSecret(config.appSecret);
  const now = options.now ?? Date.now;
  let nextcloudRef: NextcloudClient | null = null;
  const forwarder = new NextcloudLogForwarder(() => nextcloudRef);
  const logger = options.logger ?? createLogger({ level: config.logLevel, onWarnOrError: (level, message) => forwarder.forward(level, message) });

  const database = openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: join(config.persistentStorage, 'educai.sqlite'), pgSchema: options.pgSchema });
  // Migrations run at start as well as at init, so a restarted container is current before it serves.
  await migrateToLatest(database);
  const db = database.db;
  const scaleOut = options.scaleOut === true;
  if (scaleOut && (database.dialect !== 'postgres' || !config.databaseUrl)) throw new Error('scale-out needs PostgreSQL (DATABASE_URL)');
  // This process among the replicas: inbox leases and housekeeping leases name it.
  const origin = `${hostname().slice(0, 32)}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const leader = new LeaderLock(database.dialect === 'postgres' ? db : null, origin, now);
  // Set once the processes are linked (below); a worker's routing change reaches the web processes' intake.
  let scaleOutLink: ScaleOut | null = null;

  const vault = new Vault(db, loadVaultKey({ keyFile: config.vaultKeyFile ?? join(config.persistentStorage, 'vault.key'), envKey: config.vaultKey }), now);
  await vault.primeRedaction();
  const settings = new SettingsStore(db, now);

  const nextcloud = new NextcloudClient({ baseUrl: config.nextcloudUrl, appId: config.appId, appVersion: config.appVersion, appSecret: config.appSecret });
  nextcloudRef = nextcloud;
  // S21: disabled or deleted owners' bots stop; reconciliation reads enabled flags as an admin the app has seen.
  const userStates = new UserStates(db, now);
  const adminCheck = new AdminCheck(nextcloud, { now, onAdmin: (uid) => userStates.noteAdmin(uid) });

  // Model providers, MCP servers and companions are URLs we do not own: they go through the egress module (S18),
  // which reaches private addresses only after an admin allow-list entry. No size or time cap here: answers stream,
  // and the callers have their own timeouts.
  const egressSettings = new EgressSettingsService(settings);
  const providerEgress = createEgressFetch({ allowList: egressSettings.allowList, maxBytes: null, timeoutMs: null });
  const llmFetch = options.llmFetch ?? (providerEgress as typeof fetch);

  // Models
  const llmSettings = new LlmSettingsService(settings, vault);
  const catalog = new ModelCatalog({ settings: llmSettings, fetch: llmFetch, now });

  // Rate limits per model call (instance, user, guest room), the durable queue, and traces.
  const rateLimiter = new RateLimiter(db, () => loadRateLimitSettings(settings, logger), now);
  const requestQueue = new RequestQueue(db, { now });
  const traces = new TraceStore(db, { now, logger });
  const chat = new ChatClient({
    settings: llmSettings,
    catalog,
    fetch: observingRateLimits(llmFetch, rateLimiter, logger),
    ...(options.llmFetch ? {} : { streamRequest: observingStreamRateLimits(providerEgress.stream, rateLimiter, logger) }),
    logger,
  });

  // Tools: the registry with MCP servers and companions; assignments by name.
  const registry = new ToolRegistry({ logger });
  const toolAssignments = new ToolAssignmentStore(db, now);
  const mcpServers = new McpServerStore(db, vault, now);
  const mcpProviders = new McpProviderManager({ registry, store: mcpServers, logger, now, fetch: providerEgress });
  await mcpProviders.sync();
  // First-party tools and the wiki ask for the user's confirmation themselves (S7); other writes after untrusted content are held back (S6).
  const selfConfirming: SelfConfirmingProvider[] = [];
  const agent = new AgentLoop({ chat, logger, confirm: exemptSelfConfirming(selfConfirming) });

  // Talk pipeline: webhook → inbox → worker → router → turn → streamed reply
  const bots = new BotStore(db, now);
  const onboarding = new OnboardingService(db, now);
  const memory = new ConversationMemory(db, now);
  // A bot's own Talk identity speaks only while the bot is active and approved for everyone (S14).
  const identities = new TalkIdentities({ db, vault, nextcloud, now, speaksFor: async (botId) => mayHaveOwnIdentity(await bots.get(botId)) });
  // The intake writes through its own handle (on SQLite its own file), so acks never wait for the worker's lock.
  const inbox = new Inbox(db, now, database.intake ?? db, database.intakeStatements);
  const role: Role = options.role ?? 'all';
  if (scaleOut && role === 'processing') inbox.useLeases(new InboxLeases(db, { owner: origin, ttlMs: (config.inboxLeaseSeconds ?? 30) * 1000 }, now));
  const announceIndex = async () => void (await scaleOutLink?.announce('index'));
  const index = new RoutingIndex(db, role === 'processing' ? (options.refreshHttpIndex ?? (scaleOut ? announceIndex : null)) : null);
  await index.refresh();
  const talkRooms = new RoomInfo(nextcloud, { now });
  const rooms = options.talk?.rooms ? options.talk.rooms(talkRooms) : talkRooms;
  // Governance: visibility scopes, approvals and the version a person talks to.
  const memberships = new MembershipService(nextcloud, { now });
  const dedicated = new DedicatedTalkBotService({ db, identities });
  // Agent profiles (S13): one resolver decides as whom each tool call runs; every call is audited.
  const agentProfiles = new AgentProfileStore(db, vault, now);
  const toolAudit = new ToolAudit(db, settings, now);
  const accountCheck = new AccountCheck({
    nextcloud,
    directory: new UserDirectory(nextcloud),
    states: userStates,
    adminCheck,
    delegatedAdminGroups: async () => (await settings.get<string[]>(DELEGATED_ADMIN_GROUPS_KEY)) ?? [],
    now,
  });
  const executionResolver = new ExecutionResolver({
    profiles: agentProfiles,
    accounts: accountCheck,
    nextcloud,
    bots,
    assignmentConfig: async (botId, tool) => (await toolAssignments.list(botId)).find((a) => a.name === tool)?.config ?? null,
    audit: toolAudit,
    logger,
    now,
  });
  registry.useExecutionGate(executionResolver);
  const profileAssignments = new AgentProfileAssignments({
    profiles: agentProfiles,
    bots,
    familyOf: (tool) => registry.metadata()[tool]?.family ?? null,
    providerOf: (tool) => registry.metadata()[tool]?.provider ?? null,
  });
  // Tool servers with an agentCredential get the profile's credential per agent-mode call (S20).
  mcpProviders.useAgentProfiles({ credentials: agentProfiles, execution: executionResolver });
  toolAssignments.useHooks(profileAssignments.hooks());
  // The owner's personal choice of first-party tool families (issue 7), read through AppAPI preferences.
  const toolFamilyPreferences = new ToolFamilyPreferences(nextcloud, logger);
  const familyGate = toolFamilyGate({ registry, enabledFamilies: (owner) => toolFamilyPreferences.enabled(owner) });
  const governance = new Governance({
    db,
    memberships,
    models: catalog,
    tools: registryToolGate(registry),
    toolFamilies: familyGate,
    agentProfiles: profileAssignments,
    dedicated,
    logger,
    now,
  });
  const access = options.botAccess ?? new GovernanceAccessPolicy({ memberships, logger, ownerStatus: (uid) => userStates.statusOf(uid) });
  const resolver = new BotConfigResolver(db);
  // Knowledge: vectors in their own SQLite file (or PostgreSQL), URLs and providers through the egress module (S18).
  const knowledge = createKnowledgeModule({
    database,
    sqliteVectorPath: join(config.persistentStorage, 'knowledge-vectors.sqlite'),
    settings,
    vault,
    llmSettings,
    nextcloud,
    logger,
    egressAllowList: egressSettings.allowList,
    limiter: rateLimiter,
    // S11: only personal bots may use what their owner merely sees; knowledge reaches guests only on bots open to them.
    isPersonalBot: async (id) => (await bots.get(id))?.visibility === 'personal',
    guestsMayUse: async (id) => {
      const b = await bots.get(id);
      return b !== null && b.visibility === 'global' && b.guestsAllowed;
    },
    ...(options.knowledge ?? {}),
  });
  registry.register(knowledge.provider, 'core');
  // What each user's Nextcloud offers (first-party tools; the wiki asks it which Collectives API a member has).
  const capabilityProbe = new CapabilityProbe(nextcloud, { logger, now });
  // Wikis in the owner's files or a team's Collective, always as the invoking user (S16).
  const wiki = createWikiModule({
    db,
    nextcloud,
    logger,
    now,
    bot: async (id) => {
      const b = await bots.get(id);
      return b && { id: b.id, mention: b.mention, displayName: b.displayName, ownerUid: b.ownerUid, visibility: b.visibility, allowedTeams: b.allowedTeams };
    },
    assignments: (id) => toolAssignments.list(id),
    teamsOf: async (user) => (await memberships.forUser(user)).teams,
    collectiveFolder: collectiveFolderResolver(nextcloud, capabilityProbe),
    ...(options.wiki ?? {}),
  });
  registry.register(wiki.provider, 'core');
  toolAssignments.useHooks(wiki.assignmentHooks);
  governance.useAssignmentHooks(wiki.assignmentHooks);
  const roomUploads = new RoomUploads({ rooms: knowledge.rooms, assignments: toolAssignments, logger });
  const deletion = new BotDeletion({
    db,
    queue: requestQueue,
    traces,
    dedicated,
    logger,
    owners: [
      { name: 'knowledge', removeBot: (id) => knowledge.forgetBot(id) },
      { name: 'wiki', removeBot: (id) => wiki.forgetBot(id) },
      { name: 'agent-profiles', removeBot: (id) => agentProfiles.removeBot(id) },
    ],
    // Users whose requests wait in the rate-limit queue get a final message in Talk (the processor posts it).
    tell: (request, text) => processor.tell(request, text),
  });
  const router = new MessageRouter({
    bots,
    access,
    onboarding,
    memory,
    rooms,
    resolver: options.talk?.reviewMode ? asReviewer(resolver) : resolver,
    roomData: roomUploads,
  });
  const turns = new TurnRunner({
    chat,
    settings: llmSettings,
    memory,
    onboarding,
    logger,
    now,
    ...(options.replyTickMs !== undefined ? { tickMs: options.replyTickMs } : {}),
    tools: { registry, assignments: toolAssignments },
    agent,
    agentSettings: () => loadAgentSettings(settings),
    rateLimits: {
      limiter: rateLimiter,
      queue: requestQueue,
      queueMessage: async () => (await loadRateLimitSettings(settings, logger)).queueMessage,
      ...(options.rateGate ? { gate: options.rateGate } : {}),
    },
    traces,
  });
  const sender = options.talk?.sender ?? new BotSender({ nextcloud, identities, logger });
  // Hosts replies may link to besides Nextcloud (S8), read on every flush: kept in memory, reloaded on changes.
  const linkAllowList = new LinkAllowList(settings);
  await linkAllowList.load();
  const referenceSalt = (await settings.get<string>('talk.reference-salt')) ?? randomBytes(16).toString('hex');
  await settings.set('talk.reference-salt', referenceSalt);

  // First-party Files, Sharing and Calendar tools in user mode, with server-recorded confirmations.
  const confirmations = new ConfirmationService({
    db,
    sealer: vault,
    nextcloud,
    appId: config.appId,
    now,
    bots,
    alwaysModeBot: (token) => onboarding.alwaysModeBot(token),
    isOneToOne: async (user, token) => (await rooms.forUser(user, token))?.oneToOne ?? false,
    postToRoom: async ({ botId, roomToken }, text, referenceId) =>
      sender.send(await identities.replyRoute(roomToken, botId, SHARED_ROUTE), roomToken, { message: text, replyTo: null, referenceId }),
    authorize: async (action, user) => {
      const bot = await bots.get(action.botId);
      if (!bot?.active) return { ok: false, reason: 'the bot is no longer active' };
      if (!(await access.canUse(bot, { kind: 'user', uid: user.uid })).allowed) return { ok: false, reason: 'you may no longer use this bot' };
      const assigned = await toolAssignments.list(action.botId);
      if (!assigned.some((a) => a.name === action.tool)) return { ok: false, reason: 'the tool is no longer assigned to this bot' };
      return { ok: true };
    },
    isOwnReferenceId: (id) => isOwnReferenceId(referenceSalt, id),
    logger,
  });
  const reactionLanguages = new UserLanguages(nextcloud);
  // A 👍/👎 on the request answers it (issue 23); reads run only while requests are pending, where the worker runs.
  const reactionWatcher = new ReactionWatcher({
    confirmations,
    nextcloud,
    now,
    logger,
    languageOf: async (uid) => talkLanguageOf(await reactionLanguages.of(issueForStoredPrincipal(uid))),
    post: async ({ botId, roomToken }, text) =>
      sender.send(await identities.replyRoute(roomToken, botId, SHARED_ROUTE), roomToken, {
        message: text,
        replyTo: null,
        referenceId: randomBytes(32).toString('hex'),
      }),
    react: async ({ botId, roomToken }, messageId, emoji) =>
      sender.react(await identities.replyRoute(roomToken, botId, SHARED_ROUTE), roomToken, messageId, emoji),
  });
  const firstParty = new FirstPartyToolProvider({
    nextcloud,
    capabilities: capabilityProbe,
    confirmations,
    serverPolicy: settingsToolPolicy(() => settings.get('tools.first-party.rules')),
    isTainted: isTurnTainted,
    now,
    logger,
  });
  registry.register(firstParty, 'first-party');
  firstParty.useExecutionGate(executionResolver);
  confirmations.registerExecutor(firstParty);
  wiki.provider.useConfirmations(confirmations);
  confirmations.registerExecutor(wiki.provider);
  selfConfirming.push(firstParty, wiki.provider);
  // MCP servers and companions: writes the admin or the companion marks, and writes after untrusted content, wait for "yes <code>" (S7, S17).
  mcpProviders.useConfirmations(confirmations);
  selfConfirming.push(mcpProviders);
  await confirmations.loadIndex();
  const processor = new EventProcessor({
    inbox: options.talk?.handled ?? inbox,
    verifier: options.talk?.verifier ?? new MessageVerifier(nextcloud, logger),
    router,
    turns,
    sender,
    replyLog: options.talk?.replyLog ?? new ReplyLog(db, now),
    identities,
    onboarding,
    rooms,
    index,
    nextcloud,
    logger,
    now,
    options: { maxAgeMs: options.maxEventAgeMs ?? config.maxEventAgeSeconds * 1000, linkAllowList: () => linkAllowList.current(), referenceSalt },
    bots,
    access,
    confirmations,
    uploads: roomUploads,
    identityGate: new IdentityGate({ identities, bots, router, logger }),
    languages: new UserLanguages(nextcloud),
  });
  const queueProcessor = new QueueProcessor({ queue: requestQueue, handler: processor, db, logger });
  const worker = new InboxWorker({ inbox, processor, logger, options: { concurrency: config.workerConcurrency, ...options.worker } });

  const reporter = new StatusReporter(nextcloud);
  const init = new InitRunner(
    [
      { name: 'database migrations', run: async (report) => void (await migrateToLatest(database, (p) => report(p.done / p.total))) },
      { name: 'secret vault', run: async () => vault.primeRedaction() },
    ],
    reporter,
    logger,
  );
  const registrars: Registrar[] = [
    sharedTalkBotRegistrar(identities, logger),
    uiRegistrar({ nextcloud, exAppDir: options.exAppDir ?? join(REPO_ROOT, 'ex_app'), appVersion: config.appVersion, logger }),
    settingsRegistrar({ nextcloud, forms: () => [adminForm(config.nextcloudUrl), personalForm()], logger, afterRegister: () => adminFormSync.reconcile() }),
    wikiFileEventsRegistrar({ listeners: new WebhookListeners(nextcloud, config.appId), logger }),
  ];
  const enabled = new EnabledHandler(registrars, logger, (fn) => leader.exclusive('enabled', 60_000, fn));
  // Set once the processing control exists (below); values saved in Nextcloud's admin form reach the worker too.
  let afterFormApplied: () => Promise<void> = async () => undefined;
  const adminFormSync = new AdminFormSync({ nextcloud, settings, llmSettings, logger, onApplied: () => afterFormApplied() });
  const reconcileAdminForm = () => void adminFormSync.reconcile().catch((err: unknown) => logger.debug({ err }, 'admin settings form not reconciled'));
  const metrics = new RuntimeMetrics();

  const settingsChangedHere = async () => {
    llmSettings.invalidate();
    egressSettings.invalidate();
    await linkAllowList.load();
    catalog.invalidate();
    knowledge.worker.notify();
    await mcpProviders.sync();
    await index.refresh();
  };
  // In the HTTP role the processing thread starts in the background, so /heartbeat answers at once;
  // events that arrive meanwhile wait in the durable inbox, which the thread drains when it is up.
  let thread: ProcessingThread | null = null;
  let threadReady: Promise<ProcessingThread> | null = null;
  const runsWorker = role !== 'http' && options.startWorker !== false;
  // A web process of a scale-out has no worker: its rows are the worker processes' (woken by NOTIFY).
  const remoteWorkers = scaleOut && role === 'http';
  const processing: ProcessingControl = {
    notify: (row) => {
      if (thread) thread.notify(row);
      // The thread's worker has started by the time it is ready; rows meanwhile need not wait for its poll.
      else if (threadReady)
        void threadReady.then(
          (t) => t.notify(row),
          () => undefined,
        );
      else if (remoteWorkers) void scaleOutLink?.announce('inbox').catch((err: unknown) => logger.debug({ err }, 'could not wake the workers'));
      else worker.notify(row);
    },
    reactionSeen: (roomToken, messageId) => {
      if (thread) thread.reactionSeen(roomToken, messageId);
      else if (threadReady)
        void threadReady.then(
          (t) => t.reactionSeen(roomToken, messageId),
          () => undefined,
        );
      // A web process has no watcher; the workers' own bounded reads find the reaction.
      else if (!remoteWorkers) reactionWatcher.hint(roomToken, messageId);
    },
    idle: async (timeoutMs) => (threadReady ? (await threadReady).idle(timeoutMs) : remoteWorkers ? inboxDrained(inbox, timeoutMs) : worker.idle(timeoutMs)),
    processQueueNow: async () => (threadReady ? ((await threadReady).processQueueNow() as Promise<QueueRunResult>) : queueProcessor.processNow()),
    settingsChanged: async () => {
      await settingsChangedHere();
      if (threadReady) await (await threadReady).settingsChanged();
      await scaleOutLink?.announce('settings');
    },
    runtime: async (seconds) => (threadReady ? (await threadReady).runtime(seconds) : metrics.snapshot(seconds)),
    wikiFileEvent: () =>
      threadReady
        ? void threadReady.then(
            (t) => t.wikiFileEvent(),
            () => undefined,
          )
        : wiki.scanner.fileEvent(),
  };
  // After an admin or owner changes configuration, the processing side reloads it.
  const propagateChanges = Router();
  // No trailing slash in the pattern: Express 5 never matched `^/api/v1/(admin|bots)/` as a mount path.
  propagateChanges.use(/^\/api\/v1\/(admin|bots)/, (req, res, next) => {
    if (req.method !== 'GET') {
      res.on('finish', () => {
        if (res.statusCode < 400) void processing.settingsChanged().catch((err: unknown) => logger.warn({ err }, 'could not propagate a configuration change'));
        // The values Nextcloud's admin settings form shows follow the app page.
        if (res.statusCode < 400 && /^\/api\/v1\/admin\/(settings|ratelimit)(\?|$)/.test(req.originalUrl) && enabled.enabled) reconcileAdminForm();
      });
    }
    next();
  });

  const app = createApp({
    appId: config.appId,
    appSecret: config.appSecret,
    logger,
    routers: [
      lifecycleRoutes({ init, enabled, logger }),
      talkWebhookRoutes([SHARED_ROUTE], {
        inbox,
        index,
        logger,
        notify: (row) => processing.notify(row),
        onReaction: (room, id) => processing.reactionSeen(room, id),
        observe: (ms) => metrics.recordWebhook(ms),
        alsoRelevant: (room, actor, rawText) =>
          // The processing thread records pending confirmations; a reply that looks like one is kept either way.
          confirmations.mightConcern(room, actor, rawText) ||
          parseConfirmationReply(rawText, { affirmatives: DEFAULT_AFFIRMATIVES, negatives: DEFAULT_NEGATIVES }) !== null,
      }),
      // The bots' own Talk identities (`/talk_bot_<bot id>`): the same intake, seeing only their bot (S14).
      dedicatedWebhookRoutes({
        inbox,
        index,
        logger,
        notify: (row) => processing.notify(row),
        onReaction: (room, id) => processing.reactionSeen(room, id),
        observe: (ms) => metrics.recordWebhook(ms),
        alsoRelevant: (room, actor, rawText) =>
          confirmations.mightConcern(room, actor, rawText) ||
          parseConfirmationReply(rawText, { affirmatives: DEFAULT_AFFIRMATIVES, negatives: DEFAULT_NEGATIVES }) !== null,
      }),
      wikiFileEventRoutes({ onFileEvent: () => processing.wikiFileEvent(), logger }),
      propagateChanges,
      sessionInfoRoutes({ adminCheck, version: config.appVersion }),
      personalSettingsRoutes({ preferences: toolFamilyPreferences, logger }),
      adminSettingsRoutes({ llmSettings, catalog, adminCheck, logger }),
      mcpAdminRoutes({ store: mcpServers, manager: mcpProviders, adminCheck, logger, fetch: providerEgress }),
      adminPolicyRoutes({ settings, egress: egressSettings, links: linkAllowList, adminCheck, logger, onChange: settingsChangedHere }),
      toolsApiRoutes({
        registry,
        assignments: toolAssignments,
        bots,
        adminCheck,
        logger,
        mcp: { store: mcpServers, manager: mcpProviders },
        toolFamilies: { gate: familyGate, enabled: (u) => toolFamilyPreferences.enabled(u) },
      }),
      rateLimitAdminRoutes({ settings, limiter: rateLimiter, queue: requestQueue, processQueueNow: () => processing.processQueueNow(), adminCheck, logger }),
      tracesApiRoutes({ traces, adminCheck, logger }),
      agentProfilesApiRoutes({ profiles: agentProfiles, accounts: accountCheck, audit: toolAudit, settings, bots, adminCheck, logger }),
      botsApiRoutes({
        governance,
        access,
        resolver,
        deletion,
        rooms: new RoomBots({ nextcloud, db }),
        dedicated,
        memberships,
        nextcloud,
        adminCheck,
        logger,
        onChange: () => processing.settingsChanged(),
        knowledge: { sourceCount: async (id) => (await knowledge.sources.list(id)).length },
        agentProfiles,
      }),
      openApiRoutes(() => apiDocument(config.appVersion) as never),
      runtimeStatusRoutes({
        adminCheck,
        logger,
        snapshot: async (seconds) => ({ http: metrics.snapshot(seconds), processing: threadReady ? await (await threadReady).runtime(seconds) : null }),
        inboxBacklog: () => inbox.pendingCount(),
      }),
      knowledgeApiRoutes({ knowledge, bots: governance, adminCheck, logger }),
      staticAssetRoutes(options.exAppDir ?? join(REPO_ROOT, 'ex_app')),
    ],
  });

  // WAL checkpoints (and their fsyncs) off every event loop, where the Talk worker runs.
  const checkpointer = runsWorker && database.files ? await Checkpointer.start(database.files, { logger }) : null;
  // Scale-out: configuration changes, routing changes and inbox wake-ups between the processes (storage/notifier.ts).
  if (scaleOut) {
    scaleOutLink = await startScaleOut({
      db,
      databaseUrl: config.databaseUrl!,
      ...(options.pgSchema ? { pgSchema: options.pgSchema } : {}),
      origin,
      logger,
      reload: settingsChangedHere,
      refreshIndex: () => index.refresh(),
      wake: runsWorker ? () => worker.notify() : null,
    });
  }
  if (runsWorker) await worker.start();
  if (runsWorker) reactionWatcher.wake();
  if (runsWorker) queueProcessor.start(options.queuePollMs ?? 15_000);
  // Ingestion jobs run where the Talk worker runs (never in the HTTP role); their housekeeping too.
  if (runsWorker) await knowledge.start();
  // The wiki's etag scan (index.md after manual edits) runs where the Talk worker runs, like knowledge; on one worker of a scale-out.
  if (runsWorker && !scaleOut) wiki.start();
  const reconciler = new UserReconciler({
    db,
    directory: new UserDirectory(nextcloud),
    states: userStates,
    bots,
    isAdmin: (u) => adminCheck.isAdmin(u),
    deleteBot: (id) => deletion.delete(id),
    clearTraces: (uid) => traces.clearForUser(uid),
    forgetMemory: (who) => memory.forgetUser(who),
    onBotsChanged: () => processing.settingsChanged(),
    logger,
    now,
  });
  if (role === 'http' && !scaleOut) {
    threadReady = ProcessingThread.start(config, { pgSchema: options.pgSchema, refreshIndex: () => index.refresh(), logger });
    threadReady.then(
      (t) => {
        thread = t;
      },
      (err: unknown) => {
        logger.fatal({ err }, 'the processing thread could not start');
        process.exit(1);
      },
    );
  }
  const pruneTraces = async () => {
    const days = await settings.get<number>(TRACE_RETENTION_KEY);
    await traces.prune(typeof days === 'number' && Number.isFinite(days) && days >= 1 ? days : DEFAULT_TRACE_RETENTION_DAYS);
  };
  await pruneTraces().catch((err: unknown) => logger.warn({ err }, 'trace retention failed'));
  // The tool audit is kept for the admin's retention period, pruned daily where the Talk worker runs.
  const pruneAudit = () => void toolAudit.prune().catch((err: unknown) => logger.warn({ err }, 'tool audit retention failed'));
  if (runsWorker) pruneAudit();
  // Values the admin saved in Nextcloud's own settings form reach every process.
  afterFormApplied = () => processing.settingsChanged();
  // Each timer on one process at a time (processing/housekeeping.ts); the routing index refresh is every process's own.
  const housekeeping = startHousekeeping(
    [
      {
        name: 'knowledge-maintenance',
        everyMs: 6 * 3600_000,
        here: () => runsWorker,
        run: () => knowledge.maintenance(),
        failure: 'knowledge maintenance failed',
      },
      // Daily; the first run waits until start-up traffic has settled.
      {
        name: 'user-reconciliation',
        everyMs: RECONCILE_INTERVAL_MS,
        firstAfterMs: 10 * 60_000,
        here: () => runsWorker,
        run: () => reconciler.run(),
        failure: 'user reconciliation failed',
      },
      {
        name: 'retention',
        everyMs: 3600_000,
        here: () => true,
        local: () => index.refresh(),
        run: async () => {
          const s = await llmSettings.get();
          await memory.pruneOlderThan(s.conversationRetentionDays);
          await inbox.pruneHandled(7 * DAY);
          await pruneTraces();
          await requestQueue.purgeFinished();
          await rateLimiter.pruneIdle();
        },
        failure: 'maintenance failed',
      },
      { name: 'tool-audit', everyMs: DAY, here: () => runsWorker, run: () => toolAudit.prune(), failure: 'tool audit retention failed' },
      // Values saved in Nextcloud's admin settings form, picked up within a minute (HTTP side only).
      {
        name: 'admin-form-sync',
        everyMs: 60_000,
        here: () => role !== 'processing' && enabled.enabled,
        run: () => adminFormSync.reconcile(),
        failure: 'admin settings form not reconciled',
      },
      ...(scaleOut
        ? [
            {
              name: 'wiki-scan',
              everyMs: options.wiki?.scanIntervalMs ?? DEFAULT_SCAN_INTERVAL_MS,
              here: () => runsWorker,
              run: () => wiki.scanner.scanOnce(),
              failure: 'wiki scan failed',
            },
          ]
        : []),
    ],
    leader,
    logger,
  );

  let closing: Promise<void> | null = null;
  return {
    app,
    config,
    logger,
    database,
    nextcloud,
    vault,
    settings,
    llmSettings,
    egressSettings,
    bots,
    knowledge,
    wiki,
    inbox,
    worker,
    index,
    init,
    enabled,
    registry,
    toolAssignments,
    mcpServers,
    mcpProviders,
    rateLimiter,
    requestQueue,
    processQueueNow: () => queueProcessor.processNow(),
    traces,
    agent,
    processor,
    identities,
    processing,
    // Once: a second signal, or the HTTP thread and a test both stopping, must not close closed clients.
    close: () => (closing ??= closeOnce()),
  };
  async function closeOnce(): Promise<void> {
    housekeeping.stop();
    metrics.stop();
    if (threadReady) await (await threadReady.catch(() => null))?.stop();
    await worker.stop();
    reactionWatcher.close();
    await reactionWatcher.idle();
    inbox.stop();
    await scaleOutLink?.close();
    await queueProcessor.stop();
    await mcpProviders.close();
    await providerEgress.close();
    await knowledge.close();
    await wiki.close();
    await checkpointer?.stop();
    await database.close();
  }
}
