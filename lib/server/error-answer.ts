import type { Request } from 'express';
import { EgressError } from '../egress/egress-fetch.ts';
import { ProviderHttpError, ProviderStreamError } from '../llm/chat-stream.ts';
import { LlmError } from '../llm/model-ref.ts';
import { NextcloudError } from '../nextcloud/errors.ts';
import { HttpError } from '../errors/http-error.ts';

/** What the error handler answers and how loudly it logs. `aborted`: the client is gone, nothing is written. */
export type ErrorAnswer =
  | { kind: 'answer'; status: number; code: string; message: string; details?: unknown; log: 'none' | 'info' | 'warn' | 'error'; close: boolean }
  | { kind: 'aborted' };

/** http-errors as body-parser (and raw-body, under it) makes them: a 4xx status and often a `type`. */
interface BodyError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  code?: unknown;
  expose?: unknown;
}

function clientStatus(err: BodyError): number | null {
  const status = typeof err.status === 'number' ? err.status : typeof err.statusCode === 'number' ? err.statusCode : null;
  return status !== null && status >= 400 && status < 500 && err.expose === true ? status : null;
}

const answer = (status: number, code: string, message: string, log: 'none' | 'info' | 'warn' | 'error' = 'none', close = false): ErrorAnswer => ({
  kind: 'answer',
  status,
  code,
  message,
  log,
  close,
});

/**
 * One mapping for every route. Body errors are the caller's: a body that does not match its
 * Content-Encoding is 400, an encoding or charset we do not read is 415. A failure of Nextcloud or of a
 * model provider is 502 wherever it surfaces, so no route answers 500 for an upstream that misbehaved.
 * A client that hung up is not an error of ours.
 */
export function errorAnswer(err: unknown, req: Request): ErrorAnswer {
  if (err instanceof HttpError)
    return {
      kind: 'answer',
      status: err.status,
      code: err.code,
      message: err.message,
      ...(err.details ? { details: err.details } : {}),
      log: 'none',
      close: false,
    };
  if (err instanceof NextcloudError) return answer(502, 'nextcloud_error', 'Nextcloud did not answer as expected; try again', 'warn');
  if (err instanceof LlmError) return answer(502, 'provider_error', err.publicMessage, 'warn');
  if (err instanceof ProviderHttpError || err instanceof ProviderStreamError || err instanceof EgressError) {
    return answer(502, 'provider_error', 'The AI service did not answer as expected; try again', 'warn');
  }
  // The router could not decode a path parameter (`/api/v1/bots/%ZZ`).
  if (err instanceof URIError) return answer(400, 'bad_path', 'The address contains a malformed percent-encoding');
  const e = (err ?? {}) as BodyError;
  const socketGone = req.socket?.destroyed === true && (e.code === 'ECONNRESET' || e.code === 'ECONNABORTED' || e.code === 'ERR_STREAM_PREMATURE_CLOSE');
  if (e.type === 'request.aborted' || socketGone) return { kind: 'aborted' };
  const status = clientStatus(e);
  if (status === null) return answer(500, 'internal', 'Internal error', 'error');
  // Each refused body closes the connection: what is left of it is not read again.
  switch (e.type) {
    case 'entity.too.large':
      // Behind AppAPI's proxy the caller may never see this answer (Talk gets 200): the log is the only trace.
      return answer(413, 'too_large', 'Request body is too large', 'warn', true);
    case 'entity.parse.failed':
      return answer(400, 'bad_json', 'Request body is not valid JSON', 'none', true);
    case 'encoding.unsupported':
      return answer(415, 'unsupported_encoding', 'This Content-Encoding is not supported; send the body as is, or with gzip, deflate or br', 'none', true);
    case 'charset.unsupported':
      return answer(415, 'unsupported_charset', 'This charset is not supported; send UTF-8 JSON', 'none', true);
    case 'request.size.invalid':
      return answer(400, 'bad_length', 'Request body does not match its Content-Length', 'none', true);
  }
  const encoding = req.headers['content-encoding'];
  if (typeof encoding === 'string' && encoding.trim().toLowerCase() !== 'identity') {
    return answer(400, 'bad_encoding', 'Request body does not match its Content-Encoding', 'none', true);
  }
  return answer(status, 'bad_request', 'Request body could not be read', 'none', true);
}
