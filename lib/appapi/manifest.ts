import { readFileSync } from 'node:fs';
import { XMLParser } from 'fast-xml-parser';

export type AccessLevel = 'PUBLIC' | 'USER' | 'ADMIN';

export interface ManifestRoute {
  url: string;
  verb: string;
  access_level: AccessLevel;
  headers_to_exclude: string;
}

export interface Manifest {
  id: string;
  name: string;
  version: string;
  licence: string;
  routes: ManifestRoute[];
  environmentVariables: string[];
  /** `<k8s-service-roles>`: one Kubernetes Deployment per role (AppAPI 34+ with HaRP), only `expose` ones reachable. */
  serviceRoles: Array<{ name: string; env: string; expose: boolean }>;
  image: { registry: string; image: string; tag: string };
}

const ACCESS_LEVELS: Record<string, number> = { PUBLIC: 0, USER: 1, ADMIN: 2 };

function asArray<T>(v: T | T[] | undefined): T[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** Reads appinfo/info.xml, the single source of the app's id, version and proxy routes. */
export function readManifest(path: string): Manifest {
  const parser = new XMLParser({ ignoreAttributes: false, parseTagValue: false, trimValues: true });
  const doc = parser.parse(readFileSync(path, 'utf8')) as { info: Record<string, unknown> };
  const info = doc.info;
  const ext = (info['external-app'] ?? {}) as Record<string, unknown>;
  const docker = (ext['docker-install'] ?? {}) as Record<string, string>;
  const routes = asArray((ext.routes as { route?: unknown } | undefined)?.route) as ManifestRoute[];
  const vars = asArray((ext['environment-variables'] as { variable?: unknown } | undefined)?.variable) as Array<{ name: string }>;
  const roles = asArray((ext['k8s-service-roles'] as { role?: unknown } | undefined)?.role) as Array<{ name: string; env?: string; expose?: string }>;
  return {
    id: String(info.id),
    name: String(info.name),
    version: String(info.version),
    licence: String(info.licence),
    routes: routes.map((r) => ({
      ...r,
      url: String(r.url),
      verb: String(r.verb),
      access_level: String(r.access_level) as AccessLevel,
      headers_to_exclude: String(r.headers_to_exclude ?? '[]'),
    })),
    environmentVariables: vars.map((v) => v.name),
    serviceRoles: roles.map((r) => ({ name: String(r.name), env: String(r.env ?? ''), expose: String(r.expose) === 'true' })),
    image: { registry: docker.registry ?? 'docker.io', image: docker.image ?? String(info.id), tag: docker['image-tag'] ?? 'latest' },
  };
}

/** The `--json-info` routes of `occ app_api:app:register` (access level as a number). */
export function jsonInfoRoutes(manifest: Manifest): Array<{ url: string; verb: string; access_level: number; headers_to_exclude: string }> {
  return manifest.routes.map((r) => ({ url: r.url, verb: r.verb, access_level: ACCESS_LEVELS[r.access_level] ?? 1, headers_to_exclude: r.headers_to_exclude }));
}
