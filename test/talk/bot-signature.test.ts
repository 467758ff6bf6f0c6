import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { newReferenceId, signBotMessage, verifyBotSignature } from '../../lib/talk/bot-signature.ts';

const HEX64 = /^[0-9a-f]{64}$/;

// Request of capture 41-bot-reply-1.json (Talk answered 201). The bot secret is
// redacted in the capture, so only the header format and the signed field are checked.
const CAPTURE_41 = {
  random: '2402d54c05c91e59579a24897c1446c24c7d3849d8c02fc86ab2fbf645b54937',
  signature: 'af422335703683f5d37ce62c4d44db10e4ac6c463112a63747fa590880e2a6ee',
  body: '{"message":"EducAI bot echo: Hello EducAI, what is 2+2?","replyTo":135}',
};

// Independent computation, as Talk does it in PHP: hash_hmac('sha256', random . message, secret).
function reference(secret: string, random: string, message: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.from(random + message, 'utf8'))
    .digest('hex');
}

describe('signBotMessage', () => {
  const secret = 'a'.repeat(40) + 'bot-secret';
  const random = '0123456789abcdef'.repeat(4);

  it('signs random + message with the secret', () => {
    for (const message of ['Hello', '', 'Grüße 🎓 — ünïcödé', '{"message":"x"}']) {
      const signed = signBotMessage(secret, message, random);
      assert.deepEqual(signed, { random, signature: reference(secret, random, message) });
    }
  });

  it('signs the message text, not the JSON body', () => {
    const message = JSON.parse(CAPTURE_41.body).message as string;
    const overMessage = signBotMessage(secret, message, CAPTURE_41.random).signature;
    const overBody = signBotMessage(secret, CAPTURE_41.body, CAPTURE_41.random).signature;
    assert.equal(overMessage, reference(secret, CAPTURE_41.random, message));
    assert.notEqual(overMessage, overBody);
  });

  it('produces headers in the format of the real capture', () => {
    assert.match(CAPTURE_41.random, HEX64);
    assert.match(CAPTURE_41.signature, HEX64);
    const signed = signBotMessage(secret, 'EducAI bot echo');
    assert.match(signed.random, HEX64);
    assert.match(signed.signature, HEX64);
    assert.equal(signed.signature, reference(secret, signed.random, 'EducAI bot echo'));
  });

  it('draws a fresh random each time', () => {
    assert.notEqual(signBotMessage(secret, 'x').random, signBotMessage(secret, 'x').random);
  });

  it('requires a random of at least 32 header-safe characters', () => {
    assert.throws(() => signBotMessage(secret, 'x', 'f'.repeat(31)), RangeError);
    assert.equal(signBotMessage(secret, 'x', 'f'.repeat(32)).random.length, 32);
    assert.throws(() => signBotMessage(secret, 'x', 'f'.repeat(31) + '\n'), RangeError);
    assert.throws(() => signBotMessage(secret, 'x', 'f'.repeat(31) + ' g'), RangeError);
  });
});

describe('verifyBotSignature', () => {
  const secret = 'talk-bot-secret-' + 'z'.repeat(48);
  const random = 'r'.repeat(64);
  const signature = reference(secret, random, 'hi');

  it('accepts a correct signature, also in upper case', () => {
    assert.equal(verifyBotSignature(secret, random, 'hi', signature), true);
    assert.equal(verifyBotSignature(secret, random, 'hi', signature.toUpperCase()), true);
  });

  it('rejects any changed part', () => {
    assert.equal(verifyBotSignature(secret + 'x', random, 'hi', signature), false);
    assert.equal(verifyBotSignature(secret, 's'.repeat(64), 'hi', signature), false);
    assert.equal(verifyBotSignature(secret, random, 'hi!', signature), false);
    assert.equal(verifyBotSignature(secret, random, 'hi', signature.slice(0, 63)), false);
    assert.equal(verifyBotSignature(secret, random, 'hi', ''), false);
    const flipped = (signature[0] === '0' ? '1' : '0') + signature.slice(1);
    assert.equal(verifyBotSignature(secret, random, 'hi', flipped), false);
  });

  it('rejects a random shorter than 32 characters, as Talk does', () => {
    const short = 'r'.repeat(31);
    assert.equal(verifyBotSignature(secret, short, 'hi', reference(secret, short, 'hi')), false);
  });

  it('does not accept the capture with a guessed secret', () => {
    const message = JSON.parse(CAPTURE_41.body).message as string;
    assert.equal(verifyBotSignature(secret, CAPTURE_41.random, message, CAPTURE_41.signature), false);
  });
});

describe('newReferenceId', () => {
  it('returns 64 fresh hex characters', () => {
    const a = newReferenceId();
    assert.match(a, HEX64);
    assert.notEqual(a, newReferenceId());
  });
});
