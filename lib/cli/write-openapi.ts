// Writes docs/openapi.json from the route specs: `node lib/cli/write-openapi.ts`.
import { readFileSync, writeFileSync } from 'node:fs';
import { apiDocument } from '../server/api-specs.ts';
import { serializeOpenApi } from '../server/openapi.ts';

const REPO_ROOT = new URL('../../', import.meta.url);

/** The version the stored document carries: the package's. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('package.json', REPO_ROOT), 'utf8')) as { version: string }).version;
}

export function storedOpenApiPath(): URL {
  return new URL('docs/openapi.json', REPO_ROOT);
}

if (import.meta.main) {
  const target = storedOpenApiPath();
  writeFileSync(target, serializeOpenApi(apiDocument(packageVersion())));
  process.stdout.write(`wrote ${target.pathname}\n`);
}
