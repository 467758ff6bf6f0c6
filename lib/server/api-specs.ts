// Every documented route of the JSON API, for the served document and docs/openapi.json.
import { BOTS_API_SPECS } from './routes/bots-api.ts';
import { buildOpenApiDocument, CORE_ROUTE_SPECS, OPENAPI_ROUTE_SPEC, type RouteSpec } from './openapi.ts';

export function apiRouteSpecs(): RouteSpec[] {
  return [...CORE_ROUTE_SPECS, ...BOTS_API_SPECS, OPENAPI_ROUTE_SPEC];
}

export function apiDocument(version: string): Record<string, unknown> {
  return buildOpenApiDocument(apiRouteSpecs(), { version });
}
