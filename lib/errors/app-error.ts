// The one error root of the app. An AppError carries a stable `code` and a `publicMessage` that is
// safe to show to the caller (never a secret, a URL with credentials or an upstream body). Its
// `kind` says what went wrong in the caller's terms; server/app.ts maps each kind to one HTTP status,
// in one table, and nothing else in lib/ chooses a status.

export type ErrorKind =
  /** The caller sent something we refuse (400). */
  | 'invalid'
  /** Not signed in, or the signature is wrong (401). */
  | 'unauthenticated'
  /** Signed in, but not allowed (403). */
  | 'forbidden'
  /** The thing does not exist, or the caller may not know that it does (404). */
  | 'not_found'
  /** The request clashes with the current state (409). */
  | 'conflict'
  /** Too big to take (413). */
  | 'too_large'
  /** Too many requests; try later (429). */
  | 'rate_limited'
  /** Nextcloud or a model provider failed us (502). */
  | 'upstream'
  /** A part of ours is not ready or switched off (503). */
  | 'unavailable'
  /** A fault of ours (500). */
  | 'internal';

export interface AppErrorOptions {
  /** Field errors or other structured detail the caller may see. */
  details?: unknown;
  cause?: unknown;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly kind: ErrorKind;
  readonly code: string;
  /** What the caller may read; `message` may say more, for the log. */
  readonly publicMessage: string;
  readonly details: unknown;

  constructor(kind: ErrorKind, code: string, publicMessage: string, options: AppErrorOptions & { message?: string } = {}) {
    super(options.message ?? publicMessage, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.code = code;
    this.publicMessage = publicMessage;
    this.details = options.details;
  }
}
