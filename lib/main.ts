import { existsSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import { ConfigError, loadConfig } from './config/env.ts';
import { buildApplication } from './bootstrap.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`educai: configuration error: ${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
  // Only the Nextcloud client keeps the secret; child processes must not inherit it (S1).
  delete process.env.APP_SECRET;
  delete process.env.EDUCAI_VAULT_KEY;

  // The Talk worker runs in its own thread so webhooks are acknowledged at once (EDUCAI_SINGLE_THREAD=1 to disable).
  const application = await buildApplication(config, { role: process.env.EDUCAI_SINGLE_THREAD === '1' ? 'all' : 'http' });
  const { logger } = application;
  const server = createServer(application.app);
  server.keepAliveTimeout = 65_000;

  if (config.unixSocket) {
    if (existsSync(config.unixSocket)) unlinkSync(config.unixSocket);
    server.listen(config.unixSocket, () => logger.info({ socket: config.unixSocket }, 'listening on unix socket (HaRP)'));
  } else {
    server.listen(config.appPort, config.appHost, () => logger.info({ host: config.appHost, port: config.appPort }, 'listening'));
  }

  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      void application.close().finally(() => process.exit(0));
    });
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`educai: start-up failed: ${message}\n`);
  process.exit(1);
});
