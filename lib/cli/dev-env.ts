// The development defaults `make run` and `make chat` share, so both open the same data folder,
// database and secret. Values already in the environment win.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readManifest, type Manifest } from '../appapi/manifest.ts';

export const REPO_ROOT = new URL('../..', import.meta.url).pathname;

/** Fills APP_ID, APP_VERSION, APP_HOST, APP_PORT, NEXTCLOUD_URL and APP_PERSISTENT_STORAGE (created) where unset. */
export function applyDevDefaults(env: NodeJS.ProcessEnv): { manifest: Manifest; appHost: string; appPort: string; nextcloudUrl: string } {
  const manifest = readManifest(join(REPO_ROOT, 'appinfo/info.xml'));
  env.APP_ID ||= manifest.id;
  env.APP_VERSION ||= manifest.version;
  const appHost = (env.APP_HOST ||= '127.0.0.1');
  const appPort = (env.APP_PORT ||= '23000');
  const nextcloudUrl = (env.NEXTCLOUD_URL ||= 'http://localhost:8080');
  env.APP_PERSISTENT_STORAGE = resolve(env.APP_PERSISTENT_STORAGE || join(REPO_ROOT, 'data'));
  mkdirSync(env.APP_PERSISTENT_STORAGE, { recursive: true });
  return { manifest, appHost, appPort, nextcloudUrl };
}

/** Where `make run` keeps the secret it generated (mode 0600, S1). */
export function devSecretFile(env: NodeJS.ProcessEnv): string {
  return join(env.APP_PERSISTENT_STORAGE ?? join(REPO_ROOT, 'data'), 'dev-app-secret');
}
