// The language of the fixed messages a bot writes into Talk (onboarding, refusals, errors,
// confirmations): the Nextcloud language of the person a turn answers, carried through that
// turn, English when it is unknown (guests, a failed lookup). Model answers follow the user anyway.
import { AsyncLocalStorage } from 'node:async_hooks';

export const TALK_LANGUAGES = ['en', 'de'] as const;
export type TalkLanguage = (typeof TALK_LANGUAGES)[number];

const storage = new AsyncLocalStorage<TalkLanguage>();

/**
 * Nextcloud's language code ("de", "de_DE", "de-CH", "en_GB") as one we write. The German texts
 * use neutral forms (no du/Sie), so Nextcloud's informal "de" and formal "de_DE" share them.
 */
export function talkLanguageOf(code: string | null | undefined): TalkLanguage {
  const base = (code ?? '').trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return (TALK_LANGUAGES as readonly string[]).includes(base) ? (base as TalkLanguage) : 'en';
}

export function withTalkLanguage<T>(language: TalkLanguage, fn: () => T): T {
  return storage.run(language, fn);
}

export function currentTalkLanguage(): TalkLanguage {
  return storage.getStore() ?? 'en';
}

/** A catalogue per language; the returned function picks the one of the current turn. */
export function localized<T>(catalogue: Record<TalkLanguage, T>): () => T {
  return () => catalogue[currentTalkLanguage()];
}
