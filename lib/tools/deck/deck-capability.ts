// Whether Deck serves this user: Deck 1.x publishes `deck: { version, canCreateBoards,
// apiVersions: ['1.0', '1.1'] }` in cloud/capabilities (capture 20, Deck's lib/Capabilities.php).
// Read as the user, because an app can be enabled for some groups only.

/** True when the `capabilities` object names Deck with the REST API version 1.0 we speak. */
export function deckInCapabilities(capabilities: unknown): boolean {
  if (capabilities === null || typeof capabilities !== 'object') return false;
  const deck = (capabilities as Record<string, unknown>)['deck'];
  if (deck === null || typeof deck !== 'object' || Array.isArray(deck)) return false;
  const versions = (deck as Record<string, unknown>)['apiVersions'];
  return Array.isArray(versions) && versions.includes('1.0');
}
