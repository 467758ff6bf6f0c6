// One byte-exact form per action, so the hash names exactly what will run.
import { createHash } from 'node:crypto';

function normalize(value: unknown, depth: number): unknown {
  if (depth > 32) throw new TypeError('canonical JSON: nested too deeply');
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON: numbers must be finite');
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => normalize(v === undefined ? null : v, depth + 1));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = normalize(v, depth + 1);
    }
    return out;
  }
  throw new TypeError(`canonical JSON: ${typeof value} is not allowed`);
}

/** JSON with sorted keys and without undefined members. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalize(value, 0));
}

export interface CanonicalAction {
  userUid: string;
  botId: string;
  roomToken: string;
  providerId: string;
  tool: string;
  args: Record<string, unknown>;
  binding: Record<string, unknown>;
  /** The sealed secrets' ciphertext, when the action carries any. */
  sealed?: string | null;
  /** Canonical JSON of how the call ran (mode, profile, scope), when recorded. */
  execution?: string | null;
}

export function actionHash(action: CanonicalAction): string {
  return createHash('sha256')
    .update(
      canonicalJson({
        v: 1,
        user: action.userUid,
        bot: action.botId,
        room: action.roomToken,
        provider: action.providerId,
        tool: action.tool,
        args: action.args,
        binding: action.binding,
        // Only actions with secrets hash them, so the hashes of all others stay as they were.
        ...(action.sealed ? { sealed: action.sealed } : {}),
        ...(action.execution ? { execution: action.execution } : {}),
      }),
    )
    .digest('hex');
}
