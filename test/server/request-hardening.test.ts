// What a fuzzer found at the HTTP edge (issue 20): bodies that do not match their Content-Encoding, an
// upstream failure on the tools route, a Content-Length far beyond the limit, client aborts in the log,
// and an unmatched /api path without the S22 headers.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';

const PLAIN = '{"type":"Create"}';

/** Sends `head` (and `body`) on a raw socket; resolves with everything the server wrote once it closes or `settleMs` passes. */
function raw(url: string, head: string, body = '', settleMs = 5_000): Promise<{ text: string; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), hostname, () => socket.write(head + body));
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, settleMs);
  });
}

function headerBlock(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
}

describe('the HTTP edge under malformed requests', () => {
  let h: Harness;
  const errorLines = () => h.logLines.filter((l) => JSON.parse(l).level === 'error');

  before(async () => {
    h = await startHarness({ dialect: 'sqlite' });
  });
  after(async () => {
    await h.close();
  });

  it('answers 400 for a body that does not match its Content-Encoding, on the webhook and on a JSON API route', async () => {
    for (const encoding of ['gzip', 'br', 'deflate']) {
      const hook = await h.fetch('/talk_bot', { method: 'POST', headers: h.headers('', { 'Content-Encoding': encoding }), body: PLAIN });
      assert.equal(hook.status, 400, `${encoding}: ${hook.text}`);
      assert.equal(hook.json.error.code, 'bad_encoding');
      assert.match(hook.json.error.message, /Content-Encoding/);
      const api = await h.fetch('/api/v1/me/settings', {
        method: 'PUT',
        headers: h.browserHeaders('alice', { 'Content-Encoding': encoding }),
        body: '{"toolFamilies":{"deck":false}}',
      });
      assert.equal(api.status, 400, `${encoding}: ${api.text}`);
      assert.equal(api.json.error.code, 'bad_encoding');
    }
    assert.equal(h.nc.preferences.get('alice'), undefined, 'nothing was stored');
    assert.deepEqual(errorLines(), []);
  });

  it('answers 415 for an encoding it does not read, and still reads gzip and br that match', async () => {
    const hook = await h.fetch('/talk_bot', { method: 'POST', headers: h.headers('', { 'Content-Encoding': 'x-foo' }), body: PLAIN });
    assert.equal(hook.status, 415, hook.text);
    assert.equal(hook.json.error.code, 'unsupported_encoding');
    const api = await h.fetch('/api/v1/me/settings', { method: 'PUT', headers: h.browserHeaders('alice', { 'Content-Encoding': 'x-foo' }), body: '{}' });
    assert.equal(api.status, 415, api.text);

    for (const [encoding, packed] of [
      ['gzip', gzipSync('{"toolFamilies":{"deck":false}}')],
      ['br', brotliCompressSync('{"toolFamilies":{"deck":true}}')],
    ] as const) {
      const res = await fetch(`${h.url}/api/v1/me/settings`, {
        method: 'PUT',
        headers: { ...h.browserHeaders('alice'), 'Content-Type': 'application/json', 'Content-Encoding': encoding },
        body: packed,
      });
      assert.equal(res.status, 200, `${encoding}: ${await res.text()}`);
    }
  });

  it('answers an upstream failure on PUT /api/v1/bots/{id}/tools with 502, and keeps the tools', async () => {
    const created = await h.fetch('/api/v1/bots', {
      method: 'POST',
      headers: h.browserHeaders('alice'),
      body: { displayName: 'Filer', mention: 'filer', tools: [{ name: 'files_list' }] },
    });
    assert.equal(created.status, 201, created.text);
    const id = created.json.bot?.id ?? created.json.id;
    h.nc.failNext({ method: 'POST', path: /\/ex-app\/preference\/get-values$/ }, { status: 500, body: '' }, 5);
    const r = await h.fetch(`/api/v1/bots/${id}/tools`, {
      method: 'PUT',
      headers: h.browserHeaders('alice'),
      body: { tools: [{ name: 'files_list' }, { name: 'files_read' }] },
    });
    h.nc.clearInjections();
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.error.code, 'nextcloud_error');
    assert.equal(r.headers.get('cache-control'), 'no-store');
    const kept = await h.fetch(`/api/v1/bots/${id}/tools`, { headers: h.browserHeaders('alice') });
    assert.deepEqual(
      kept.json.tools.map((t: { name: string }) => t.name),
      ['files_list'],
    );
    assert.deepEqual(errorLines(), [], 'an upstream failure is a warning, not our error');
  });

  it('answers a Content-Length beyond the limit with 413 at once and closes the connection', async () => {
    const head = `POST /talk_bot HTTP/1.1\r\nHost: x\r\n${headerBlock(h.headers(''))}Content-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n`;
    const r = await raw(h.url, head);
    // Closed a second after the answer, since the body never comes (not at Node's 300 s request timeout).
    assert.ok(r.closed, `the connection stays open: ${r.text}`);
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.match(r.text, /"code":"too_large"/);
  });

  it('lets a client that sends its whole oversized body read the 413', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${h.url}/api/v1/me/settings`, {
        method: 'PUT',
        headers: { ...h.browserHeaders('alice'), 'Content-Type': 'application/json' },
        body: JSON.stringify({ toolFamilies: 'x'.repeat(1_000_000) }),
      });
      assert.equal(res.status, 413);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'too_large');
    }
  });

  it('answers a malformed percent-encoding in a path parameter with 400, not 500', async () => {
    const r = await h.fetch('/api/v1/bots/%ZZ', { method: 'PUT', headers: h.browserHeaders('alice'), body: { displayName: 'x' } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, 'bad_path');
  });

  it('logs a client that hangs up mid-body below error level', async () => {
    const before = h.logLines.length;
    const head = `PUT /api/v1/me/settings HTTP/1.1\r\nHost: x\r\n${headerBlock(h.browserHeaders('alice'))}Content-Type: application/json\r\nContent-Length: 200\r\n\r\n`;
    const { hostname, port } = new URL(h.url);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(head + '{"toolFamilies":');
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
    });
    await waitFor(() => h.logLines.slice(before).some((l) => JSON.parse(l).msg === 'client closed the request before it was read'), 'the abort to be logged');
    assert.deepEqual(errorLines(), []);
  });

  it('sends nosniff and no-store with the 404 of an unmatched /api path (S22)', async () => {
    for (const path of ['/api/v1//admin/settings', '/api/v1/no-such-thing', '/api/v2/bots']) {
      const r = await h.fetch(path, { headers: h.browserHeaders('admin') });
      assert.equal(r.status, 404, path);
      assert.equal(r.json.error.code, 'not_found');
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(r.headers.get('cache-control'), 'no-store', path);
    }
    const unauthenticated = await h.fetch('/api/v1/bots');
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.headers.get('cache-control'), 'no-store');
  });
});
