// Execution policies: how much a tool may change, and how often it may repeat in a loop.

export type ToolKind = 'search' | 'read' | 'write' | 'analyze' | 'transcribe' | 'unknown';

export interface ToolPolicy {
  kind: ToolKind;
  readOnly: boolean;
  idempotent: boolean;
  destructive: boolean;
  loopThreshold: number;
}

export interface McpToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
}

const MUTATING_THRESHOLD = 4;
const GENERAL_THRESHOLD = 8;
const SEARCH_THRESHOLD = 10;

const SEARCH_TOKENS = new Set(['search', 'lookup', 'query', 'find', 'rag']);
const MUTATING_TOKENS = new Set([
  'add',
  'append',
  'commit',
  'create',
  'delete',
  'deploy',
  'disable',
  'enable',
  'execute',
  'install',
  'log',
  'merge',
  'move',
  'patch',
  'post',
  'push',
  'put',
  'remove',
  'rename',
  'run',
  'save',
  'send',
  'set',
  'store',
  'uninstall',
  'update',
  'upload',
  'write',
]);

function policy(kind: ToolKind, readOnly: boolean, idempotent: boolean, destructive: boolean, loopThreshold: number): ToolPolicy {
  return { kind, readOnly, idempotent, destructive, loopThreshold };
}

export function searchPolicy(): ToolPolicy {
  return policy('search', true, true, false, SEARCH_THRESHOLD);
}

export function readPolicy(): ToolPolicy {
  return policy('read', true, true, false, GENERAL_THRESHOLD);
}

export function writePolicy(): ToolPolicy {
  return policy('write', false, false, false, MUTATING_THRESHOLD);
}

export function destructivePolicy(): ToolPolicy {
  return policy('write', false, false, true, MUTATING_THRESHOLD);
}

export function analyzePolicy(): ToolPolicy {
  return policy('analyze', true, true, false, GENERAL_THRESHOLD);
}

export function transcribePolicy(): ToolPolicy {
  return policy('transcribe', true, true, false, GENERAL_THRESHOLD);
}

// What nothing is known about may change things.
export function unknownPolicy(): ToolPolicy {
  return policy('unknown', false, false, false, MUTATING_THRESHOLD);
}

// Splits snake_case, kebab-case, camelCase and prose into lowercase words.
function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

// Exact word or a plain inflection of it (deletes, updated, creating, queries).
function matchesAny(word: string, vocabulary: ReadonlySet<string>): boolean {
  if (vocabulary.has(word)) return true;
  const stems: string[] = [];
  if (word.endsWith('ies')) stems.push(word.slice(0, -3) + 'y');
  if (word.endsWith('es')) stems.push(word.slice(0, -2));
  if (word.endsWith('s')) stems.push(word.slice(0, -1));
  if (word.endsWith('ed')) stems.push(word.slice(0, -2), word.slice(0, -1));
  if (word.endsWith('ing')) stems.push(word.slice(0, -3), word.slice(0, -3) + 'e');
  return stems.some((stem) => stem.length >= 3 && vocabulary.has(stem));
}

function classify(text: string): 'write' | 'search' | null {
  const list = words(text);
  if (list.some((w) => matchesAny(w, MUTATING_TOKENS))) return 'write';
  if (list.some((w) => matchesAny(w, SEARCH_TOKENS))) return 'search';
  return null;
}

/**
 * Default policy for a remote tool. Order as upstream (destructive hint, read-only hint,
 * name heuristics), but stricter: a mutating word beats a search word, the name is
 * judged before the description, an explicit readOnlyHint:false never yields a
 * read-only policy (and is destructive unless destructiveHint is false, the MCP default),
 * and whatever stays unclassified is treated as able to change things.
 */
export function policyFromMcpAnnotations(name: string, description: string, annotations?: McpToolAnnotations): ToolPolicy {
  const hints: Record<string, unknown> = annotations !== null && typeof annotations === 'object' ? { ...annotations } : {};
  if (hints['destructiveHint'] === true) return destructivePolicy();
  if (hints['readOnlyHint'] === true) return readPolicy();
  if (hints['readOnlyHint'] === false) {
    return hints['destructiveHint'] === false ? writePolicy() : destructivePolicy();
  }

  const byName = classify(typeof name === 'string' ? name : '');
  const verdict = byName ?? classify(typeof description === 'string' ? description : '');
  if (verdict === 'write') return writePolicy();
  if (verdict === 'search') return searchPolicy();
  return unknownPolicy();
}

function validThreshold(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 1;
}

/**
 * Loop threshold for one batch: any tool that may change things → 4; a batch of
 * searches only → 10; otherwise 8. A policy that asks for a lower threshold keeps it.
 * An empty batch gets the strictest value.
 */
export function batchLoopThreshold(policies: readonly ToolPolicy[]): number {
  const list = Array.isArray(policies) ? policies : [];
  if (list.length === 0) return MUTATING_THRESHOLD;
  let threshold = GENERAL_THRESHOLD;
  if (list.some((p) => p === null || typeof p !== 'object' || p.readOnly !== true || p.destructive === true)) {
    threshold = MUTATING_THRESHOLD;
  } else if (list.every((p) => p.kind === 'search')) {
    threshold = SEARCH_THRESHOLD;
  }
  for (const p of list) {
    if (p !== null && typeof p === 'object' && validThreshold(p.loopThreshold)) {
      threshold = Math.min(threshold, Math.floor(p.loopThreshold));
    }
  }
  return threshold;
}
