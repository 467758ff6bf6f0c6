import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Express } from 'express';
import type { AppConfig } from './config/env.ts';
import { AdminCheck } from './appapi/admin-check.ts';
import { EnabledHandler, type Registrar } from './appapi/enabled-handler.ts';
import { InitRunner } from './appapi/init-runner.ts';
import { NextcloudLogForwarder } from './appapi/nextcloud-log.ts';
import { StatusReporter } from './appapi/status-reporter.ts';
import { DefaultBotAccessPolicy } from './bots/bot-access.ts';
import { BotStore } from './bots/bot-store.ts';
import { ConversationMemory } from './conversation/memory.ts';
import { TurnRunner } from './conversation/turn-runner.ts';
import { ChatClient } from './llm/chat-client.ts';
import { LlmSettingsService } from './llm/llm-settings.ts';
import { ModelCatalog } from './llm/model-catalog.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { registerSecret } from './log/redact.ts';
import { NextcloudClient } from './nextcloud/client.ts';
import { MessageRouter } from './router/message-router.ts';
import { OnboardingService } from './router/onboarding.ts';
import { createApp } from './server/app.ts';
import { adminSettingsRoutes } from './server/routes/admin-settings.ts';
import { lifecycleRoutes } from './server/routes/lifecycle.ts';
import { sessionInfoRoutes } from './server/routes/session-info.ts';
import { staticAssetRoutes } from './server/routes/static-assets.ts';
import { openDatabase, type DatabaseHandle } from './storage/database.ts';
import { migrateToLatest } from './storage/migrate.ts';
import { SettingsStore } from './storage/settings-store.ts';
import { BotSender } from './talk/bot-sender.ts';
import { EventProcessor } from './talk/event-processor.ts';
import { Inbox } from './talk/inbox.ts';
import { InboxWorker } from './talk/inbox-worker.ts';
import { MessageVerifier } from './talk/message-verifier.ts';
import { ReplyLog } from './talk/reply-log.ts';
import { RoomInfo } from './talk/room-info.ts';
import { RoutingIndex } from './talk/routing-index.ts';
import { sharedTalkBotRegistrar, SHARED_ROUTE, TalkIdentities } from './talk/talk-identities.ts';
import { talkWebhookRoutes } from './talk/webhook-route.ts';
import { loadVaultKey, Vault } from './vault/vault.ts';

export interface Application {
  app: Express;
  config: AppConfig;
  logger: Logger;
  database: DatabaseHandle;
  nextcloud: NextcloudClient;
  vault: Vault;
  settings: SettingsStore;
  llmSettings: LlmSettingsService;
  bots: BotStore;
  inbox: Inbox;
  worker: InboxWorker;
  index: RoutingIndex;
  init: InitRunner;
  enabled: EnabledHandler;
  close(): Promise<void>;
}

export interface BuildOptions {
  logger?: Logger;
  fetchImpl?: typeof fetch;
  /** fetch for model providers (later the egress module, S18). */
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
}

const REPO_ROOT = new URL('..', import.meta.url).pathname;
const DAY = 24 * 3600_000;

/** The composition root: every module is wired here, and only here. */
export async function buildApplication(config: AppConfig, options: BuildOptions = {}): Promise<Application> {
  registerSecret(config.appSecret);
  const now = options.now ?? Date.now;
  let nextcloudRef: NextcloudClient | null = null;
  const forwarder = new NextcloudLogForwarder(() => nextcloudRef);
  const logger =
    options.logger ??
    createLogger({ level: config.logLevel, onWarnOrError: (level, message) => forwarder.forward(level, message) });

  const database = openDatabase({
    databaseUrl: config.databaseUrl,
    sqlitePath: join(config.persistentStorage, 'educai.sqlite'),
    pgSchema: options.pgSchema,
  });
  // Migrations run at start as well as at init, so a restarted container is current before it serves.
  await migrateToLatest(database);
  const db = database.db;

  const vault = new Vault(db, loadVaultKey({ keyFile: config.vaultKeyFile ?? join(config.persistentStorage, 'vault.key'), envKey: config.vaultKey }), now);
  await vault.primeRedaction();
  const settings = new SettingsStore(db, now);

  const nextcloud = new NextcloudClient({
    baseUrl: config.nextcloudUrl,
    appId: config.appId,
    appVersion: config.appVersion,
    appSecret: config.appSecret,
    fetchImpl: options.fetchImpl,
  });
  nextcloudRef = nextcloud;
  const adminCheck = new AdminCheck(nextcloud, { now });

  // Models
  const llmSettings = new LlmSettingsService(settings, vault);
  const catalog = new ModelCatalog({ settings: llmSettings, fetch: options.llmFetch, now });
  const chat = new ChatClient({ settings: llmSettings, catalog, fetch: options.llmFetch, logger });

  // Talk pipeline: webhook → inbox → worker → router → turn → streamed reply
  const bots = new BotStore(db, now);
  const onboarding = new OnboardingService(db, now);
  const memory = new ConversationMemory(db, now);
  const identities = new TalkIdentities({ db, vault, nextcloud, now });
  const inbox = new Inbox(db, now);
  const index = new RoutingIndex(db);
  await index.refresh();
  const rooms = new RoomInfo(nextcloud, { now });
  const router = new MessageRouter({ bots, access: new DefaultBotAccessPolicy(), onboarding, memory, rooms });
  const turns = new TurnRunner({ chat, settings: llmSettings, memory, onboarding, logger, now });
  const sender = new BotSender({ nextcloud, identities, logger });
  const referenceSalt = (await settings.get<string>('talk.reference-salt')) ?? randomBytes(16).toString('hex');
  await settings.set('talk.reference-salt', referenceSalt);
  const processor = new EventProcessor({
    inbox,
    verifier: new MessageVerifier(nextcloud, logger),
    router,
    turns,
    sender,
    replyLog: new ReplyLog(db, now),
    identities,
    onboarding,
    rooms,
    index,
    nextcloud,
    logger,
    now,
    options: { maxAgeMs: options.maxEventAgeMs ?? 10 * 60_000, linkAllowList: () => [], referenceSalt },
  });
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
  const registrars: Registrar[] = [sharedTalkBotRegistrar(identities, logger)];
  const enabled = new EnabledHandler(registrars, logger);

  const app = createApp({
    appId: config.appId,
    appSecret: config.appSecret,
    logger,
    routers: [
      lifecycleRoutes({ init, enabled, logger }),
      talkWebhookRoutes([SHARED_ROUTE], { inbox, index, logger, notify: () => worker.notify() }),
      sessionInfoRoutes({ adminCheck, version: config.appVersion }),
      adminSettingsRoutes({ llmSettings, catalog, adminCheck, logger }),
      staticAssetRoutes(options.exAppDir ?? join(REPO_ROOT, 'ex_app')),
    ],
  });

  if (options.startWorker !== false) await worker.start();
  const maintenance = setInterval(() => {
    void (async () => {
      const s = await llmSettings.get();
      await memory.pruneOlderThan(s.conversationRetentionDays);
      await inbox.pruneHandled(7 * DAY);
      await index.refresh();
    })().catch((err: unknown) => logger.warn({ err }, 'maintenance failed'));
  }, 3600_000);
  maintenance.unref();

  return {
    app,
    config,
    logger,
    database,
    nextcloud,
    vault,
    settings,
    llmSettings,
    bots,
    inbox,
    worker,
    index,
    init,
    enabled,
    close: async () => {
      clearInterval(maintenance);
      await worker.stop();
      await database.close();
    },
  };
}
