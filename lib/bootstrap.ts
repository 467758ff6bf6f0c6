import { join } from 'node:path';
import type { Express } from 'express';
import type { AppConfig } from './config/env.ts';
import { AdminCheck } from './appapi/admin-check.ts';
import { EnabledHandler, type Registrar } from './appapi/enabled-handler.ts';
import { InitRunner } from './appapi/init-runner.ts';
import { NextcloudLogForwarder } from './appapi/nextcloud-log.ts';
import { StatusReporter } from './appapi/status-reporter.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { registerSecret } from './log/redact.ts';
import { NextcloudClient } from './nextcloud/client.ts';
import { createApp } from './server/app.ts';
import { lifecycleRoutes } from './server/routes/lifecycle.ts';
import { staticAssetRoutes } from './server/routes/static-assets.ts';
import { openDatabase, type DatabaseHandle } from './storage/database.ts';
import { migrateToLatest } from './storage/migrate.ts';
import { SettingsStore } from './storage/settings-store.ts';
import { loadVaultKey, Vault } from './vault/vault.ts';

export interface Application {
  app: Express;
  config: AppConfig;
  logger: Logger;
  database: DatabaseHandle;
  nextcloud: NextcloudClient;
  vault: Vault;
  settings: SettingsStore;
  init: InitRunner;
  enabled: EnabledHandler;
  close(): Promise<void>;
}

export interface BuildOptions {
  logger?: Logger;
  fetchImpl?: typeof fetch;
  now?: () => number;
  /** PostgreSQL schema (tests isolate themselves this way). */
  pgSchema?: string;
  exAppDir?: string;
}

const REPO_ROOT = new URL('..', import.meta.url).pathname;

/** The composition root: every module is wired here, and only here. */
export async function buildApplication(config: AppConfig, options: BuildOptions = {}): Promise<Application> {
  registerSecret(config.appSecret);
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

  const vault = new Vault(database.db, loadVaultKey({ keyFile: config.vaultKeyFile ?? join(config.persistentStorage, 'vault.key'), envKey: config.vaultKey }), options.now);
  await vault.primeRedaction();
  const settings = new SettingsStore(database.db, options.now);

  const nextcloud = new NextcloudClient({
    baseUrl: config.nextcloudUrl,
    appId: config.appId,
    appVersion: config.appVersion,
    appSecret: config.appSecret,
    fetchImpl: options.fetchImpl,
  });
  nextcloudRef = nextcloud;

  const reporter = new StatusReporter(nextcloud);
  const init = new InitRunner(
    [
      { name: 'database migrations', run: async (report) => void (await migrateToLatest(database, (p) => report(p.done / p.total))) },
      { name: 'secret vault', run: async () => vault.primeRedaction() },
    ],
    reporter,
    logger,
  );
  const registrars: Registrar[] = [];
  const enabled = new EnabledHandler(registrars, logger);
  const adminCheck = new AdminCheck(nextcloud, { now: options.now });
  void adminCheck;

  const app = createApp({
    appId: config.appId,
    appSecret: config.appSecret,
    logger,
    routers: [lifecycleRoutes({ init, enabled, logger }), staticAssetRoutes(options.exAppDir ?? join(REPO_ROOT, 'ex_app'))],
  });

  return {
    app,
    config,
    logger,
    database,
    nextcloud,
    vault,
    settings,
    init,
    enabled,
    close: async () => {
      await database.close();
    },
  };
}
