import { errorForStatus, NextcloudError } from './errors.ts';

interface OcsEnvelope {
  ocs?: { meta?: { status?: string; statuscode?: number; message?: string }; data?: unknown };
}

/** OCS v1 answers HTTP 200 with the real outcome in meta.statuscode; map it to HTTP terms. */
function v1StatusToHttp(code: number): number {
  if (code === 100) return 200;
  if (code === 997) return 401;
  if (code === 998) return 404;
  if (code === 996) return 500;
  if (code >= 100 && code < 600) return code;
  return 400;
}

/** Unwraps an OCS v1 or v2 JSON envelope; throws a typed error for failures. */
export function unwrapOcs<T>(operation: string, httpStatus: number, bodyText: string): T {
  let envelope: OcsEnvelope | null = null;
  if (bodyText.trim() !== '') {
    try {
      envelope = JSON.parse(bodyText) as OcsEnvelope;
    } catch {
      envelope = null;
    }
  }
  const meta = envelope?.ocs?.meta;
  if (!envelope?.ocs || !meta) {
    if (httpStatus >= 400) {
      const message = (envelope as { message?: unknown } | null)?.message;
      throw errorForStatus(operation, httpStatus, typeof message === 'string' ? message.slice(0, 200) : `HTTP ${httpStatus}`);
    }
    throw new NextcloudError(operation, httpStatus, 'response is not an OCS envelope');
  }
  const statuscode = typeof meta.statuscode === 'number' ? meta.statuscode : httpStatus;
  const message = (meta.message || `HTTP ${httpStatus}`).slice(0, 200);
  if (httpStatus >= 400) throw errorForStatus(operation, httpStatus, message, statuscode);
  if (meta.status !== 'ok') throw errorForStatus(operation, v1StatusToHttp(statuscode), message, statuscode);
  return envelope.ocs.data as T;
}
