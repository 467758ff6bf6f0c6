// The OpenAPI 3.1 document of the JSON API, generated from the zod schemas the routes validate with.
import { Router, type Express } from 'express';
import { z } from 'zod';
import { DOCUMENTED_AS, errorAnswer } from '../bots/bot-schemas.ts';
import { apiHeaders, requireUser } from './middleware/access.ts';

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

/** One documented route; routers register their handlers from these, so the document cannot drift. */
export interface RouteSpec {
  method: HttpMethod;
  /** OpenAPI form: `/api/v1/bots/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  /** user: any logged-in Nextcloud user; admin: Nextcloud administrators. */
  access: 'user' | 'admin';
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** `name` becomes the component name. */
  body?: { name: string; schema: z.ZodType };
  response: { status: number; name: string; schema: z.ZodType; description?: string };
  /** Error statuses besides 401 (and 403 for admin routes). */
  errors?: number[];
}

/** `/api/v1/bots/{id}` → `/api/v1/bots/:id`. */
export function expressPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

/** `/api/v1/bots/:id` → `/api/v1/bots/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const REF = (name: string) => `#/components/schemas/${name}`;
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input; `error.details.fields` maps each field to a message',
  401: 'No logged-in Nextcloud user',
  403: 'Not allowed (or the CSRF header is missing)',
  404: 'Not found',
  409: 'Conflicts with the current state',
  502: 'Nextcloud did not answer as expected',
  503: 'Administrator rights could not be confirmed',
};

type Json = Record<string, unknown>;

function override(ctx: { zodSchema: unknown; jsonSchema: Json }): void {
  const doc = DOCUMENTED_AS.get(ctx.zodSchema as z.ZodType);
  if (!doc) return;
  const replacement = z.toJSONSchema(doc, { io: 'output', unrepresentable: 'any' }) as Json;
  delete replacement.$schema;
  const description = ctx.jsonSchema.description;
  for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
  Object.assign(ctx.jsonSchema, replacement, description ? { description } : {});
}

function components(entries: Map<string, z.ZodType>, io: 'input' | 'output'): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of entries) registry.add(schema, { id });
  const out = z.toJSONSchema(registry, { io, unrepresentable: 'any', uri: REF, override }) as { schemas: Record<string, Json> };
  for (const schema of Object.values(out.schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return out.schemas;
}

function parameters(schema: z.ZodObject | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    schema: s,
  }));
}

function addOnce(map: Map<string, z.ZodType>, name: string, schema: z.ZodType): void {
  const existing = map.get(name);
  if (existing && existing !== schema) throw new Error(`two different schemas are named ${name}`);
  map.set(name, schema);
}

export function buildOpenApiDocument(specs: RouteSpec[], info: { version: string }): Json {
  const inputs = new Map<string, z.ZodType>();
  const outputs = new Map<string, z.ZodType>([['Error', errorAnswer]]);
  for (const s of specs) {
    if (s.body) addOnce(inputs, s.body.name, s.body.schema);
    addOnce(outputs, s.response.name, s.response.schema);
  }
  for (const name of inputs.keys()) if (outputs.has(name)) throw new Error(`${name} names both a request and an answer`);

  const paths: Record<string, Record<string, Json>> = {};
  const seen = new Set<string>();
  for (const s of specs) {
    const key = `${s.method} ${s.path}`;
    if (seen.has(key)) throw new Error(`${key} is documented twice`);
    seen.add(key);
    const errors = [...new Set([401, ...(s.access === 'admin' ? [403] : []), ...(s.errors ?? [])])].sort((a, b) => a - b);
    const responses: Record<string, Json> = {
      [String(s.response.status)]: {
        description: s.response.description ?? 'Success',
        content: { 'application/json': { schema: { $ref: REF(s.response.name) } } },
      },
    };
    for (const status of errors) {
      responses[String(status)] = { description: ERROR_DESCRIPTIONS[status] ?? 'Error', content: { 'application/json': { schema: { $ref: REF('Error') } } } };
    }
    const operation: Json = {
      operationId: s.operationId,
      summary: s.summary,
      tags: [s.tag],
      'x-access': s.access,
      parameters: [...parameters(s.params, 'path'), ...parameters(s.query, 'query')],
      responses,
    };
    if (s.body) operation.requestBody = { required: true, content: { 'application/json': { schema: { $ref: REF(s.body.name) } } } };
    (paths[s.path] ??= {})[s.method] = operation;
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Talk AI',
      version: info.version,
      description:
        'JSON API of the Talk AI ExApp. Reach it through Nextcloud (AppAPI proxy, USER routes): AppAPI authenticates the user. ' +
        'Requests that change state need the `requesttoken` or `OCS-APIRequest: true` header. Answers are never cached.',
    },
    servers: [{ url: '/index.php/apps/app_api/proxy/educai', description: "Through Nextcloud's AppAPI proxy" }],
    security: [{ appApi: [] }],
    tags: [...new Set(specs.map((s) => s.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { appApi: { type: 'apiKey', in: 'header', name: 'AUTHORIZATION-APP-API', description: 'Set by AppAPI for the logged-in user' } },
      schemas: { ...components(inputs, 'input'), ...components(outputs, 'output') },
    },
  };
}

/** Every route an express app serves below `prefix`, as `METHOD /open/api/{path}`. */
export function servedRoutes(app: Express, prefix = '/api/'): string[] {
  const out: string[] = [];
  const walk = (stack: unknown[]): void => {
    for (const layer of stack as Array<{ route?: { path: unknown; methods: Record<string, boolean> }; handle?: { stack?: unknown[] } }>) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const p of paths) {
          if (typeof p !== 'string' || !p.startsWith(prefix)) continue;
          for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') out.push(`${method.toUpperCase()} ${openApiPath(p)}`);
        }
      } else if (Array.isArray(layer.handle?.stack)) {
        walk(layer.handle.stack);
      }
    }
  };
  walk((app as unknown as { router: { stack: unknown[] } }).router.stack);
  return [...new Set(out)].sort();
}

/** Every route the document describes, in the same form. */
export function documentedRoutes(doc: Json): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(ops)) out.push(`${method.toUpperCase()} ${path}`);
  }
  return out.sort();
}

const meAnswer = z.object({ uid: z.string(), admin: z.boolean(), version: z.string(), language: z.string().nullable() });
const settingsAnswer = z.object({ settings: z.record(z.string(), z.unknown()) });
const settingsBody = z.record(z.string(), z.unknown()).describe('Any subset of the settings; keys are write-only');
const adminModelsAnswer = z.object({
  models: z.array(z.object({ ref: z.string(), endpoint: z.enum(['primary', 'secondary']), id: z.string(), label: z.string() })),
  endpoints: z.array(
    z.object({
      endpoint: z.enum(['primary', 'secondary']),
      configured: z.boolean(),
      ok: z.boolean(),
      count: z.number(),
      status: z.number().optional(),
      error: z.string().optional(),
    }),
  ),
});
const modelsAnswer = z.record(z.string(), z.unknown()).describe('The models bot owners may choose');
const openApiAnswer = z.record(z.string(), z.unknown()).describe('This document');

/** Routes of the foundation routers (session info, model settings) and of this document itself. */
export const CORE_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/api/v1/me',
    operationId: 'getMe',
    summary: 'Who the app page talks to',
    tag: 'session',
    access: 'user',
    response: { status: 200, name: 'Me', schema: meAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/admin/settings',
    operationId: 'getAdminSettings',
    summary: 'Model-provider settings (keys masked)',
    tag: 'admin',
    access: 'admin',
    response: { status: 200, name: 'AdminSettings', schema: settingsAnswer },
    errors: [503],
  },
  {
    method: 'put',
    path: '/api/v1/admin/settings',
    operationId: 'updateAdminSettings',
    summary: 'Change model-provider settings',
    tag: 'admin',
    access: 'admin',
    body: { name: 'AdminSettingsUpdate', schema: settingsBody },
    response: { status: 200, name: 'AdminSettingsSaved', schema: settingsAnswer },
    errors: [400, 503],
  },
  {
    method: 'get',
    path: '/api/v1/admin/models',
    operationId: 'listAdminModels',
    summary: 'Models the endpoints list now',
    tag: 'admin',
    access: 'admin',
    response: { status: 200, name: 'AdminModels', schema: adminModelsAnswer },
    errors: [503],
  },
  {
    method: 'get',
    path: '/api/v1/models',
    operationId: 'listModels',
    summary: 'Models bot owners may choose',
    tag: 'models',
    access: 'user',
    response: { status: 200, name: 'Models', schema: modelsAnswer },
  },
];

export const OPENAPI_ROUTE_SPEC: RouteSpec = {
  method: 'get',
  path: '/api/v1/openapi.json',
  operationId: 'getOpenApi',
  summary: 'This OpenAPI document',
  tag: 'meta',
  access: 'user',
  response: { status: 200, name: 'OpenApiDocument', schema: openApiAnswer },
};

/** GET /api/v1/openapi.json */
export function openApiRoutes(document: () => Json): Router {
  const router = Router();
  let cached: Json | null = null;
  router.get(expressPath(OPENAPI_ROUTE_SPEC.path), apiHeaders(), requireUser(), (_req, res) => {
    cached ??= document();
    res.json(cached);
  });
  return router;
}

/** Serialised the way docs/openapi.json is stored. */
export function serializeOpenApi(doc: Json): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
