import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { enableCompileCache } from 'node:module';
import { SERVER_TIMEOUTS } from './server/server-timeouts.ts';

// Compiled (and type-stripped) modules are cached on disk, so a restart loads faster.
enableCompileCache();

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
type Address = { socket: string } | { host: string; port: number };

/**
 * The listen address, read without loading the configuration module (zod
 * alone takes a few hundred ms). Mirrors config/env.ts; null when the port is
 * not valid, so that loadConfig reports it.
 */
function earlyAddress(env: NodeJS.ProcessEnv): Address | null {
  if (env.HP_SHARED_KEY) return { socket: '/tmp/exapp.sock' };
  const raw = env.APP_PORT?.trim() ?? '';
  const port = Number(raw);
  if (raw === '' || !Number.isInteger(port) || port < 1 || port > 65535) return null;
  return { host: env.APP_HOST?.trim() || '127.0.0.1', port };
}

/** The static imports of a module (resolved against it), in source order. */
function importsOf(url: URL): string[] {
  const source = readFileSync(url, 'utf8');
  return [...source.matchAll(/^import\s+(?!type\b)[^;]*?from\s+'([^']+)';/gms)].map((m) => (m[1]!.startsWith('.') ? new URL(m[1]!, url).href : m[1]!));
}

/**
 * Listens at once: /heartbeat needs nothing else, so AppAPI sees the app up
 * while the composition root loads. Every other request waits until the
 * application is built (AppAPI calls /init only after a heartbeat; a webhook
 * waits well within its 3 s).
 */
function startServer(address: Address): { server: Server; ready: (handler: Handler) => void; listening: Promise<void> } {
  let handler: Handler | null = null;
  const waiting: Array<() => void> = [];
  const server = createServer({ ...SERVER_TIMEOUTS }, (req, res) => {
    if (handler) return handler(req, res);
    if (req.method === 'GET' && (req.url === '/heartbeat' || req.url?.startsWith('/heartbeat?'))) {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
      res.end('{"status":"ok"}');
      return;
    }
    waiting.push(() => handler!(req, res));
  });
  const listening = new Promise<void>((resolve) => {
    // A port in use is a set-up problem, not a crash: one line that says what to change.
    server.once('error', (err: NodeJS.ErrnoException) => {
      const where = 'socket' in address ? address.socket : `port ${address.port} on ${address.host}`;
      if (err.code === 'EADDRINUSE') process.stderr.write(`educai: ${where} is already in use; stop what listens there or set APP_PORT to a free port\n`);
      else process.stderr.write(`educai: cannot listen on ${where}: ${err.message}\n`);
      process.exit(1);
    });
    if ('socket' in address) {
      if (existsSync(address.socket)) unlinkSync(address.socket);
      server.listen(address.socket, resolve);
    } else {
      server.listen(address.port, address.host, resolve);
    }
  });
  return {
    server,
    listening,
    ready: (h) => {
      handler = h;
      for (const resume of waiting.splice(0)) resume();
    },
  };
}

function heartbeatOnly(req: IncomingMessage, res: ServerResponse): void {
  const ok = req.method === 'GET' && (req.url === '/heartbeat' || req.url?.startsWith('/heartbeat?'));
  res.writeHead(ok ? 200 : 404, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(ok ? '{"status":"ok"}' : '{"error":"not found","message":"a worker process serves only /heartbeat"}');
}

async function main(): Promise<void> {
  const early = earlyAddress(process.env);
  let started = early ? startServer(early) : null;

  const { ConfigError, loadConfig } = await import('./config/env.ts');
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
  // HaRP's master key (frpc already has its copy); only its presence mattered, for the socket.
  delete process.env.HP_SHARED_KEY;
  // Several processes need PostgreSQL; on SQLite one process holds the data folder (one line, exit 78 like a configuration error).
  const { claimSqliteFolder, scaleOutRefusal } = await import('./processing/roles.ts');
  const refusal = scaleOutRefusal(config.role ?? 'all', config.databaseUrl) ?? (config.databaseUrl ? null : claimSqliteFolder(config.persistentStorage));
  if (refusal) {
    process.stderr.write(`educai: ${refusal}\n`);
    process.exit(78);
  }
  started ??= startServer(config.unixSocket ? { socket: config.unixSocket } : { host: config.appHost, port: config.appPort });
  const { server } = started;
  await started.listening;

  // Module loading is synchronous once it starts; loading the composition root's imports one by one, with a
  // turn of the event loop between them, lets the heartbeat be answered while the rest loads.
  for (const specifier of importsOf(new URL('./bootstrap.ts', import.meta.url))) {
    await import(specifier);
    await new Promise((r) => setImmediate(r));
  }
  // EDUCAI_ROLE (processing/roles.ts): `all` runs the Talk worker in its own thread so webhooks are acknowledged
  // at once (EDUCAI_SINGLE_THREAD=1 to disable); `web` and `worker` split the two across processes on PostgreSQL.
  const { ROLES } = await import('./processing/roles.ts');
  const plan = ROLES[config.role ?? 'all'];
  const { buildApplication } = await import('./bootstrap.ts');
  const side = plan.processingThread && process.env.EDUCAI_SINGLE_THREAD === '1' ? 'all' : plan.side;
  const application = await buildApplication(config, { role: side, scaleOut: plan.scaleOut });
  const { logger } = application;
  // A worker serves only /heartbeat (health checks); it has no routes of its own.
  started.ready(plan.serves === 'app' ? (application.app as unknown as Handler) : heartbeatOnly);
  if (config.unixSocket) logger.info({ socket: config.unixSocket }, 'listening on unix socket (HaRP)');
  else logger.info({ host: config.appHost, port: config.appPort }, 'listening');

  let stopping = false;
  const shutdown = (signal: string) => {
    // A second signal (Ctrl-C twice, or npm and the terminal both passing SIGINT) must not close twice.
    if (stopping) return;
    stopping = true;
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
