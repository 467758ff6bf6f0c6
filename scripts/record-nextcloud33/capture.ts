// The recording half of scripts/record-nextcloud33.ts: HTTP exchanges with the real server, HTTP
// listeners that keep what Nextcloud sends them (the ExApp, a direct Talk bot), and the redaction
// applied before anything is written (the rules of test/fixtures/nextcloud29/README.md).
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The documented secret the captured Talk signatures are re-computed with (test/fixtures/nextcloud33/README.md). */
export const CAPTURE_TEST_SECRET = 'nextcloud33-capture-test-secret-not-a-real-one-0123456789';

export function hmacHex(secret: string, message: string): string {
  return createHmac('sha256', secret).update(message, 'utf8').digest('hex');
}

export interface Exchange {
  request: { method: string; url: string; headers: Record<string, string>; body: string | null };
  response: { status: number; headers: Record<string, string>; body: string; bodyBase64?: string };
  ms: number;
}

export interface Received {
  receivedAt: string;
  method: string;
  path: string;
  httpVersion: string;
  headers: Record<string, string>;
  rawHeaders: string[];
  rawBody: string;
}

/** Every secret value of this run and what it is written as. */
export class Redactor {
  readonly #values: Array<[string, string]> = [];
  readonly #passwords = new Map<string, string>();
  readonly #appSecrets = new Set<string>();

  secret(value: string, replacement: string): void {
    if (value.length >= 8 && !this.#values.some(([v]) => v === value)) this.#values.push([value, replacement]);
  }

  appSecret(value: string): void {
    this.#appSecrets.add(value);
    this.secret(value, '<REDACTED_APP_SECRET>');
  }

  password(user: string, value: string): void {
    this.#passwords.set(value, user);
    this.secret(value, '<REDACTED_PASSWORD>');
  }

  /** One header value, by name (names compared lower-cased). */
  header(name: string, value: string): string {
    const n = name.toLowerCase();
    if (n === 'cookie' || n === 'set-cookie') return '<REDACTED_COOKIE>';
    if (n === 'requesttoken') return '<REDACTED_REQUEST_TOKEN>';
    if (n === 'authorization-app-api') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) {
        const secret = decoded.slice(colon + 1);
        const shown = this.#appSecrets.has(secret) ? '<REDACTED_APP_SECRET>' : `<WRONG_SECRET_FOR_TEST:${secret.length} chars>`;
        return `base64("${decoded.slice(0, colon)}:${shown}")`;
      }
    }
    if (n === 'authorization' && value.startsWith('Basic ')) {
      const decoded = Buffer.from(value.slice(6), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) return `Basic base64("${decoded.slice(0, colon)}:<REDACTED_PASSWORD>")`;
    }
    return this.text(value);
  }

  headers(h: Record<string, string>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(h)) out[k] = this.header(k, v);
    return out;
  }

  text(s: string): string {
    let out = s;
    for (const [value, replacement] of this.#values) out = out.split(value).join(replacement);
    return out;
  }
}

function isText(type: string): boolean {
  return type === '' || /json|xml|text|calendar|javascript|x-www-form-urlencoded/.test(type);
}

export interface SendInit {
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** Sends one request and keeps it, redacted. */
export async function send(
  redactor: Redactor,
  method: string,
  url: string,
  init: SendInit = {},
): Promise<{ exchange: Exchange; status: number; text: string; json: any; cookies: string[] }> {
  const t0 = performance.now();
  const r = await fetch(url, { method, headers: init.headers ?? {}, ...(init.body !== undefined ? { body: init.body } : {}), redirect: 'manual' });
  const buf = Buffer.from(await r.arrayBuffer());
  const ms = Math.round(performance.now() - t0);
  const headers: Record<string, string> = {};
  r.headers.forEach((v, k) => {
    headers[k] = v;
  });
  const type = headers['content-type'] ?? '';
  const text = buf.toString('utf8');
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  const body = isText(type) ? redactor.text(text) : '';
  const requestBody = init.body === undefined ? null : Buffer.isBuffer(init.body) ? `<${init.body.length} bytes>` : redactor.text(init.body);
  const exchange: Exchange = {
    request: { method, url, headers: redactor.headers(init.headers ?? {}), body: requestBody },
    response: { status: r.status, headers: redactor.headers(headers), body, ...(isText(type) ? {} : { bodyBase64: buf.toString('base64') }) },
    ms,
  };
  const cookies = r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0] ?? '')
    .filter(Boolean);
  return { exchange, status: r.status, text, json, cookies };
}

export type Answer = (req: Received) => { status: number; body: string; type?: string } | Promise<{ status: number; body: string; type?: string }>;

/** An HTTP listener on 127.0.0.1 that keeps every request it gets. */
export class Listener {
  readonly received: Received[] = [];
  readonly #server: http.Server;
  port = 0;

  constructor(answer: Answer) {
    this.#server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
        const got: Received = {
          receivedAt: new Date().toISOString(),
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          httpVersion: req.httpVersion,
          headers,
          rawHeaders: req.rawHeaders.slice(),
          rawBody: Buffer.concat(chunks).toString('utf8'),
        };
        this.received.push(got);
        Promise.resolve(answer(got)).then(
          (a) => res.writeHead(a.status, { 'Content-Type': a.type ?? 'application/json' }).end(a.body),
          () => res.writeHead(500).end(),
        );
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  /** What arrived since the last drain. */
  drain(): Received[] {
    return this.received.splice(0, this.received.length);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

/** A received request, redacted; `resign` recomputes a Talk signature header over the redacted body. */
export function redactReceived(redactor: Redactor, got: Received, resign?: { header: string; randomHeader: string }): Received {
  const rawBody = redactor.text(got.rawBody);
  const headers = redactor.headers(got.headers);
  const rawHeaders = got.rawHeaders.map((v, i) => (i % 2 === 1 ? redactor.header(got.rawHeaders[i - 1] ?? '', v) : v));
  if (resign) {
    const random = got.headers[resign.randomHeader.toLowerCase()] ?? '';
    const signature = hmacHex(CAPTURE_TEST_SECRET, random + rawBody);
    headers[resign.header.toLowerCase()] = signature;
    for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === resign.header.toLowerCase()) rawHeaders[i + 1] = signature;
  }
  return { ...got, headers, rawHeaders, rawBody };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
