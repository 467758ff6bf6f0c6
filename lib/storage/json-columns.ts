// Reading JSON text columns back: a value that no longer parses, or has the wrong shape, reads as empty
// instead of failing the whole row (one schema for both dialects stores lists as text).

/** A JSON array of strings; anything else reads as []. */
export function parseStringList(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}
