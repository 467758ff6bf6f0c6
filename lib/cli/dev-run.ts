/**
 * `make run`: development defaults (a secret generated once and kept in the
 * data folder, port 23000, a local data folder), the registration commands,
 * then the ExApp itself. Values already in the environment win.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { readManifest } from '../appapi/manifest.ts';
import { registrationCommands } from '../appapi/registration-commands.ts';

const root = new URL('../..', import.meta.url).pathname;
const manifest = readManifest(join(root, 'appinfo/info.xml'));
const env = process.env;
env.APP_ID ||= manifest.id;
env.APP_VERSION ||= manifest.version;
env.APP_HOST ||= '127.0.0.1';
env.APP_PORT ||= '23000';
env.NEXTCLOUD_URL ||= 'http://localhost:8080';
env.APP_PERSISTENT_STORAGE = resolve(env.APP_PERSISTENT_STORAGE || join(root, 'data'));
mkdirSync(env.APP_PERSISTENT_STORAGE, { recursive: true });

// Checked before the banner: the occ commands are useless when the app cannot listen.
const portProblem = await new Promise<string | null>((done) => {
  const probe = createServer();
  probe.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'EADDRINUSE' ? 'is already in use; stop what listens there or set APP_PORT to a free port' : `cannot be used (${err.message}); set APP_HOST and APP_PORT`));
  probe.listen(Number(env.APP_PORT), env.APP_HOST, () => probe.close(() => done(null)));
});
if (portProblem) {
  process.stderr.write(`educai: port ${env.APP_PORT} on ${env.APP_HOST} ${portProblem}\n`);
  process.exit(1);
}

const secretFile = join(env.APP_PERSISTENT_STORAGE, 'dev-app-secret');
let secretFrom: { file: string } | { envVar: string } = { envVar: 'APP_SECRET' };
if (!env.APP_SECRET) {
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
  env.APP_SECRET = readFileSync(secretFile, 'utf8').trim();
  secretFrom = { file: secretFile };
}

const commands = registrationCommands({
  manifest,
  appHost: env.APP_HOST,
  appPort: Number(env.APP_PORT),
  nextcloudUrl: env.NEXTCLOUD_URL,
  secretFrom,
});
process.stdout.write(
  [
    '',
    `Talk AI ${manifest.version} (ExApp "${manifest.id}") on http://${env.APP_HOST}:${env.APP_PORT}`,
    `Data folder: ${env.APP_PERSISTENT_STORAGE}${env.DATABASE_URL ? ' (database: PostgreSQL from DATABASE_URL)' : ' (database: embedded SQLite)'}`,
    '',
    'Connect it to Nextcloud (run on the Nextcloud host; the secret is read from the file or variable, not printed):',
    ...commands.map((c) => `  ${c}`),
    '',
  ].join('\n') + '\n',
);

await import('../main.ts');
