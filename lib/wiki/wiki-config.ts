// Where a bot's wiki lives, stored with its wiki tool assignments. All four wiki tools share one
// config: assigning any of them expands to all four (as upstream). Validated when saved, with
// one error per field; the location is checked again against Nextcloud before every write (S16).
import { z } from 'zod';
import type { ConfigValidation } from '../tools/tool-provider.ts';
import type { ToolAssignment } from '../tools/tool-registry.ts';
import { parseCustomRoot, relativePathProblem } from './wiki-paths.ts';

export const WIKI_TOOL_NAMES = ['wiki_search', 'wiki_read_page', 'wiki_write_page', 'wiki_log_event'] as const;
export type WikiToolName = (typeof WIKI_TOOL_NAMES)[number];
const NAMES: ReadonlySet<string> = new Set(WIKI_TOOL_NAMES);

export function isWikiTool(name: string): name is WikiToolName {
  return NAMES.has(name);
}

export type WikiLocation = { kind: 'personal_files'; rootPath: string | null } | { kind: 'collective'; collective: string };

const MAX_COLLECTIVE_NAME = 200;

const configSchema = z
  .object({
    location: z.enum(['personal_files', 'collective'], { error: 'Must be personal_files or collective' }).optional(),
    rootPath: z.string({ error: 'Must be a path inside "Talk AI/"' }).optional(),
    collective: z.string({ error: 'Must be the name of a Collective' }).optional(),
  })
  .strict();

/** Checks a saved config; the result keeps only the keys that apply. */
export function validateWikiConfig(config: Record<string, unknown>): ConfigValidation {
  const errors: Record<string, string> = {};
  const known = new Set(['location', 'rootPath', 'collective']);
  for (const key of Object.keys(config)) if (!known.has(key)) errors[key] = 'Unknown setting';
  const parsed = configSchema.safeParse(Object.fromEntries(Object.entries(config).filter(([k]) => known.has(k))));
  if (!parsed.success) {
    for (const issue of parsed.error.issues) errors[String(issue.path[0] ?? 'config')] ??= issue.message;
    return { ok: false, errors };
  }
  const v = parsed.data;
  const location = v.location ?? 'personal_files';
  if (location === 'personal_files') {
    if (v.collective !== undefined) errors['collective'] = 'Only for the collective location';
    if (v.rootPath !== undefined && v.rootPath.trim() !== '') {
      try {
        parseCustomRoot(v.rootPath);
      } catch (err) {
        errors['rootPath'] = (err as Error).message;
      }
    }
  } else {
    if (v.rootPath !== undefined) errors['rootPath'] = 'Only for the personal_files location';
    const name = v.collective ?? '';
    if (name.trim() === '') errors['collective'] = "Choose the Collective of one of the bot's teams";
    else if (name.length > MAX_COLLECTIVE_NAME) errors['collective'] = `At most ${MAX_COLLECTIVE_NAME} characters`;
    else if (name.includes('/') || relativePathProblem(name) !== null) errors['collective'] = 'Must be a Collective\'s name (no "/", not hidden)';
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const out: Record<string, unknown> = { location };
  if (location === 'personal_files' && v.rootPath !== undefined && v.rootPath.trim() !== '') out['rootPath'] = v.rootPath.replace(/\/+$/, '');
  if (location === 'collective') out['collective'] = v.collective;
  return { ok: true, config: out };
}

/** The location of a stored (already validated) config; anything odd falls back to the default. */
export function locationOf(config: Record<string, unknown>): WikiLocation {
  const checked = validateWikiConfig(stripReserved(config));
  if (!checked.ok) return { kind: 'personal_files', rootPath: null };
  if (checked.config['location'] === 'collective') return { kind: 'collective', collective: String(checked.config['collective']) };
  return { kind: 'personal_files', rootPath: typeof checked.config['rootPath'] === 'string' ? checked.config['rootPath'] : null };
}

function stripReserved(config: Record<string, unknown>): Record<string, unknown> {
  const { force: _force, ...rest } = config;
  return rest;
}

/**
 * Assigning any wiki tool assigns all four, with the config of the first wiki tool listed
 * (the shared config). The others keep their place; missing ones follow the first.
 */
export function expandWikiAssignments(assignments: ReadonlyArray<ToolAssignment>): ToolAssignment[] {
  const first = assignments.find((a) => a !== null && typeof a === 'object' && isWikiTool(a.name));
  if (!first) return [...assignments];
  const shared = stripReserved(first.config ?? {});
  const out: ToolAssignment[] = [];
  let inserted = false;
  for (const a of assignments) {
    if (a === null || typeof a !== 'object' || !isWikiTool(a.name)) {
      out.push(a);
      continue;
    }
    if (inserted) continue;
    inserted = true;
    // Each wiki tool keeps its own reserved keys (force), the location is shared.
    for (const name of WIKI_TOOL_NAMES) {
      const own = assignments.find((x) => x?.name === name);
      const force = own?.config?.['force'];
      out.push({ name, config: { ...shared, ...(force !== undefined ? { force } : {}) } });
    }
  }
  return out;
}
