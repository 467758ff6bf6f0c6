import { z } from 'zod';

/** Configuration problems end start-up with one line, never a stack trace. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface AppConfig {
  appId: string;
  appSecret: string;
  appVersion: string;
  appHost: string;
  appPort: number;
  /** Origin plus base path of Nextcloud, without `/index.php` and without a trailing slash. */
  nextcloudUrl: string;
  persistentStorage: string;
  databaseUrl: string | null;
  /** HaRP: listen on a unix socket instead of TCP. */
  unixSocket: string | null;
  vaultKeyFile: string | null;
  vaultKey: string | null;
  logLevel: string;
  /** Talk events processed at once (rooms in parallel). */
  workerConcurrency: number;
  /** Nice value of the processing thread (0–19, default 0): above 0, webhook acks go first when CPU is short, and streams lose to every other process. */
  processingNice: number;
  /** Talk events older than this get a short apology instead of a stale answer. */
  maxEventAgeSeconds: number;
  /** EDUCAI_ROLE: `all` (one process, the default), or `web` / `worker` for scale-out on PostgreSQL (processing/roles.ts). */
  role?: 'all' | 'web' | 'worker';
  /** Scale-out: how long a worker's claim on a Talk event holds without renewal (EDUCAI_INBOX_LEASE_SECONDS, default 30). */
  inboxLeaseSeconds?: number;
}

const nonEmpty = (name: string) =>
  z
    .string({ error: `${name} is required` })
    .trim()
    .min(1, `${name} is required`);

const schema = z.object({
  APP_ID: nonEmpty('APP_ID').regex(/^[a-z0-9_]+$/, 'APP_ID must match [a-z0-9_]+'),
  APP_SECRET: nonEmpty('APP_SECRET').min(16, 'APP_SECRET must be at least 16 characters'),
  APP_VERSION: nonEmpty('APP_VERSION'),
  APP_HOST: z.string().trim().default('127.0.0.1'),
  APP_PORT: z.coerce
    .number({ error: 'APP_PORT must be a number' })
    .int('APP_PORT must be an integer')
    .min(1, 'APP_PORT must be between 1 and 65535')
    .max(65535, 'APP_PORT must be between 1 and 65535')
    .default(23000),
  NEXTCLOUD_URL: nonEmpty('NEXTCLOUD_URL'),
  APP_PERSISTENT_STORAGE: nonEmpty('APP_PERSISTENT_STORAGE'),
  DATABASE_URL: z.string().trim().optional(),
  HP_SHARED_KEY: z.string().optional(),
  EDUCAI_VAULT_KEY_FILE: z.string().trim().optional(),
  EDUCAI_VAULT_KEY: z.string().trim().optional(),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  EDUCAI_WORKER_CONCURRENCY: z.coerce
    .number({ error: 'EDUCAI_WORKER_CONCURRENCY must be a number' })
    .int('EDUCAI_WORKER_CONCURRENCY must be an integer')
    .min(1, 'EDUCAI_WORKER_CONCURRENCY must be between 1 and 4096')
    .max(4096, 'EDUCAI_WORKER_CONCURRENCY must be between 1 and 4096')
    .default(32),
  EDUCAI_PROCESSING_NICE: z.coerce
    .number({ error: 'EDUCAI_PROCESSING_NICE must be a number' })
    .int('EDUCAI_PROCESSING_NICE must be an integer')
    .min(0, 'EDUCAI_PROCESSING_NICE must be between 0 and 19')
    .max(19, 'EDUCAI_PROCESSING_NICE must be between 0 and 19')
    .default(0),
  EDUCAI_MAX_EVENT_AGE_SECONDS: z.coerce
    .number({ error: 'EDUCAI_MAX_EVENT_AGE_SECONDS must be a number' })
    .int('EDUCAI_MAX_EVENT_AGE_SECONDS must be an integer')
    .min(30, 'EDUCAI_MAX_EVENT_AGE_SECONDS must be between 30 and 86400')
    .max(86400, 'EDUCAI_MAX_EVENT_AGE_SECONDS must be between 30 and 86400')
    .default(600),
  EDUCAI_ROLE: z.enum(['all', 'web', 'worker'], { error: 'EDUCAI_ROLE must be all, web or worker' }).default('all'),
  EDUCAI_INBOX_LEASE_SECONDS: z.coerce
    .number({ error: 'EDUCAI_INBOX_LEASE_SECONDS must be a number' })
    .int('EDUCAI_INBOX_LEASE_SECONDS must be an integer')
    .min(2, 'EDUCAI_INBOX_LEASE_SECONDS must be between 2 and 3600')
    .max(3600, 'EDUCAI_INBOX_LEASE_SECONDS must be between 2 and 3600')
    .default(30),
});

/** AppAPI may hand us `https://host/index.php/`; every API lives beside index.php, not below it. */
export function normalizeNextcloudUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`NEXTCLOUD_URL is not a valid URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('NEXTCLOUD_URL must start with http:// or https://');
  }
  if (url.username || url.password) throw new ConfigError('NEXTCLOUD_URL must not contain credentials');
  if (url.search || url.hash) throw new ConfigError('NEXTCLOUD_URL must not contain a query or fragment');
  let path = url.pathname.replace(/\/+$/, '');
  path = path.replace(/\/index\.php$/, '');
  return `${url.origin}${path}`;
}

function validateDatabaseUrl(raw: string | undefined): string | null {
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_URL is not a valid URL (expected postgres://user@host:port/db)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL; leave it unset for the embedded SQLite database');
  }
  return raw;
}

export function loadConfig(env: Record<string, string | undefined>): AppConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? 'environment';
    const message = issue?.message ?? 'invalid';
    throw new ConfigError(message.includes(field) ? message : `${field}: ${message}`);
  }
  const e = parsed.data;
  return {
    appId: e.APP_ID,
    appSecret: e.APP_SECRET,
    appVersion: e.APP_VERSION,
    appHost: e.APP_HOST || '127.0.0.1',
    appPort: e.APP_PORT,
    nextcloudUrl: normalizeNextcloudUrl(e.NEXTCLOUD_URL),
    persistentStorage: e.APP_PERSISTENT_STORAGE,
    databaseUrl: validateDatabaseUrl(e.DATABASE_URL),
    unixSocket: e.HP_SHARED_KEY ? '/tmp/exapp.sock' : null,
    vaultKeyFile: e.EDUCAI_VAULT_KEY_FILE || null,
    vaultKey: e.EDUCAI_VAULT_KEY || null,
    logLevel: e.LOG_LEVEL,
    workerConcurrency: e.EDUCAI_WORKER_CONCURRENCY,
    processingNice: e.EDUCAI_PROCESSING_NICE,
    maxEventAgeSeconds: e.EDUCAI_MAX_EVENT_AGE_SECONDS,
    role: e.EDUCAI_ROLE,
    inboxLeaseSeconds: e.EDUCAI_INBOX_LEASE_SECONDS,
  };
}
