// Loads the real Nextcloud 29 captures kept in the repository (test/fixtures/nextcloud29/).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const fixtureDir = new URL('../fixtures/nextcloud29/', import.meta.url);

export function fixturePath(name: string): string {
  if (name.includes('/') || name.includes('\\')) throw new Error(`fixture name must be a plain file name: ${name}`);
  return fileURLToPath(new URL(name, fixtureDir));
}

export function readFixture(name: string): unknown {
  return JSON.parse(readFileSync(fixturePath(name), 'utf8')) as unknown;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The webhook bodies the ExApp received, parsed from their raw bytes:
 * a `*-raw-body.json` file is itself the body; a `*-received.json` file has one `rawBody`;
 * step files list theirs under `webhooksReceivedByExApp` (possibly none).
 */
export function webhookBodies(name: string): unknown[] {
  if (name.endsWith('-raw-body.json')) return [readFixture(name)];
  const data = readFixture(name);
  if (!isRecord(data)) throw new Error(`${name}: not an object`);
  const raws: unknown[] = [];
  if (typeof data['rawBody'] === 'string') raws.push(data['rawBody']);
  const received = data['webhooksReceivedByExApp'];
  if (Array.isArray(received)) {
    for (const entry of received) if (isRecord(entry)) raws.push(entry['rawBody']);
  }
  if (raws.length === 0 && !Array.isArray(received)) throw new Error(`${name}: no webhooks in this fixture`);
  return raws.map((raw) => {
    if (typeof raw !== 'string') throw new Error(`${name}: rawBody is not a string`);
    return JSON.parse(raw) as unknown;
  });
}
