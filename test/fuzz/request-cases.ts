// Requests a fuzzer sends to a running ExApp (issue 20): Talk deliveries built from the captured webhooks
// (test/fixtures/nextcloud29/40-*, 6x-*), JSON bodies for every /api/v1 route built from its zod schema,
// each sometimes with a Content-Type or Content-Encoding that does not fit. Shared by test/fuzz/ and
// bench/fuzz.bench.ts.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { z } from 'zod';
import { apiRouteSpecs } from '../../lib/server/api-specs.ts';
import type { RouteSpec } from '../../lib/server/openapi.ts';
import { webhookBodies } from '../helpers/fixtures.ts';
import { bodyFor, mutated, oddValue } from './json-schema-arbitrary.ts';

export const WEBHOOK_CAPTURES = [
  '40-webhook-1-raw-body.json',
  '40-webhook-2-raw-body.json',
  '61-talk-webhook-mention.json',
  '62-talk-webhook-file-share.json',
  '63-talk-webhook-voice-message.json',
  '64-talk-webhook-reply.json',
  '65-talk-webhook-one-to-one.json',
  '66-talk-webhook-guest.json',
  '67-talk-webhook-bob-leaves-room.json',
  '67-talk-webhook-bot-disable-enable.json',
  '67-talk-webhook-reaction-revoked.json',
  '67-talk-webhook-system-events.json',
  '67-talk-webhook-user-added.json',
  '67-talk-webhook-user-removed.json',
  '69-talk-webhooks-after-bot-replies.json',
];

export interface FuzzRequest {
  /** For reports: the route as documented (`POST /api/v1/bots/{id}`, `POST /talk_bot`). */
  route: string;
  method: string;
  path: string;
  /** Who sends it: '' = AppAPI itself (webhooks), else a Nextcloud user through AppAPI's proxy. */
  uid: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Every captured delivery, with the Talk `content` string parsed so that mutations reach inside it. */
export function capturedWebhooks(): unknown[] {
  const out: unknown[] = [];
  for (const name of WEBHOOK_CAPTURES) {
    try {
      out.push(...webhookBodies(name));
    } catch {
      // A capture without deliveries (Talk sent none for that step).
    }
  }
  if (out.length < 5) throw new Error(`only ${out.length} captured webhooks found`);
  return out;
}

/** A Talk message's `object.content` is itself JSON: mutate it as JSON, send it as a string again. */
function withContentParsed(body: unknown): unknown {
  const o = body as { object?: { content?: unknown } };
  if (typeof o?.object?.content !== 'string') return body;
  try {
    return { ...o, object: { ...o.object, content: { __json: JSON.parse(o.object.content) } } };
  } catch {
    return body;
  }
}
function withContentString(body: unknown): unknown {
  const o = body as { object?: { content?: unknown } } | null;
  const c = o?.object?.content as { __json?: unknown } | undefined;
  if (!o || typeof o !== 'object' || !o.object || typeof o.object !== 'object' || !c || typeof c !== 'object' || !('__json' in c)) return body;
  return { ...o, object: { ...o.object, content: JSON.stringify(c.__json) } };
}

/** Encodes the body; sometimes the Content-Encoding names a compression the body does not have, or none we read. */
const encoding: fc.Arbitrary<(json: Buffer) => { body: Buffer; headers: Record<string, string> }> = fc.oneof(
  { weight: 12, arbitrary: fc.constant((b: Buffer) => ({ body: b, headers: {} })) },
  { weight: 1, arbitrary: fc.constant((b: Buffer) => ({ body: gzipSync(b), headers: { 'Content-Encoding': 'gzip' } })) },
  { weight: 1, arbitrary: fc.constant((b: Buffer) => ({ body: brotliCompressSync(b), headers: { 'Content-Encoding': 'br' } })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('gzip', 'br', 'deflate', 'x-foo', 'gzip, br', 'identity')
      .map((e) => (b: Buffer) => ({ body: b, headers: { 'Content-Encoding': e } })),
  },
  { weight: 1, arbitrary: fc.constant((b: Buffer) => ({ body: deflateSync(b), headers: { 'Content-Encoding': 'gzip' } })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        'text/plain',
        'application/json; charset=latin1',
        'application/json; charset=utf-16',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
      )
      .map((t) => (b: Buffer) => ({ body: b, headers: { 'Content-Type': t } })),
  },
);

/** The serialised body: JSON of the value, or now and then bytes that are not JSON at all. */
function serialised(value: fc.Arbitrary<unknown>): fc.Arbitrary<Buffer> {
  return fc.oneof(
    { weight: 10, arbitrary: value.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
    { weight: 1, arbitrary: value.map((v) => Buffer.from((JSON.stringify(v) ?? 'null').slice(0, -1))) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', 'null', '[]', '"x"', '{"a":1,"a":2}', '{"__proto__":{"x":1}}').map((s) => Buffer.from(s)) },
  );
}

function finish(route: string, method: string, path: string, uid: string, body: fc.Arbitrary<Buffer>): fc.Arbitrary<FuzzRequest> {
  return fc.tuple(body, encoding).map(([raw, encode]) => {
    const encoded = encode(raw);
    return { route, method, path, uid, headers: { 'Content-Type': 'application/json', ...encoded.headers }, body: encoded.body };
  });
}

export function webhookRequests(routes: string[] = ['talk_bot']): fc.Arbitrary<FuzzRequest> {
  const captured = capturedWebhooks().map(withContentParsed);
  const value = fc
    .oneof(
      { weight: 2, arbitrary: fc.constantFrom(...captured) },
      { weight: 6, arbitrary: fc.constantFrom(...captured).chain((c) => mutated(c)) },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(...captured)
          .chain((c) => mutated(c))
          .chain((c) => mutated(c)),
      },
      { weight: 1, arbitrary: oddValue },
    )
    .map(withContentString);
  return fc.constantFrom(...routes).chain((r) => finish(`POST /${r}`, 'POST', `/${r}`, '', serialised(value)));
}

export interface ApiContext {
  /** Values for path parameters by name (existing ids mixed with unknown and malformed ones). */
  params: Record<string, string[]>;
  users: string[];
}

/** Routes of the JSON API with a body: every one of them, from its zod schema. */
export function bodyRoutes(): RouteSpec[] {
  return apiRouteSpecs().filter((s) => s.body !== undefined && (s.method === 'post' || s.method === 'put'));
}

const ODD_PARAMS = ['does-not-exist', '0', '-1', '%2e%2e', '..', 'a'.repeat(300), '%00', '%ZZ', "'%20or%201=1", '%F0%9F%A4%96', '__proto__'];

export function apiRequests(context: ApiContext, specs: RouteSpec[] = bodyRoutes()): fc.Arbitrary<FuzzRequest> {
  const perRoute = specs.map((spec) => {
    const schema = z.toJSONSchema(spec.body!.schema, { io: 'input', unrepresentable: 'any' });
    const names = [...spec.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]!);
    const params = fc.tuple(
      ...names.map((n) =>
        fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...(context.params[n]?.length ? context.params[n]! : ODD_PARAMS)) },
          { weight: 1, arbitrary: fc.constantFrom(...ODD_PARAMS) },
        ),
      ),
    );
    return fc.tuple(params, fc.constantFrom(...context.users)).chain(([values, uid]) => {
      let path = spec.path;
      names.forEach((n, i) => (path = path.replace(`{${n}}`, values[i]!.includes('%') ? values[i]! : encodeURIComponent(values[i]!))));
      return finish(`${spec.method.toUpperCase()} ${spec.path}`, spec.method.toUpperCase(), path, uid, serialised(bodyFor(schema)));
    });
  });
  return fc.oneof(...perRoute);
}

/** AppAPI's headers for `uid` ('' = AppAPI itself); a user's request comes through the browser proxy. */
export function appApiHeaders(secret: string, uid: string): Record<string, string> {
  const base = {
    'EX-APP-ID': 'educai',
    'EX-APP-VERSION': '0.1.0',
    'AA-VERSION': '3.2.3',
    'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${secret}`).toString('base64'),
  };
  return uid === '' ? base : { ...base, 'X-Origin-IP': '192.0.2.10', Cookie: 'nc_session_id=fuzz', requesttoken: 'fuzz-request-token' };
}

export interface FuzzAnswer {
  status: number;
  contentType: string;
  text: string;
  ms: number;
}

export async function send(baseUrl: string, secret: string, r: FuzzRequest): Promise<FuzzAnswer> {
  const started = performance.now();
  const res = await fetch(`${baseUrl}${r.path}`, { method: r.method, headers: { ...appApiHeaders(secret, r.uid), ...r.headers }, body: r.body });
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, ms: performance.now() - started };
}

/** What is wrong with an answer, or null: no 5xx, and every 4xx is JSON with a code and a message for people. */
export function problemWith(a: FuzzAnswer): string | null {
  if (a.status >= 500) return `answered ${a.status}: ${a.text.slice(0, 200)}`;
  if (a.status < 400) return null;
  if (!/^application\/json\b/.test(a.contentType)) return `${a.status} with Content-Type ${a.contentType || 'none'}`;
  let json: { error?: { code?: unknown; message?: unknown } };
  try {
    json = JSON.parse(a.text) as typeof json;
  } catch {
    return `${a.status} with a body that is not JSON: ${a.text.slice(0, 100)}`;
  }
  const { code, message } = json.error ?? {};
  if (typeof code !== 'string' || code === '') return `${a.status} without error.code: ${a.text.slice(0, 200)}`;
  if (typeof message !== 'string' || message.trim().length < 8) return `${a.status} without a clear error.message: ${a.text.slice(0, 200)}`;
  return null;
}
