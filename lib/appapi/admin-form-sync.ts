// The admin declarative form's values (default model, per-user hourly limit, memory size) live in the
// ExApp's app config, where AppAPI stores what the admin saves in Nextcloud's settings (contract §4, §7;
// test/fixtures/nextcloud29/88-appapi-config-and-preferences.json). Our own settings stay the source the app uses; this keeps both in step: a value that
// changed in Nextcloud since we last saw it is applied here, and a value changed on the app page is
// written back so the form shows it.
import type { LlmSettingsService } from '../llm/llm-settings.ts';
import type { Logger } from '../log/logger.ts';
import { getAppConfigValues, setAppConfigValue } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { loadRateLimitSettings, parseRateLimitSettings, RATELIMIT_SETTINGS_KEY } from '../ratelimit/rate-limit-settings.ts';
import type { SettingsStore } from '../storage/settings-store.ts';
import { ADMIN_FIELDS } from './settings-forms.ts';

/** The Nextcloud values seen at the last reconciliation, so a change there is told from a change here. */
export const ADMIN_FORM_SEEN_KEY = 'appapi.admin-form.seen';

type Key = (typeof ADMIN_FIELDS)[keyof typeof ADMIN_FIELDS];
const KEYS = Object.values(ADMIN_FIELDS) as Key[];

export interface AdminFormSyncDeps {
  nextcloud: NextcloudClient;
  settings: SettingsStore;
  llmSettings: LlmSettingsService;
  logger: Logger;
  /** After a value from Nextcloud was applied, so the processing side reloads it. */
  onApplied?: () => Promise<void>;
}

export interface ReconcileResult {
  applied: Key[];
  written: Key[];
  refused: Key[];
}

function wholeNumber(value: string): number | null {
  return /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) : null;
}

export class AdminFormSync {
  readonly #deps: AdminFormSyncDeps;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: AdminFormSyncDeps) {
    this.#deps = deps;
  }

  /** One at a time; a failure is returned to the caller (who logs it), the next run starts fresh. */
  reconcile(): Promise<ReconcileResult> {
    const run = this.#queue.then(() => this.#reconcile());
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #ours(): Promise<Record<Key, string>> {
    const llm = await this.#deps.llmSettings.get();
    const limits = await loadRateLimitSettings(this.#deps.settings, this.#deps.logger);
    return {
      [ADMIN_FIELDS.defaultModel]: llm.defaultModel ?? '',
      [ADMIN_FIELDS.userRequestsPerHour]: String(limits.chat.user.hour ?? 0),
      [ADMIN_FIELDS.memoryTokens]: String(llm.conversationMemoryTokens),
    } as Record<Key, string>;
  }

  /** false: the value is not acceptable here (it is then replaced in Nextcloud by ours). */
  async #apply(key: Key, value: string): Promise<boolean> {
    try {
      if (key === ADMIN_FIELDS.defaultModel) {
        await this.#deps.llmSettings.update({ defaultModel: value.trim() === '' ? null : value.trim() });
      } else if (key === ADMIN_FIELDS.memoryTokens) {
        const n = wholeNumber(value);
        if (n === null) return false;
        await this.#deps.llmSettings.update({ conversationMemoryTokens: n });
      } else {
        const n = wholeNumber(value);
        if (n === null) return false;
        const current = await loadRateLimitSettings(this.#deps.settings, this.#deps.logger);
        const parsed = parseRateLimitSettings({ ...current, chat: { ...current.chat, user: { ...current.chat.user, hour: n === 0 ? null : n } } });
        if (!parsed.ok) return false;
        await this.#deps.settings.set(RATELIMIT_SETTINGS_KEY, parsed.settings);
      }
      return true;
    } catch (err) {
      // The settings services answer a bad value with a 400 HttpError; the field name is enough here.
      if (err instanceof Error && 'status' in err && (err as { status: unknown }).status === 400) return false;
      throw err;
    }
  }

  async #reconcile(): Promise<ReconcileResult> {
    const nc = await getAppConfigValues(this.#deps.nextcloud, KEYS);
    const seen = { ...((await this.#deps.settings.get<Record<string, string>>(ADMIN_FORM_SEEN_KEY)) ?? {}) };
    const result: ReconcileResult = { applied: [], written: [], refused: [] };
    let ours = await this.#ours();
    for (const key of KEYS) {
      const there = nc.get(key);
      if (there !== undefined && there !== seen[key] && there !== ours[key]) {
        if (await this.#apply(key, there)) {
          result.applied.push(key);
          seen[key] = there;
          ours = await this.#ours();
          continue;
        }
        result.refused.push(key);
      }
      if (there !== ours[key]) {
        await setAppConfigValue(this.#deps.nextcloud, key, ours[key]);
        result.written.push(key);
      }
      seen[key] = ours[key];
    }
    await this.#deps.settings.set(ADMIN_FORM_SEEN_KEY, seen);
    if (result.applied.length > 0 || result.refused.length > 0 || result.written.length > 0) {
      this.#deps.logger.info({ ...result }, 'admin settings form reconciled');
    }
    if (result.applied.length > 0) await this.#deps.onApplied?.();
    return result;
  }
}
