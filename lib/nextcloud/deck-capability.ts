// Whether Deck serves this user: Deck 1.x publishes `deck: { version, canCreateBoards,
// apiVersions: ['1.0', '1.1'] }` in cloud/capabilities (test/fixtures/nextcloud29/20-ocs-capabilities-as-alice.json, Deck's lib/Capabilities.php).
// Read as the user, because an app can be enabled for some groups only.

/** The `deck` entry of a `capabilities` object, or null when there is none. */
function deckEntry(capabilities: unknown): Record<string, unknown> | null {
  if (capabilities === null || typeof capabilities !== 'object') return null;
  const deck = (capabilities as Record<string, unknown>)['deck'];
  return deck !== null && typeof deck === 'object' && !Array.isArray(deck) ? (deck as Record<string, unknown>) : null;
}

/** True when the `capabilities` object names Deck with the REST API version 1.0 we speak. */
export function deckInCapabilities(capabilities: unknown): boolean {
  const versions = deckEntry(capabilities)?.['apiVersions'];
  return Array.isArray(versions) && versions.includes('1.0');
}

/** Deck's own version as the capabilities name it ("1.13.0-beta.1"), or null. */
export function deckVersion(capabilities: unknown): string | null {
  const version = deckEntry(capabilities)?.['version'];
  return typeof version === 'string' && /^\d+\.\d+/.test(version) ? version.slice(0, 40) : null;
}

/**
 * Deck before 1.16 (Nextcloud 29–31) ignores `order` in the card reorder API: the controller
 * passes the card id as a string and CardService::reorder compares it strictly (Deck issues
 * #6960 and #7233, fixed by #7154 / #7276). An unknown version counts as old.
 */
export function reorderHonoursOrder(version: string | null): boolean {
  const m = version === null ? null : /^(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const major = Number(m[1]);
  return major > 1 || (major === 1 && Number(m[2]) >= 16);
}
