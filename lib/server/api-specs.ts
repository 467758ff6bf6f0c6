// Every documented route of the JSON API, for the served document and docs/openapi.json.
import { BOTS_API_SPECS } from './routes/bots-api.ts';
import { KNOWLEDGE_API_SPECS } from './routes/knowledge-api.ts';
import { ADMIN_POLICY_SPECS } from './routes/admin-policy.ts';
import { AGENT_PROFILES_API_SPECS } from './routes/agent-profiles-api.ts';
import { MCP_ADMIN_SPECS } from './routes/mcp-admin.ts';
import { PERSONAL_SETTINGS_SPECS } from './routes/personal-settings.ts';
import { RATELIMIT_ADMIN_SPECS } from './routes/ratelimit-admin.ts';
import { RUNTIME_STATUS_SPECS } from './routes/runtime-status.ts';
import { TOOLS_API_SPECS } from './routes/tools-api.ts';
import { TRACES_API_SPECS } from './routes/traces-api.ts';
import { buildOpenApiDocument, CORE_ROUTE_SPECS, OPENAPI_ROUTE_SPEC, type RouteSpec } from './openapi.ts';

export function apiRouteSpecs(): RouteSpec[] {
  return [
    ...CORE_ROUTE_SPECS,
    ...BOTS_API_SPECS,
    ...KNOWLEDGE_API_SPECS,
    ...ADMIN_POLICY_SPECS,
    ...MCP_ADMIN_SPECS,
    ...TOOLS_API_SPECS,
    ...RATELIMIT_ADMIN_SPECS,
    ...TRACES_API_SPECS,
    ...RUNTIME_STATUS_SPECS,
    ...PERSONAL_SETTINGS_SPECS,
    ...AGENT_PROFILES_API_SPECS,
    OPENAPI_ROUTE_SPEC,
  ];
}

export function apiDocument(version: string): Record<string, unknown> {
  return buildOpenApiDocument(apiRouteSpecs(), { version });
}
