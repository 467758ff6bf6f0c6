// Translations of the app page. Strings go through Nextcloud's l10n registry, so AppAPI's injected
// l10n/<lang>.js works as in PHP apps; when it is missing (manual installs without the l10n folder
// on the server), the page loads l10n/<lang>.json from the ExApp through the proxy.
import { getLanguage, register, translate, translatePlural } from '@nextcloud/l10n';

// Vue escapes interpolated text itself and the page renders no raw HTML (S22), so placeholders are not HTML-escaped
// here; otherwise a name like "O'Brien" would show as "O&#39;Brien".
const RAW = { escape: false, sanitize: false } as const;

type Vars = Record<string, string | number>;

export function t(app: string, text: string, vars?: Vars): string {
  return translate(app, text, (vars ?? {}) as never, RAW);
}

export function n(app: string, singular: string, plural: string, count: number, vars?: Vars): string {
  return translatePlural(app, singular, plural, count, (vars ?? {}) as never, RAW);
}

function registered(app: string): boolean {
  const registry = (globalThis as { _oc_l10n_registry_translations?: Record<string, Record<string, unknown>> })._oc_l10n_registry_translations;
  return Object.keys(registry?.[app] ?? {}).length > 0;
}

/** Candidate files for a Nextcloud language code: de_DE → de_DE, de. */
export function languageFiles(language: string): string[] {
  const clean = language.replace(/-/g, '_');
  if (!/^[A-Za-z]{2,3}(_[A-Za-z0-9]{2,8})*$/.test(clean)) return [];
  const base = clean.split('_')[0]!;
  return clean === base ? [clean] : [clean, base];
}

export async function loadTranslations(app: string, base: string): Promise<void> {
  const language = getLanguage();
  if (!language || language === 'en' || registered(app)) return;
  for (const name of languageFiles(language)) {
    try {
      const res = await fetch(`${base}/l10n/${name}.json`, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
      if (!res.ok) continue;
      const bundle = (await res.json()) as { translations?: Record<string, string | string[]> };
      if (bundle.translations) register(app, bundle.translations);
      return;
    } catch {
      // Untranslated is better than no page.
      return;
    }
  }
}
