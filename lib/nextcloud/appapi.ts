// AppAPI's OCS endpoints as an ExApp calls them (contract §4, §7), plus webhook_listeners and the two
// core OCS reads AppAPI routes need. One function per endpoint, in the manner of nc_py_api: callers pass
// domain values and keep their own logic (when to call, which errors to tolerate). Each function sends
// exactly what its caller sent before issue 21; errors are NextcloudError subclasses as from `ocs()`.
import type { NextcloudClient, NextcloudSession } from './client.ts';
import type { ActingUser } from './identity.ts';

const EX_APP = '/ocs/v1.php/apps/app_api/ex-app';
const API = '/ocs/v1.php/apps/app_api/api/v1';
const WEBHOOKS = '/ocs/v2.php/apps/webhook_listeners/api/v1/webhooks';

/** One row of AppAPI's `get-values` answers (test/fixtures/nextcloud29/88-appapi-config-and-preferences.json). */
export interface ConfigRow {
  configkey?: unknown;
  configvalue?: unknown;
}

/** Only string key/value pairs are kept; AppAPI omits keys it does not hold. */
function rowsToMap(rows: unknown): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of Array.isArray(rows) ? (rows as ConfigRow[]) : [])
    if (typeof r.configkey === 'string' && typeof r.configvalue === 'string') out.set(r.configkey, r.configvalue);
  return out;
}

// --- ex-app state and init progress

/** PUT ex-app/status with an init progress (0–100); `timeoutMs` because 100 makes AppAPI enable the app in that request. */
export async function reportInitProgress(client: NextcloudClient, progress: number, timeoutMs: number): Promise<void> {
  await client.system().ocs('PUT', `${EX_APP}/status`, { body: { progress }, timeoutMs });
}

/** PUT ex-app/status with progress 0 and an error text (AppAPI shows it to the admin). */
export async function reportInitError(client: NextcloudClient, error: string): Promise<void> {
  await client.system().ocs('PUT', `${EX_APP}/status`, { body: { progress: 0, error } });
}

/** GET ex-app/state: the stored enabled flag, raw (1 or 0, test/fixtures/nextcloud33/appapi-ex-app-state.json). */
export async function readExAppState(client: NextcloudClient, timeoutMs: number): Promise<unknown> {
  return client.system().ocs<unknown>('GET', `${EX_APP}/state`, { timeoutMs });
}

// --- log

/** POST api/v1/log: one line into nextcloud.log at AppAPI's numeric level. */
export async function postLog(client: NextcloudClient, level: number, message: string, timeoutMs: number): Promise<void> {
  await client.system().ocs('POST', `${API}/log`, { body: { level, message }, timeoutMs });
}

// --- UI: top menu, initial state, scripts, styles

export type UiPart = 'top-menu' | 'initial-state' | 'script' | 'style';

/** POST (register) or DELETE (unregister) one UI part under api/v1/ui; `body` is AppAPI's field set for that part. */
export async function uiCall(client: NextcloudClient, method: 'POST' | 'DELETE', part: UiPart, body: Record<string, unknown>): Promise<void> {
  await client.system().ocs(method, `${API}/ui/${part}`, { body });
}

/** The browser address of an ExApp's embedded top-menu page (test/fixtures/nextcloud29/87-appapi-embedded-page-and-proxy.json). */
export function embeddedPageUrl(nextcloudUrl: string, appId: string, name: string): string {
  const base = nextcloudUrl.replace(/\/index\.php\/?$/, '').replace(/\/+$/, '');
  return `${base}/index.php/apps/app_api/embedded/${appId}/${name}`;
}

// --- declarative settings (test/fixtures/nextcloud29/86-appapi-declarative-settings.json)

export async function registerSettingsForm(client: NextcloudClient, formScheme: unknown): Promise<void> {
  await client.system().ocs('POST', `${API}/ui/settings`, { body: { formScheme } });
}

/** A form AppAPI does not hold answers NextcloudNotFoundError. */
export async function unregisterSettingsForm(client: NextcloudClient, formId: string): Promise<void> {
  await client.system().ocs('DELETE', `${API}/ui/settings`, { body: { formId } });
}

// --- app config (as nobody) and user preferences (as the user)

export async function getAppConfigValues(client: NextcloudClient, keys: string[]): Promise<Map<string, string>> {
  return rowsToMap(await client.system().ocs<unknown>('POST', `${API}/ex-app/config/get-values`, { body: { configKeys: keys } }));
}

export async function setAppConfigValue(client: NextcloudClient, key: string, value: string): Promise<void> {
  await client.system().ocs('POST', `${API}/ex-app/config`, { body: { configKey: key, configValue: value } });
}

/** AppAPI takes the user from the session's auth header. */
export async function getUserPreferenceValues(session: NextcloudSession, keys: string[]): Promise<Map<string, string>> {
  return rowsToMap(await session.ocs<unknown>('POST', `${API}/ex-app/preference/get-values`, { body: { configKeys: keys } }));
}

export async function setUserPreferenceValue(session: NextcloudSession, key: string, value: string): Promise<void> {
  await session.ocs('POST', `${API}/ex-app/preference`, { body: { configKey: key, configValue: value } });
}

// --- webhook_listeners (NC 30+; 404 where missing, test/fixtures/nextcloud33/webhook-listeners.json)

export interface WebhookRegistration {
  event: string;
  uri: string;
  eventFilter?: Record<string, unknown>;
}

export async function deleteWebhooksByApp(client: NextcloudClient, appId: string): Promise<void> {
  await client.system().ocs('DELETE', `${WEBHOOKS}/byappid/{appId}`, { params: { appId } });
}

export async function registerWebhook(client: NextcloudClient, w: WebhookRegistration): Promise<void> {
  await client
    .system()
    .ocs('POST', WEBHOOKS, { body: { httpMethod: 'POST', uri: w.uri, event: w.event, ...(w.eventFilter ? { eventFilter: w.eventFilter } : {}) } });
}

// --- core reads used by AppAPI routes

export interface CloudUser {
  id: string;
  groups?: string[];
}

/** GET cloud/user as `user`: their id and groups (the admin check). */
export async function currentCloudUser(client: NextcloudClient, user: ActingUser): Promise<CloudUser> {
  return client.as(user).ocs<CloudUser>('GET', '/ocs/v2.php/cloud/user');
}

export interface GroupDetails {
  groups?: Array<{ id?: unknown; displayname?: unknown }>;
}

/** GET cloud/groups/details as `user` (admins see all groups, sub-admins theirs). */
export async function groupDetails(client: NextcloudClient, user: ActingUser, limit: number): Promise<GroupDetails | null> {
  return client.as(user).ocs<GroupDetails | null>('GET', '/ocs/v2.php/cloud/groups/details', { query: { limit } });
}
