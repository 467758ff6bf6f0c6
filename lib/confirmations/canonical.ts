// One byte-exact form per action, so the hash names exactly what will run.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../validation/canonical-json.ts';

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
