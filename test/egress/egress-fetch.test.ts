// SSRF matrix (S18) against real local servers. Refusals happen before any
// connection: every server counts what it received, and refused hosts get nothing.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { classifyAddress, checkAddress, parseAllowList, allowListEntryProblem } from '../../lib/egress/address-policy.ts';
import { createEgressFetch, fetchBytes, EgressError, type ResolvedAddress } from '../../lib/egress/egress-fetch.ts';

interface CountingServer {
  url: string;
  port: number;
  hits: Array<{ path: string; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

async function startServer(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<CountingServer> {
  const hits: CountingServer['hits'] = [];
  const server = http.createServer((req, res) => {
    hits.push({ path: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function resolverOf(table: Record<string, string[] | (() => string[])>): (host: string) => Promise<ResolvedAddress[]> {
  return async (host) => {
    const entry = table[host];
    if (entry === undefined) throw new Error('ENOTFOUND');
    const list = typeof entry === 'function' ? entry() : entry;
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

async function refusal(p: Promise<unknown>): Promise<EgressError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof EgressError, `expected EgressError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a refusal');
}

describe('address policy', () => {
  test('refuses every internal range and allows public unicast', () => {
    const refused = [
      '0.0.0.0',
      '0.1.2.3',
      '127.0.0.1',
      '127.255.0.9',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '169.254.1.1',
      '100.64.0.1',
      '100.127.255.254',
      '100.100.100.200',
      '168.63.129.16',
      '224.0.0.1',
      '255.255.255.255',
      '240.0.0.1',
      '192.0.2.1',
      '::',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:8.8.8.8',
      '::7f00:1',
      '64:ff9b::7f00:1',
      '64:ff9b:1::a00:1',
      'fc00::1',
      'fd00:ec2::254',
      'fe80::1',
      'fec0::1',
      'ff02::1',
      '2002:7f00:1::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '[::1]',
      'fe80::1%eth0',
    ];
    for (const ip of refused) assert.equal(classifyAddress(ip).allowed, false, ip);
    for (const ip of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '172.32.0.1', '100.128.0.1']) {
      assert.equal(classifyAddress(ip).allowed, true, ip);
    }
  });

  test('the allow-list opens a host or a range, never unspecified or multicast', () => {
    const allow = parseAllowList(['docling.internal', '10.1.0.0/16', '::1']);
    assert.equal(checkAddress('docling.internal', '10.9.9.9', allow).allowed, true);
    assert.equal(checkAddress('other.internal', '10.1.2.3', allow).allowed, true);
    assert.equal(checkAddress('other.internal', '10.2.0.1', allow).allowed, false);
    assert.equal(checkAddress('x', '::1', allow).allowed, true);
    assert.equal(checkAddress('docling.internal', '0.0.0.0', allow).allowed, false);
    assert.equal(checkAddress('docling.internal', '224.0.0.1', allow).allowed, false);
    assert.equal(allowListEntryProblem('10.0.0.0/33'), 'is not a valid CIDR range');
    assert.equal(allowListEntryProblem('bad host!'), 'is neither a host name nor an IP range');
    assert.equal(allowListEntryProblem('fd00::/8'), null);
  });
});

describe('egress fetch against local servers', () => {
  let loop: CountingServer;
  let loopB: CountingServer;
  let v6: CountingServer;
  let big: CountingServer;
  let hang: CountingServer;

  before(async () => {
    loop = await startServer('127.0.0.1', (req, res) => {
      if (req.url === '/hop-to-loopback') {
        res.writeHead(302, { location: `${loopB.url}/secret` }).end();
      } else if (req.url?.startsWith('/chain/')) {
        const n = Number(req.url.slice('/chain/'.length));
        res.writeHead(302, { location: `/chain/${n + 1}` }).end();
      } else if (req.url === '/cross-origin') {
        res.writeHead(307, { location: `http://other.test:${loop.port}/echo` }).end();
      } else if (req.url === '/echo') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ auth: req.headers.authorization ?? null }));
      } else if (req.url === '/error') {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('SECRET-BODY-should-never-show');
      } else {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello');
      }
    });
    loopB = await startServer('127.0.0.1', (_req, res) => res.end('internal'));
    v6 = await startServer('::1', (_req, res) => res.end('v6'));
    big = await startServer('127.0.0.1', (req, res) => {
      const total = 11 * 1024 * 1024;
      if (req.url === '/declared') res.writeHead(200, { 'content-length': String(total) });
      else res.writeHead(200, { 'transfer-encoding': 'chunked' });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
    });
    hang = await startServer('127.0.0.1', () => undefined);
  });

  after(async () => {
    await Promise.all([loop.close(), loopB.close(), v6.close(), big.close(), hang.close()]);
  });

  test('a literal loopback address is refused and the server sees nothing', async () => {
    const egress = createEgressFetch();
    const err = await refusal(egress(`${loop.url}/`));
    assert.equal(err.code, 'blocked');
    assert.match(err.message, /loopback/);
    assert.equal(loop.hits.length, 0);
    await egress.close();
  });

  test('IPv6 loopback is refused, literal and resolved', async () => {
    const egress = createEgressFetch({ resolve: resolverOf({ 'six.test': ['::1'] }) });
    assert.equal((await refusal(egress(`${v6.url}/`))).code, 'blocked');
    assert.equal((await refusal(egress(`http://six.test:${v6.port}/`))).code, 'blocked');
    assert.equal(v6.hits.length, 0);
    await egress.close();
  });

  test('host names resolving to private, metadata, mapped or NAT64 addresses are refused before any connection', async () => {
    const table: Record<string, string[]> = {
      'ten.test': ['10.0.0.5'],
      'one-seven-two.test': ['172.20.1.1'],
      'one-nine-two.test': ['192.168.0.10'],
      'metadata.test': ['169.254.169.254'],
      'cgnat.test': ['100.64.1.1'],
      'zero.test': ['0.0.0.0'],
      'mapped.test': ['::ffff:10.0.0.1'],
      'nat64.test': ['64:ff9b::a00:1'],
      'ula.test': ['fd12:3456::1'],
      'linklocal.test': ['fe80::1'],
      'mixed.test': ['127.0.0.2', '10.0.0.1'],
    };
    // 127.0.0.2 is allowed, so mixed.test is refused only for its second answer.
    const egress = createEgressFetch({ resolve: resolverOf(table), allowList: () => ['127.0.0.2'] });
    for (const host of Object.keys(table)) {
      const err = await refusal(egress(`http://${host}/`));
      assert.equal(err.code, 'blocked', host);
      assert.doesNotMatch(err.message, /\d+\.\d+\.\d+\.\d+/, 'the message does not reveal the internal address');
    }
    for (const literal of ['http://10.0.0.1/', 'http://[::ffff:7f00:1]/', 'http://2130706433/', 'http://0x7f.1/', 'http://[fd00::1]/']) {
      assert.equal((await refusal(egress(literal))).code, 'blocked', literal);
    }
    await egress.close();
  });

  test('only http and https, and no credentials in the URL', async () => {
    const egress = createEgressFetch();
    assert.equal((await refusal(egress('file:///etc/passwd'))).code, 'scheme');
    assert.equal((await refusal(egress('ftp://example.org/x'))).code, 'scheme');
    assert.equal((await refusal(egress('http://user:pw@example.org/'))).code, 'credentials');
    assert.equal((await refusal(egress('not a url'))).code, 'invalid-url');
    await egress.close();
  });

  test('an allowed host that redirects to 127.0.0.1 is refused at the redirect; the target sees nothing', async () => {
    const egress = createEgressFetch({ resolve: resolverOf({ 'files.test': ['127.0.0.1'] }), allowList: () => ['files.test'] });
    const ok = await fetchBytes(egress, `http://files.test:${loop.port}/plain`);
    assert.equal(new TextDecoder().decode(ok.bytes), 'hello');
    const err = await refusal(egress(`http://files.test:${loop.port}/hop-to-loopback`));
    assert.equal(err.code, 'blocked');
    assert.equal(loopB.hits.length, 0);
    await egress.close();
  });

  test('DNS rebinding between the check and the connection cannot reach a refused address', async () => {
    let calls = 0;
    const egress = createEgressFetch({
      // First answer passes (allow-listed 127.0.0.2), the connect-time answer is 127.0.0.1.
      resolve: resolverOf({ 'rebind.test': () => (++calls === 1 ? ['127.0.0.2'] : ['127.0.0.1']) }),
      allowList: () => ['127.0.0.2'],
    });
    const err = await refusal(egress(`http://rebind.test:${loopB.port}/`));
    assert.equal(err.code, 'blocked');
    assert.ok(calls >= 2, 'the connection resolved again');
    assert.equal(loopB.hits.length, 0);
    await egress.close();
  });

  test('more than five redirects are refused', async () => {
    const egress = createEgressFetch({ allowList: () => ['127.0.0.1'] });
    const before = loop.hits.length;
    const err = await refusal(egress(`${loop.url}/chain/0`));
    assert.equal(err.code, 'too-many-redirects');
    assert.equal(loop.hits.length - before, 6, 'the first request and five redirects');
    await egress.close();
  });

  test('credentials are dropped on a cross-origin redirect', async () => {
    const egress = createEgressFetch({ resolve: resolverOf({ 'other.test': ['127.0.0.1'] }), allowList: () => ['127.0.0.1', 'other.test'] });
    const res = await egress(`${loop.url}/cross-origin`, { headers: { authorization: 'Bearer k' } });
    assert.deepEqual(await res.json(), { auth: null });
    await egress.close();
  });

  test('bodies over the cap are refused, declared or streamed', async () => {
    const egress = createEgressFetch({ allowList: () => ['127.0.0.1'] });
    const declared = await refusal(fetchBytes(egress, `${big.url}/declared`));
    assert.equal(declared.code, 'too-large');
    assert.match(declared.message, /10 MB/);
    const streamed = await refusal(fetchBytes(egress, `${big.url}/chunked`));
    assert.equal(streamed.code, 'too-large');
    await egress.close();
  });

  test('a host that never answers times out', async () => {
    const egress = createEgressFetch({ allowList: () => ['127.0.0.1'], timeoutMs: 300 });
    assert.equal((await refusal(egress(`${hang.url}/`))).code, 'timeout');
    await egress.close();
  });

  test('errors report the status, never the body', async () => {
    const egress = createEgressFetch({ allowList: () => ['127.0.0.1'] });
    const err = await refusal(fetchBytes(egress, `${loop.url}/error`));
    assert.equal(err.code, 'http-status');
    assert.equal(err.status, 500);
    assert.doesNotMatch(err.message, /SECRET-BODY/);
    await egress.close();
  });
});

describe('egress settings', () => {
  test('the allow-list is validated and normalised', async () => {
    const { createTestDatabase } = await import('../helpers/databases.ts');
    const { SettingsStore } = await import('../../lib/storage/settings-store.ts');
    const { EgressSettingsService } = await import('../../lib/egress/egress-settings.ts');
    const tdb = await createTestDatabase('sqlite');
    try {
      const s = new EgressSettingsService(new SettingsStore(tdb.db));
      assert.deepEqual(await s.get(), { allowList: [] });
      assert.deepEqual(await s.update({ allowList: ['Docling.Internal', ' 10.1.0.0/16 ', 'docling.internal', ''] }), {
        allowList: ['docling.internal', '10.1.0.0/16'],
      });
      await assert.rejects(s.update({ allowList: ['10.0.0.0/99'] }), /allowList/);
      assert.deepEqual(await s.allowList(), ['docling.internal', '10.1.0.0/16']);
    } finally {
      await tdb.drop();
    }
  });
});
