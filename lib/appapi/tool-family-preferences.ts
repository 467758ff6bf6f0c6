// Which first-party tool families a user lets their bots use: the personal declarative form's value,
// stored by AppAPI as the user's ExApp preference (contract §7; test/fixtures/nextcloud29/
// 88-appapi-config-and-preferences.json). The app page writes the same preference through us, because
// Nextcloud 29 refuses a non-admin's save on a personal form (test/fixtures/nextcloud29/86-appapi-declarative-settings.json).
import type { Logger } from '../log/logger.ts';
import { getUserPreferenceValues, setUserPreferenceValue } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { TOOL_FAMILIES, TOOL_FAMILIES_KEY, type ToolFamilyName } from './settings-forms.ts';

export type ToolFamilyChoice = Record<ToolFamilyName, boolean>;

export function isToolFamily(value: unknown): value is ToolFamilyName {
  return typeof value === 'string' && (TOOL_FAMILIES as readonly string[]).includes(value);
}

/** Unset, or a family the stored object does not name (added later): enabled, like the form's default. */
export function parseToolFamilies(stored: string | undefined): ToolFamilyChoice {
  const choice = Object.fromEntries(TOOL_FAMILIES.map((f) => [f, true])) as ToolFamilyChoice;
  if (stored === undefined || stored === '') return choice;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return choice;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return choice;
  for (const f of TOOL_FAMILIES) {
    const v = (parsed as Record<string, unknown>)[f];
    if (typeof v === 'boolean') choice[f] = v;
  }
  return choice;
}

export class ToolFamilyPreferences {
  readonly #nextcloud: NextcloudClient;
  readonly #logger: Logger;

  constructor(nextcloud: NextcloudClient, logger: Logger) {
    this.#nextcloud = nextcloud;
    this.#logger = logger;
  }

  /** Read as the user (AppAPI takes the user from the auth header); a failure throws. */
  async get(user: ActingUser): Promise<ToolFamilyChoice> {
    const values = await getUserPreferenceValues(this.#nextcloud.as(user), [TOOL_FAMILIES_KEY]);
    return parseToolFamilies(values.get(TOOL_FAMILIES_KEY));
  }

  async enabled(user: ActingUser): Promise<Set<ToolFamilyName>> {
    const choice = await this.get(user);
    return new Set(TOOL_FAMILIES.filter((f) => choice[f]));
  }

  /** Stored as the JSON object the multi-checkbox form writes, so both places show the same choice. */
  async set(user: ActingUser, choice: ToolFamilyChoice): Promise<ToolFamilyChoice> {
    const value = JSON.stringify(Object.fromEntries(TOOL_FAMILIES.map((f) => [f, choice[f]])));
    await setUserPreferenceValue(this.#nextcloud.as(user), TOOL_FAMILIES_KEY, value);
    this.#logger.info({ uid: user.uid, enabled: TOOL_FAMILIES.filter((f) => choice[f]) }, 'tool families chosen');
    return this.get(user);
  }
}
