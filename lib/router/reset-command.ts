// `((RESET))` optionally followed by one bot mention (`@tutor` or `/tutor`).
import { listMentionTokens } from '../talk/mention-detector.ts';

const MARKER = '((reset))';

/**
 * null when the text is not a reset command. `mention: null` means "every bot in this room".
 * A marker followed by something that looks like a mention but is not a clean one
 * (`((RESET)) @tutor.org`) is refused rather than widened to every bot.
 */
export function parseResetCommand(rawText: string): { mention: string | null } | null {
  const text = rawText.trim();
  if (text.slice(0, MARKER.length).toLowerCase() !== MARKER) return null;
  const rest = text.slice(MARKER.length).trimStart();
  if (rest === '' || (rest[0] !== '@' && rest[0] !== '/')) return { mention: null };
  const first = listMentionTokens(rest)[0];
  if (first === undefined || first.index !== 0) return null;
  return { mention: first.mention };
}
