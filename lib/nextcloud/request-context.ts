import { AsyncLocalStorage } from 'node:async_hooks';

/** Carries AppAPI's request id so our calls back to Nextcloud can be correlated. */
const storage = new AsyncLocalStorage<{ requestId: string }>();

export function runWithRequestId<T>(requestId: string | undefined, fn: () => T): T {
  if (!requestId) return fn();
  return storage.run({ requestId: requestId.slice(0, 64) }, fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
