import express, { type RequestHandler } from 'express';
import { HttpError } from '../errors/http-error.ts';

/** `256kb` → 262144; a number is taken as bytes. */
function bytes(limit: number | string): number {
  if (typeof limit === 'number') return limit;
  const m = /^(\d+)\s*(b|kb|mb)?$/i.exec(limit.trim());
  if (!m) throw new Error(`unreadable body limit ${limit}`);
  return Number(m[1]) * ({ b: 1, kb: 1024, mb: 1024 * 1024 } as const)[(m[2] ?? 'b').toLowerCase() as 'b' | 'kb' | 'mb'];
}

/**
 * express.json with the declared length checked first. body-parser reads a refused body to its end before
 * it answers, so a `Content-Length` far beyond the limit held the connection until the server's request
 * timeout; here it gets 413 at once, and the error handler closes the connection unless the rest of the
 * body arrives within a second (lingerThenClose).
 */
export function jsonBody(options: { limit: number | string; type?: (req: unknown) => boolean }): RequestHandler {
  const max = bytes(options.limit);
  const parse = express.json({ limit: max, ...(options.type ? { type: options.type } : {}) });
  return (req, res, next) => {
    const declared = req.headers['content-length'];
    if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > max) {
      next(new HttpError(413, 'too_large', 'Request body is too large'));
      return;
    }
    parse(req, res, next);
  };
}
