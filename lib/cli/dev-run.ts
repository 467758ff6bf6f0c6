/**
 * `make run`: development defaults (a secret generated once and kept in the
 * data folder, port 23000, a local data folder), the registration commands,
 * then the ExApp itself. Values already in the environment win.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { registrationCommands } from '../appapi/registration-commands.ts';
import { applyDevDefaults, devSecretFile } from './dev-env.ts';

const env = process.env;
const { manifest, appHost, appPort, nextcloudUrl } = applyDevDefaults(env);

// Checked before the banner: the occ commands are useless when the app cannot listen.
const portProblem = await new Promise<string | null>((done) => {
  const probe = createServer();
  probe.once('error', (err: NodeJS.ErrnoException) =>
    done(
      err.code === 'EADDRINUSE'
        ? 'is already in use; stop what listens there or set APP_PORT to a free port'
        : `cannot be used (${err.message}); set APP_HOST and APP_PORT`,
    ),
  );
  probe.listen(Number(env.APP_PORT), env.APP_HOST, () => probe.close(() => done(null)));
});
if (portProblem) {
  process.stderr.write(`educai: port ${env.APP_PORT} on ${env.APP_HOST} ${portProblem}\n`);
  process.exit(1);
}

const secretFile = devSecretFile(env);
let secretFrom: { file: string } | { envVar: string } = { envVar: 'APP_SECRET' };
if (!env.APP_SECRET) {
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
  env.APP_SECRET = readFileSync(secretFile, 'utf8').trim();
  secretFrom = { file: secretFile };
}

const commands = registrationCommands({ manifest, appHost, appPort: Number(appPort), nextcloudUrl, secretFrom });
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
