// referenceIds for messages the server posts AS THE USER (e.g. a file shared into Talk by a
// tool). They look like Talk's own 64-hex ids but carry an HMAC, so a reply can be recognised
// as ours and never counts as the user's confirmation (S7, test/fixtures/nextcloud29/62-talk-webhook-file-share.json).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

function tag(salt: string, nonce: string): string {
  return createHmac('sha256', salt).update(`educai-user-message:${nonce}`).digest('hex').slice(0, 32);
}

export function createOwnReferenceId(salt: string): string {
  const nonce = randomBytes(16).toString('hex');
  return `${nonce}${tag(salt, nonce)}`;
}

export function isOwnReferenceId(salt: string, referenceId: string | null | undefined): boolean {
  if (typeof referenceId !== 'string' || !/^[0-9a-f]{64}$/.test(referenceId)) return false;
  const expected = Buffer.from(tag(salt, referenceId.slice(0, 32)), 'utf8');
  const given = Buffer.from(referenceId.slice(32), 'utf8');
  return timingSafeEqual(expected, given);
}
