// The signed invocation context a companion receives with each call: who, where, for which bot, valid for one minute.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { InvocationContext } from '../tools/tool-provider.ts';
import { CONTEXT_ISSUER, CONTEXT_TOKEN_TTL_SECONDS, type InvocationClaims } from './mcp-provider-types.ts';

export async function signContextToken(key: Uint8Array, audience: string, ctx: InvocationContext, nowMs: number): Promise<string> {
  const now = Math.floor(nowMs / 1000);
  const claims: Omit<InvocationClaims, 'iss' | 'aud' | 'iat' | 'exp' | 'jti'> = {
    bot_id: ctx.botId,
    room_token: ctx.roomToken,
    thread_id: ctx.threadId,
    message_id: ctx.messageId,
    uid: ctx.user?.uid ?? null,
    actor_kind: ctx.actorKind,
  };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(CONTEXT_ISSUER)
    .setAudience(audience)
    .setIssuedAt(now)
    .setExpirationTime(now + CONTEXT_TOKEN_TTL_SECONDS)
    .setJti(randomUUID())
    .sign(key);
}
