// Loads the real Nextcloud captures kept in the repository: test/fixtures/nextcloud29/ (the default)
// and test/fixtures/nextcloud33/.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export type NextcloudVersion = 29 | 33;
export const NEXTCLOUD_VERSIONS: readonly NextcloudVersion[] = [29, 33];

function fixtureDir(version: NextcloudVersion): URL {
  return new URL(`../fixtures/nextcloud${version}/`, import.meta.url);
}

export function fixturePath(name: string, version: NextcloudVersion = 29): string {
  if (name.includes('/') || name.includes('\\')) throw new Error(`fixture name must be a plain file name: ${name}`);
  return fileURLToPath(new URL(name, fixtureDir(version)));
}

export function readFixture(name: string, version: NextcloudVersion = 29): unknown {
  return JSON.parse(readFileSync(fixturePath(name, version), 'utf8')) as unknown;
}

/** The capture files of one version whose names match `pattern`, sorted. */
export function fixtureNames(version: NextcloudVersion, pattern: RegExp): string[] {
  return readdirSync(fileURLToPath(fixtureDir(version)))
    .filter((n) => pattern.test(n))
    .sort();
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Which deliveries: as AppAPI forwarded them to the ExApp, or Talk's own request to a bot installed with occ (NC 33 only). */
export type WebhookPath = 'exapp' | 'direct';

/** A delivery as received: raw headers (lower-cased names) and the raw body. */
export interface ReceivedWebhook {
  headers: Record<string, string>;
  rawBody: string;
}

/**
 * The webhooks received in a capture, raw: a `*-raw-body.json` file is itself the body; a
 * `*-received.json` file has one `rawBody`; step files list theirs under `webhooksReceivedByExApp`
 * (or `webhooksReceivedDirect`), at the top or inside a step.
 */
export function receivedWebhooks(name: string, version: NextcloudVersion = 29, path: WebhookPath = 'exapp'): ReceivedWebhook[] {
  if (name.endsWith('-raw-body.json')) return [{ headers: {}, rawBody: readFileSync(fixturePath(name, version), 'utf8') }];
  const data = readFixture(name, version);
  if (!isRecord(data)) throw new Error(`${name}: not an object`);
  const key = path === 'exapp' ? 'webhooksReceivedByExApp' : 'webhooksReceivedDirect';
  const out: ReceivedWebhook[] = [];
  let listed = false;
  if (typeof data['rawBody'] === 'string' && path === 'exapp') {
    out.push({ headers: isRecord(data['headers']) ? (data['headers'] as Record<string, string>) : {}, rawBody: data['rawBody'] });
    listed = true;
  }
  // Top-level lists win; only a capture without one has its deliveries inside steps.
  const holders = Array.isArray(data[key]) ? [data] : Object.values(data).filter(isRecord);
  for (const holder of holders) {
    const received = holder[key];
    if (!Array.isArray(received)) continue;
    listed = true;
    for (const entry of received) {
      if (!isRecord(entry) || typeof entry['rawBody'] !== 'string') throw new Error(`${name}: rawBody is not a string`);
      out.push({ headers: isRecord(entry['headers']) ? (entry['headers'] as Record<string, string>) : {}, rawBody: entry['rawBody'] });
    }
  }
  if (!listed) throw new Error(`${name}: no webhooks in this fixture`);
  return out;
}

/** The webhook bodies the ExApp received, parsed from their raw bytes (see receivedWebhooks). */
export function webhookBodies(name: string, version: NextcloudVersion = 29, path: WebhookPath = 'exapp'): unknown[] {
  return receivedWebhooks(name, version, path).map((w) => JSON.parse(w.rawBody) as unknown);
}
