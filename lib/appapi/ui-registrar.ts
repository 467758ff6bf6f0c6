import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log/logger.ts';
import { uiCall, type UiPart } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import type { Registrar } from './enabled-handler.ts';

/** The top-menu entry's name: the embedded page is /apps/app_api/embedded/<appid>/educai-main [85, 87]. */
export const TOP_MENU_NAME = 'educai-main';
export const TOP_MENU_DISPLAY_NAME = 'Talk AI';
export const INITIAL_STATE_KEY = 'educai-config';
/** Written by the frontend build (ex_app/vite.config.ts): the content-hashed bundle names. */
export const MANIFEST_FILE = 'js/educai-manifest.json';

export interface FrontendAssets {
  /** Paths as AppAPI wants them: relative to the ExApp, without `.js` / `.css` [85]. */
  script: string;
  style: string | null;
}

/**
 * The bundle names change with their content, because AppAPI's proxy lets the
 * browser cache them for an hour and adds only Nextcloud's own version to the URL [87].
 * Without a build the stable names are registered (and the page stays empty until one exists).
 */
export async function readFrontendAssets(exAppDir: string): Promise<FrontendAssets | null> {
  let raw: string;
  try {
    raw = await readFile(join(exAppDir, MANIFEST_FILE), 'utf8');
  } catch {
    return null;
  }
  const parsed = JSON.parse(raw) as { script?: unknown; style?: unknown };
  const safe = (v: unknown, dir: string): v is string => typeof v === 'string' && new RegExp(`^${dir}/[A-Za-z0-9._-]+$`).test(v);
  if (!safe(parsed.script, 'js')) throw new Error(`${MANIFEST_FILE} names no script`);
  return { script: parsed.script, style: safe(parsed.style, 'css') ? parsed.style : null };
}

export interface UiRegistrarDeps {
  nextcloud: NextcloudClient;
  exAppDir: string;
  appVersion: string;
  logger: Logger;
}

/** The "Talk AI" top-menu page with its script, style and initial state (contract §4). */
export function uiRegistrar(deps: UiRegistrarDeps): Registrar {
  const ocs = (method: 'POST' | 'DELETE', part: UiPart, body: Record<string, unknown>) => uiCall(deps.nextcloud, method, part, body);
  const removeTopMenu = async (): Promise<boolean> => {
    try {
      // AppAPI removes the entry's scripts, styles and initial states with it [85-unregister].
      await ocs('DELETE', 'top-menu', { name: TOP_MENU_NAME });
      return true;
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return false;
      throw err;
    }
  };
  return {
    name: 'the app page',
    register: async () => {
      const assets = await readFrontendAssets(deps.exAppDir);
      if (!assets) deps.logger.warn({ manifest: MANIFEST_FILE }, 'frontend not built; registering the unhashed bundle names');
      const script = assets?.script ?? 'js/educai-main';
      const style = assets ? assets.style : 'css/educai-style';
      // Start clean so that the bundle names of an earlier version do not stay registered.
      await removeTopMenu();
      await ocs('POST', 'top-menu', { name: TOP_MENU_NAME, displayName: TOP_MENU_DISPLAY_NAME, icon: 'img/app.svg', adminRequired: 0 });
      await ocs('POST', 'initial-state', {
        type: 'top_menu',
        name: TOP_MENU_NAME,
        key: INITIAL_STATE_KEY,
        value: { appId: 'educai', version: deps.appVersion },
      });
      await ocs('POST', 'script', { type: 'top_menu', name: TOP_MENU_NAME, path: script, afterAppId: '' });
      if (style) await ocs('POST', 'style', { type: 'top_menu', name: TOP_MENU_NAME, path: style });
      deps.logger.info({ script, style }, 'app page registered');
    },
    unregister: async () => {
      const removed = await removeTopMenu();
      deps.logger.info({ removed }, 'app page unregistered');
    },
  };
}
