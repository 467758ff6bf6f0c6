import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../lib/log/logger.ts';
import { redactValue, registerSecret, REDACTED } from '../../lib/log/redact.ts';

const SECRET = 'registered-secret-value-for-redaction';
registerSecret(SECRET);

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { lines, destination };
}

describe('redaction (S20)', () => {
  it('redacts sensitive keys on every path, case-insensitively', () => {
    const out = redactValue({
      headers: { 'AUTHORIZATION-APP-API': 'x', Cookie: 'c', 'X-Nextcloud-Talk-Bot-Signature': 'sig', Accept: 'application/json' },
      nested: [{ apiKey: 'k', password: 'p', usage: { prompt_tokens: 12, max_tokens: 5 } }],
    }) as Record<string, any>;
    assert.equal(out.headers['AUTHORIZATION-APP-API'], REDACTED);
    assert.equal(out.headers.Cookie, REDACTED);
    assert.equal(out.headers['X-Nextcloud-Talk-Bot-Signature'], REDACTED);
    assert.equal(out.headers.Accept, 'application/json');
    assert.equal(out.nested[0].apiKey, REDACTED);
    assert.equal(out.nested[0].usage.prompt_tokens, 12);
  });

  it('redacts registered secrets by value, also inside base64 and bearer tokens', () => {
    const header = Buffer.from(`alice:${SECRET}`).toString('base64');
    const out = redactValue({ note: `value ${SECRET} here`, raw: `auth=${header}`, bearer: 'Authorization: Bearer abcdefghijkl' }) as Record<string, string>;
    assert.ok(!JSON.stringify(out).includes(SECRET));
    assert.ok(!out.raw?.includes(header));
    assert.match(out.bearer ?? '', /Bearer \[redacted\]/);
  });

  it('keeps secrets out of log lines and forwards warnings redacted', () => {
    const { lines, destination } = capture();
    const forwarded: string[] = [];
    const logger = createLogger({ destination, onWarnOrError: (_l, m) => forwarded.push(m) });
    logger.info({ headers: { 'authorization-app-api': Buffer.from(`:${SECRET}`).toString('base64') } }, 'incoming');
    logger.warn(`failed with ${SECRET}`);
    logger.error({ err: new Error(`boom ${SECRET}`) }, 'bad');
    const all = lines.join('');
    assert.ok(!all.includes(SECRET), all);
    assert.equal(lines.length, 3);
    assert.deepEqual(forwarded, ['failed with [redacted]', 'bad']);
  });
});
