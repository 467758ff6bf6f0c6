// Admin settings of the agent loop: iteration cap and the forced-search phrases per language.
import { z } from 'zod';
import type { SettingsStore } from '../storage/settings-store.ts';
import { MAX_TOOL_ITERATIONS } from './loop-guard.ts';

export const AGENT_SETTINGS_KEY = 'agent.settings';

export interface AgentSettings {
  /** At most MAX_TOOL_ITERATIONS (50); an admin may lower it. */
  maxIterations: number;
  /**
   * Phrases per language code that make the first model call use a read-only
   * search tool ("search the web", "suche im internet", …). Matched case-insensitively.
   */
  forcedSearchPhrases: Record<string, string[]>;
}

/** Defaults for English, German, French, Spanish, Italian and Dutch; admins add or replace languages. */
export const DEFAULT_FORCED_SEARCH_PHRASES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  en: [
    'search the web',
    'search online',
    'web search',
    'search the internet',
    'look it up online',
    'use the web',
    'google it',
    'latest news',
    'use a tool',
    'tool call',
  ],
  de: [
    'websuche',
    'suche im web',
    'suche im internet',
    'such im internet',
    'im internet suchen',
    'recherchiere',
    'internet recherchieren',
    'nutze das tool',
    'aktuelle nachrichten',
  ],
  fr: [
    'recherche sur le web',
    'cherche sur le web',
    'recherche sur internet',
    'cherche sur internet',
    'recherche en ligne',
    "utilise l'outil",
    'dernières nouvelles',
  ],
  es: ['busca en internet', 'busca en la web', 'buscar en internet', 'búsqueda web', 'busca en línea', 'usa la herramienta', 'últimas noticias'],
  it: ['cerca sul web', 'cerca su internet', 'cerca online', 'ricerca online', 'ricerca sul web', 'usa lo strumento', 'ultime notizie'],
  nl: ['zoek op internet', 'zoek online', 'zoek op het web', 'zoeken op internet', 'gebruik de tool', 'laatste nieuws'],
});

export const AGENT_DEFAULTS: Readonly<AgentSettings> = Object.freeze({
  maxIterations: MAX_TOOL_ITERATIONS,
  forcedSearchPhrases: Object.fromEntries(Object.entries(DEFAULT_FORCED_SEARCH_PHRASES).map(([k, v]) => [k, [...v]])),
});

const phrase = z
  .string({ error: 'Every phrase must be a text' })
  .transform((v) => v.normalize('NFC').replace(/\s+/g, ' ').trim().toLowerCase())
  .pipe(z.string().min(2, 'A phrase needs at least 2 characters').max(100, 'A phrase has at most 100 characters'))
  .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), 'No control characters');

export const agentSettingsSchema = z
  .object({
    maxIterations: z
      .number({ error: 'Must be a whole number' })
      .int('Must be a whole number')
      .min(1, 'At least 1')
      .max(MAX_TOOL_ITERATIONS, `At most ${MAX_TOOL_ITERATIONS}`),
    forcedSearchPhrases: z
      .record(
        z.string().regex(/^[a-z]{2,3}(-[a-z0-9]{2,8})?$/, 'Use a language code such as "en" or "pt-br"'),
        z.array(phrase).max(200, 'At most 200 phrases per language'),
      )
      .refine((r) => Object.keys(r).length <= 50, 'At most 50 languages')
      .transform((r) => Object.fromEntries(Object.entries(r).map(([lang, list]) => [lang, [...new Set(list)]]))),
  })
  .strict();

/** Validates complete settings; errors map dotted fields to messages. */
export function parseAgentSettings(value: unknown): { ok: true; settings: AgentSettings } | { ok: false; errors: Record<string, string> } {
  const parsed = agentSettingsSchema.safeParse(value);
  if (parsed.success) return { ok: true, settings: parsed.data };
  const errors: Record<string, string> = {};
  for (const issue of parsed.error.issues) {
    // A bad record key (a language code): name the key and say what is wrong with it, not "Invalid key in record".
    const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : 'input';
    errors[key] ??= message;
  }
  return { ok: false, errors };
}

/** The stored settings over the defaults; invalid stored values fall back to the defaults. */
export async function loadAgentSettings(store: SettingsStore): Promise<AgentSettings> {
  const stored = await store.get<Record<string, unknown>>(AGENT_SETTINGS_KEY);
  const merged = { ...structuredClone(AGENT_DEFAULTS), ...(stored && typeof stored === 'object' && !Array.isArray(stored) ? stored : {}) };
  const parsed = parseAgentSettings(merged);
  return parsed.ok ? parsed.settings : (structuredClone(AGENT_DEFAULTS) as AgentSettings);
}

/** Validates and stores a patch (top-level fields replace); returns the new settings or the field errors. */
export async function saveAgentSettings(
  store: SettingsStore,
  patch: unknown,
): Promise<{ ok: true; settings: AgentSettings } | { ok: false; errors: Record<string, string> }> {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return { ok: false, errors: { input: 'Must be a JSON object' } };
  const current = await loadAgentSettings(store);
  const parsed = parseAgentSettings({ ...current, ...patch });
  if (parsed.ok) await store.set(AGENT_SETTINGS_KEY, parsed.settings);
  return parsed;
}

/** All phrases of all languages, for matching. */
export function forcedSearchPhraseList(settings: AgentSettings): string[] {
  return [...new Set(Object.values(settings.forcedSearchPhrases).flat())];
}
