// AppAPI's own OCS endpoints (captures 10, 25, 30, 60, 85, 86, 88, 89).
import { randomInt } from 'node:crypto';
import { internalServerError, ocsData, ocsFailure } from './ocs.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';
import type { FakeTalk } from './talk.ts';
import type { UserDirectory } from './users.ts';

export interface RegisteredTalkBot {
  id: string;
  name: string;
  description: string;
  secret: string;
}

export interface FakeUiRegistry {
  topMenus: Map<string, object>;
  /** Keyed `${type}/${name}/${path}`. */
  scripts: Map<string, object>;
  /** Keyed `${type}/${name}/${path}`. */
  styles: Map<string, object>;
  /** Keyed `${type}/${name}/${key}`. */
  initialStates: Map<string, object>;
  /** Keyed by form id; the stored scheme including `storage_type: "external"`. */
  settingsForms: Map<string, object>;
  fileActions: Map<string, object>;
}

// ISecureRandom::CHAR_HUMAN_READABLE, which AppAPI uses for bot secrets.
const HUMAN_READABLE = 'abcdefgijkmnopqrstwxyzABCDEFGHJKLMNPQRSTWXYZ23456789';

function humanReadableSecret(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += HUMAN_READABLE[randomInt(HUMAN_READABLE.length)];
  return out;
}

/** How PHP casts a request value to string when AppAPI stores it (capture 88: arrays become "Array"). */
export function phpString(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value === true) return '1';
  if (typeof value === 'object') return 'Array';
  return String(value);
}

function str(v: unknown, fallback = ''): string {
  return v === undefined || v === null ? fallback : String(v);
}

function keyList(v: unknown): string[] {
  return Array.isArray(v) ? v.map((x) => String(x)) : [];
}

export class FakeAppApi {
  readonly statusReports: Array<{ progress: number; error?: string }> = [];
  readonly logs: Array<{ level: number; message: string }> = [];
  readonly talkBots = new Map<string, RegisteredTalkBot>();
  readonly ui: FakeUiRegistry = {
    topMenus: new Map(),
    scripts: new Map(),
    styles: new Map(),
    initialStates: new Map(),
    settingsForms: new Map(),
    fileActions: new Map(),
  };
  readonly appConfig = new Map<string, string>();
  readonly appConfigSensitive = new Map<string, number>();
  readonly preferences = new Map<string, Map<string, string>>();
  readonly notifications: Array<{ user: string; params: object }> = [];
  /** AppAPI's view of the install: progress reaches 100 once, then further reports are ignored. */
  readonly initState = { progress: 0, error: '' };
  /**
   * AppAPI enables the app inside the request that reports 100 (minutes on a slow Docker host); a
   * reverse proxy in front of Nextcloud may give up first. Set to answer that report with a 504
   * although AppAPI went on and enabled the app.
   */
  finalReportTimesOut = false;

  readonly #appId: string;
  readonly #talk: FakeTalk;
  readonly #users: UserDirectory;
  readonly #now: () => number;
  readonly #rowIds = new Map<string, number>();
  #nextRowId = 1;

  constructor(appId: string, talk: FakeTalk, users: UserDirectory, now: () => number) {
    this.#appId = appId;
    this.#talk = talk;
    this.#users = users;
    this.#now = now;
  }

  /** Stable row id per stored entry, like a database primary key. */
  #rowId(kind: string, key: string): number {
    const k = `${kind}\u0000${key}`;
    let id = this.#rowIds.get(k);
    if (id === undefined) {
      id = this.#nextRowId++;
      this.#rowIds.set(k, id);
    }
    return id;
  }

  routes(baseUrl: () => string): FakeRoute[] {
    const A = '/apps/app_api';
    const ok = (ctx: RouteContext, data: unknown = []): FakeReply => ocsData(ctx.version, ctx.format, data);
    const fail = (ctx: RouteContext, status: number, message: string): FakeReply => ocsFailure(ctx.version, ctx.format, status, message);
    const appapi = (method: string, path: string, handle: FakeRoute['handle']): FakeRoute => ({
      method,
      path: new RegExp(`^${A}${path}$`),
      access: 'appapi',
      csrf: false,
      handle,
    });

    const uiEntry = (
      what: 'scripts' | 'styles' | 'initialStates',
      missing: string,
      keyParam: 'path' | 'key',
      build: (ctx: RouteContext, id: number) => object,
    ): FakeRoute[] => {
      const segment = what === 'scripts' ? 'script' : what === 'styles' ? 'style' : 'initial-state';
      const mapKey = (ctx: RouteContext): string => `${str(ctx.params['type'])}/${str(ctx.params['name'])}/${str(ctx.params[keyParam])}`;
      return [
        appapi('POST', `/api/v1/ui/${segment}`, (ctx) => {
          const key = mapKey(ctx);
          this.ui[what].set(key, build(ctx, this.#rowId(what, key)));
          return ok(ctx);
        }),
        appapi('DELETE', `/api/v1/ui/${segment}`, (ctx) => (this.ui[what].delete(mapKey(ctx)) ? ok(ctx) : fail(ctx, 404, missing))),
        appapi('GET', `/api/v1/ui/${segment}`, (ctx) => {
          const entry = this.ui[what].get(mapKey(ctx));
          return entry ? ok(ctx, entry) : fail(ctx, 404, missing);
        }),
      ];
    };

    return [
      ...['/ex-app/status', '/apps/status/[^/]+'].map((path) =>
        appapi('PUT', path, (ctx) => {
          const progress = Number(ctx.params['progress']);
          const error = str(ctx.params['error']);
          this.statusReports.push(error === '' ? { progress } : { progress, error });
          // Out of range throws inside AppAPI and surfaces as the generic 996.
          if (!Number.isInteger(progress) || progress < 0 || progress > 100) return internalServerError(ctx.version, ctx.format);
          // AppAPI ignores later reports once at 100, except one with progress 0 (setAppInitProgress).
          if (this.initState.progress === 100 && progress !== 0) return ok(ctx);
          if (error !== '') this.initState.error = error;
          else if (this.initState.progress < 100) this.initState.progress = progress;
          if (progress === 100 && this.finalReportTimesOut)
            return { status: 504, headers: { 'content-type': 'text/html' }, body: '<html>Gateway Time-out</html>' };
          return ok(ctx);
        }),
      ),
      // Enabled: init reached 100 and no error was reported after it.
      // AppAPI answers its integer `enabled` column (test/fixtures/nextcloud33/appapi-ex-app-state.json).
      appapi('GET', '/ex-app/state', (ctx) => ok(ctx, this.initState.progress === 100 && this.initState.error === '' ? 1 : 0)),
      appapi('POST', '/api/v1/log', (ctx) => {
        const level = Number(ctx.params['level']);
        if (!Number.isInteger(level) || level < 0 || level > 4) return fail(ctx, 400, 'Invalid log level');
        this.logs.push({ level, message: str(ctx.params['message']) });
        return ok(ctx);
      }),
      appapi('GET', '/api/v1/users', (ctx) => ok(ctx, this.#users.ids())),

      // Talk bots: id = sha1(appId_route), 64-char secret kept across re-registration.
      appapi('POST', '/api/v1/talk_bot', (ctx) => {
        const name = str(ctx.params['name']);
        const description = str(ctx.params['description']);
        const route = str(ctx.params['route']).replace(/^\/+/, '');
        // Talk's BotService::validateBotParameters counts bytes (PHP strlen), not characters.
        if (name.length < 1 || Buffer.byteLength(name) > 64 || route === '' || Buffer.byteLength(description) > 4000) {
          return fail(ctx, 400, 'Talk bots could not be registered');
        }
        const secret = this.talkBots.get(route)?.secret ?? humanReadableSecret(64);
        const bot = this.#talk.installBot({ route, name, description, secret, baseUrl: baseUrl() });
        this.talkBots.set(route, { id: bot.appApiId, name, description, secret });
        return ok(ctx, { id: bot.appApiId, secret });
      }),
      appapi('DELETE', '/api/v1/talk_bot', (ctx) => {
        const route = str(ctx.params['route']).replace(/^\/+/, '');
        if (!this.talkBots.delete(route)) return fail(ctx, 404, '');
        this.#talk.uninstallBot(route);
        return ok(ctx, true);
      }),

      // UI
      appapi('POST', '/api/v1/ui/top-menu', (ctx) => {
        const name = str(ctx.params['name']);
        this.ui.topMenus.set(name, {
          id: this.#rowId('top-menu', name),
          appid: this.#appId,
          name,
          display_name: str(ctx.params['displayName']),
          icon: str(ctx.params['icon']),
          admin_required: Number(ctx.params['adminRequired'] ?? 0) ? 1 : 0,
        });
        return ok(ctx);
      }),
      appapi('DELETE', '/api/v1/ui/top-menu', (ctx) => {
        const name = str(ctx.params['name']);
        if (!this.ui.topMenus.delete(name)) return fail(ctx, 404, 'No such Top Menu entry');
        // Removing the entry takes its scripts, styles and initial states with it (capture 85-unregister).
        for (const map of [this.ui.scripts, this.ui.styles, this.ui.initialStates]) {
          for (const key of [...map.keys()]) if (key.startsWith(`top_menu/${name}/`)) map.delete(key);
        }
        return ok(ctx);
      }),
      appapi('GET', '/api/v1/ui/top-menu', (ctx) => {
        const entry = this.ui.topMenus.get(str(ctx.params['name']));
        return entry ? ok(ctx, entry) : fail(ctx, 404, 'No such Top Menu entry');
      }),
      ...uiEntry('initialStates', 'No such InitialState', 'key', (ctx, id) => ({
        id,
        appid: this.#appId,
        type: str(ctx.params['type']),
        name: str(ctx.params['name']),
        key: str(ctx.params['key']),
        value: ctx.params['value'] ?? [],
      })),
      ...uiEntry('scripts', 'No such Script', 'path', (ctx, id) => ({
        id,
        appid: this.#appId,
        type: str(ctx.params['type']),
        name: str(ctx.params['name']),
        path: str(ctx.params['path']),
        after_app_id: str(ctx.params['afterAppId']),
      })),
      ...uiEntry('styles', 'No such Style', 'path', (ctx, id) => ({
        id,
        appid: this.#appId,
        type: str(ctx.params['type']),
        name: str(ctx.params['name']),
        path: str(ctx.params['path']),
      })),
      ...['v1', 'v2'].map((v) =>
        appapi('POST', `/api/${v}/ui/files-actions-menu`, (ctx) => {
          const name = str(ctx.params['name']);
          this.ui.fileActions.set(name, { ...ctx.params, version: v });
          return ok(ctx);
        }),
      ),
      appapi('DELETE', '/api/v1/ui/files-actions-menu', (ctx) =>
        this.ui.fileActions.delete(str(ctx.params['name'])) ? ok(ctx) : fail(ctx, 404, 'No such file action menu'),
      ),
      appapi('POST', '/api/v1/ui/settings', (ctx) => {
        const scheme = ctx.params['formScheme'];
        if (scheme === null || typeof scheme !== 'object' || Array.isArray(scheme)) return fail(ctx, 400, '');
        const id = str((scheme as Record<string, unknown>)['id']);
        // AppAPI accepts schemas core later rejects (capture 86); it only forces external storage.
        this.ui.settingsForms.set(id, { ...(scheme as object), storage_type: 'external' });
        return ok(ctx);
      }),
      appapi('DELETE', '/api/v1/ui/settings', (ctx) => (this.ui.settingsForms.delete(str(ctx.params['formId'])) ? ok(ctx) : fail(ctx, 404, ''))),
      appapi('GET', '/api/v1/ui/settings', (ctx) => {
        const form = this.ui.settingsForms.get(str(ctx.params['formId']));
        return form ? ok(ctx, form) : fail(ctx, 404, '');
      }),

      // App config: values always come back as strings, sorted by key, missing keys left out.
      appapi('POST', '/api/v1/ex-app/config', (ctx) => {
        const key = str(ctx.params['configKey']);
        if (key === '') return fail(ctx, 400, 'Config key cannot be empty');
        const value = phpString(ctx.params['configValue']);
        const sensitiveRaw = ctx.params['sensitive'];
        const sensitive = sensitiveRaw === undefined ? (this.appConfigSensitive.get(key) ?? 0) : Number(sensitiveRaw) ? 1 : 0;
        this.appConfig.set(key, value);
        this.appConfigSensitive.set(key, sensitive);
        return ok(ctx, { id: this.#rowId('config', key), appid: this.#appId, configkey: key, configvalue: value, sensitive });
      }),
      appapi('POST', '/api/v1/ex-app/config/get-values', (ctx) => ok(ctx, this.#values(this.appConfig, keyList(ctx.params['configKeys'])))),
      appapi('DELETE', '/api/v1/ex-app/config', (ctx) => {
        let n = 0;
        for (const key of keyList(ctx.params['configKeys'])) {
          if (this.appConfig.delete(key)) n++;
          this.appConfigSensitive.delete(key);
        }
        return n > 0 ? ok(ctx, n) : fail(ctx, 404, 'No appconfig_ex values deleted');
      }),

      // Preferences: the user is the one in AUTHORIZATION-APP-API; none means a crash (capture 88: 996).
      appapi('POST', '/api/v1/ex-app/preference', (ctx) => {
        const uid = ctx.user ?? '';
        if (uid === '') return internalServerError(ctx.version, ctx.format);
        const key = str(ctx.params['configKey']);
        if (key === '') return fail(ctx, 400, 'Config key cannot be empty');
        const value = phpString(ctx.params['configValue']);
        const prefs = this.preferences.get(uid) ?? new Map<string, string>();
        prefs.set(key, value);
        this.preferences.set(uid, prefs);
        return ok(ctx, { id: this.#rowId('pref', `${uid}\u0000${key}`), user_id: uid, appid: this.#appId, configkey: key, configvalue: value });
      }),
      appapi('POST', '/api/v1/ex-app/preference/get-values', (ctx) => {
        const uid = ctx.user ?? '';
        if (uid === '') return internalServerError(ctx.version, ctx.format);
        return ok(ctx, this.#values(this.preferences.get(uid) ?? new Map(), keyList(ctx.params['configKeys'])));
      }),
      appapi('DELETE', '/api/v1/ex-app/preference', (ctx) => {
        const uid = ctx.user ?? '';
        if (uid === '') return internalServerError(ctx.version, ctx.format);
        const prefs = this.preferences.get(uid);
        let n = 0;
        for (const key of keyList(ctx.params['configKeys'])) if (prefs?.delete(key)) n++;
        return n > 0 ? ok(ctx, n) : fail(ctx, 404, 'No preferences_ex values deleted');
      }),

      // Notification to the header user; AppAPI answers with empty subject/message (capture 89).
      appapi('POST', '/api/v1/notification', (ctx) => {
        const uid = ctx.user ?? '';
        if (uid === '') return internalServerError(ctx.version, ctx.format);
        const params = (ctx.params['params'] ?? {}) as Record<string, unknown>;
        this.notifications.push({ user: uid, params });
        return ok(ctx, {
          app: this.#appId,
          user: uid,
          datetime: new Date(this.#now()).toISOString().replace(/\.\d{3}Z$/, '+00:00'),
          object_type: str(params['object']),
          object_id: str(params['object_id']),
          subject: '',
          message: '',
          link: '',
          icon: '',
        });
      }),
    ];
  }

  #values(store: Map<string, string>, keys: string[]): Array<{ configkey: string; configvalue: string }> {
    return [...new Set(keys)]
      .filter((k) => store.has(k))
      .sort()
      .map((k) => ({ configkey: k, configvalue: store.get(k) ?? '' }));
  }
}
