// Which tools an agent profile covers: the first-party families it lists (files, sharing, …) and
// the tool servers it names by provider id (`mcp:<server id>`), never a server's changeable name.

/** A tool server as an agent profile names it. */
export const TOOL_SERVER_FAMILY = /^mcp:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function profileCovers(toolFamilies: ReadonlyArray<string>, family: string | null, provider: string | null): boolean {
  if (provider !== null && TOOL_SERVER_FAMILY.test(provider)) return toolFamilies.includes(provider);
  return family !== null && toolFamilies.includes(family);
}
