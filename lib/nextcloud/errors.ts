/**
 * One error class per failure, like openai-node. Messages never carry response
 * bodies or URLs with credentials: only the operation, status and Nextcloud's
 * short OCS message.
 */
export class NextcloudError extends Error {
  override name = 'NextcloudError';
  readonly status: number;
  readonly ocsStatus: number | null;
  readonly operation: string;

  constructor(operation: string, status: number, message: string, ocsStatus: number | null = null) {
    super(`${operation}: ${message}`.slice(0, 500));
    this.operation = operation;
    this.status = status;
    this.ocsStatus = ocsStatus;
  }
}

export class NextcloudAuthError extends NextcloudError {
  override name = 'NextcloudAuthError';
}
export class NextcloudForbiddenError extends NextcloudError {
  override name = 'NextcloudForbiddenError';
}
export class NextcloudNotFoundError extends NextcloudError {
  override name = 'NextcloudNotFoundError';
}
/** 409 Conflict and 412 Precondition Failed: the object changed or already exists. */
export class NextcloudConflictError extends NextcloudError {
  override name = 'NextcloudConflictError';
}
export class NextcloudRateLimitError extends NextcloudError {
  override name = 'NextcloudRateLimitError';
}
export class NextcloudServerError extends NextcloudError {
  override name = 'NextcloudServerError';
}
export class NextcloudTimeoutError extends NextcloudError {
  override name = 'NextcloudTimeoutError';
}
export class NextcloudNetworkError extends NextcloudError {
  override name = 'NextcloudNetworkError';
}
/** A URL we were about to send leaves Nextcloud's origin or the template (S1, S2). */
export class UnsafeRequestError extends NextcloudError {
  override name = 'UnsafeRequestError';
}

export function errorForStatus(operation: string, status: number, message: string, ocsStatus: number | null = null): NextcloudError {
  if (status === 401) return new NextcloudAuthError(operation, status, message, ocsStatus);
  if (status === 403) return new NextcloudForbiddenError(operation, status, message, ocsStatus);
  if (status === 404) return new NextcloudNotFoundError(operation, status, message, ocsStatus);
  if (status === 409 || status === 412) return new NextcloudConflictError(operation, status, message, ocsStatus);
  if (status === 429) return new NextcloudRateLimitError(operation, status, message, ocsStatus);
  if (status >= 500) return new NextcloudServerError(operation, status, message, ocsStatus);
  return new NextcloudError(operation, status, message, ocsStatus);
}
