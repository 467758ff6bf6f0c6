// The MCP SDK, loaded with the first connection instead of at start-up (it costs a few hundred
// milliseconds of module loading that an instance without MCP servers never needs).
type ClientModule = typeof import('@modelcontextprotocol/sdk/client/index.js');
type TransportModule = typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
type TypesModule = typeof import('@modelcontextprotocol/sdk/types.js');

export interface McpSdk {
  Client: ClientModule['Client'];
  StreamableHTTPClientTransport: TransportModule['StreamableHTTPClientTransport'];
  StreamableHTTPError: TransportModule['StreamableHTTPError'];
  McpError: TypesModule['McpError'];
  ToolListChangedNotificationSchema: TypesModule['ToolListChangedNotificationSchema'];
}

/** The SDK's ErrorCode values we test for (kept here so that classifying an error needs no SDK). */
export const MCP_REQUEST_TIMEOUT = -32001;
export const MCP_CONNECTION_CLOSED = -32000;

let loaded: McpSdk | null = null;
let loading: Promise<McpSdk> | null = null;

export function loadMcpSdk(): Promise<McpSdk> {
  if (loaded) return Promise.resolve(loaded);
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(
    ([client, transport, types]) => {
      loaded = {
        Client: client.Client,
        StreamableHTTPClientTransport: transport.StreamableHTTPClientTransport,
        StreamableHTTPError: transport.StreamableHTTPError,
        McpError: types.McpError,
        ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
      };
      return loaded;
    },
    (err: unknown) => {
      loading = null;
      throw err;
    },
  );
  return loading;
}

/** Whether the SDK has been loaded (tests of the cold start). */
export function mcpSdkLoaded(): boolean {
  return loaded !== null;
}

/** An SDK StreamableHTTPError; before the SDK is loaded no such error can exist. */
export function isStreamableHttpError(error: unknown): error is Error & { code: number | undefined } {
  return loaded !== null && error instanceof loaded.StreamableHTTPError;
}

/** An SDK McpError (JSON-RPC error from the server or the protocol layer). */
export function isMcpError(error: unknown): error is Error & { code: number } {
  return loaded !== null && error instanceof loaded.McpError;
}
