import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

// The Nextcloud 29 captures the fake is modelled on, kept in the repository (test/fixtures/nextcloud29/README.md).
const NC29_DIR = fileURLToPath(new URL('../../fixtures/nextcloud29', import.meta.url));

export function nc29FixturesDir(): string {
  return NC29_DIR;
}

export function readNc29Text(name: string): string {
  return readFileSync(path.join(nc29FixturesDir(), name), 'utf8');
}

export function readNc29Json<T = unknown>(name: string): T {
  return JSON.parse(readNc29Text(name)) as T;
}

/** One captured exchange: the `{request, response, ms}` objects of files 10–93. */
export interface CapturedExchange {
  request: { method: string; url: string; headers: Record<string, string>; body: string | null };
  response: { status: number; headers: Record<string, string>; body: string };
}

export function readNc29Exchange(name: string, step?: string): CapturedExchange {
  const json = readNc29Json<Record<string, unknown>>(name);
  const value = step === undefined ? json : json[step];
  if (value === undefined || value === null || typeof value !== 'object' || !('response' in value)) {
    throw new Error(`no captured exchange ${step ?? ''} in ${name}`);
  }
  return value as CapturedExchange;
}

/** The raw body of the first webhook the ExApp received in a 6x capture. */
export function readNc29WebhookRawBody(name: string): string {
  const json = readNc29Json<{ webhooksReceivedByExApp?: Array<{ rawBody: string }> }>(name);
  const first = json.webhooksReceivedByExApp?.[0];
  if (first === undefined) throw new Error(`no webhook in ${name}`);
  return first.rawBody;
}

// The Nextcloud 33 captures (test/fixtures/nextcloud33/README.md).
const NC33_DIR = fileURLToPath(new URL('../../fixtures/nextcloud33', import.meta.url));

export function nc33FixturesDir(): string {
  return NC33_DIR;
}

export function readNc33Json<T = unknown>(name: string): T {
  return JSON.parse(readFileSync(path.join(NC33_DIR, name), 'utf8')) as T;
}

/** One step of an NC 33 capture. */
export function readNc33Exchange(name: string, step: string): CapturedExchange {
  const value = readNc33Json<Record<string, unknown>>(name)[step];
  if (value === undefined || value === null || typeof value !== 'object' || !('response' in value)) throw new Error(`no captured exchange ${step} in ${name}`);
  return value as CapturedExchange;
}

/** The captured `cloud/capabilities` body of that version, with the capture's server URL replaced by `baseUrl`. */
export function capturedCapabilitiesBody(baseUrl: string, version: 29 | 33 = 29): string {
  const body =
    version === 33
      ? readNc33Exchange('appapi-33-ocs.json', 'capabilities-as-alice').response.body
      : readNc29Exchange('20-ocs-capabilities-as-alice.json').response.body;
  // The recording server's URL (its port differs between recordings), JSON-escaped as PHP writes it.
  return body.replace(/http:\\\/\\\/127\.0\.0\.1:\d+/g, () => baseUrl.replace(/\//g, '\\/'));
}
