// Signs bot replies the way Talk checks them: hex HMAC-SHA256 with the bot secret
// over random + the signed string (the message text, reaction or token, never the
// JSON body). Talk refuses a random shorter than 32 characters.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const MIN_RANDOM_LENGTH = 32;

// The random travels in a header, so it must be printable ASCII without spaces.
const HEADER_SAFE = /^[\x21-\x7e]+$/;

function hmacHex(secret: string, random: string, signedString: string): string {
  return createHmac('sha256', secret)
    .update(random + signedString, 'utf8')
    .digest('hex');
}

/** Values for X-Nextcloud-Talk-Bot-Random and X-Nextcloud-Talk-Bot-Signature. */
export function signBotMessage(secret: string, signedString: string, random: string = randomBytes(32).toString('hex')): { random: string; signature: string } {
  if (random.length < MIN_RANDOM_LENGTH) {
    throw new RangeError(`bot signature random must be at least ${MIN_RANDOM_LENGTH} characters`);
  }
  if (!HEADER_SAFE.test(random)) throw new RangeError('bot signature random must be printable ASCII');
  return { random, signature: hmacHex(secret, random, signedString) };
}

/** Checks a signature as Talk does (case-insensitive hex), in constant time. */
export function verifyBotSignature(secret: string, random: string, signedString: string, signature: string): boolean {
  if (random.length < MIN_RANDOM_LENGTH) return false;
  const expected = Buffer.from(hmacHex(secret, random, signedString), 'utf8');
  const given = Buffer.from(signature.toLowerCase(), 'utf8');
  // Length is public (always 64 for a valid signature); only content is compared in constant time.
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}

/** A fresh referenceId: the send API returns no message id, this finds it later. */
export function newReferenceId(): string {
  return randomBytes(32).toString('hex');
}
