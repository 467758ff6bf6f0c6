import { turnOf, type InvocationContext } from './tool-provider.ts';
import type { TurnTaint } from './confirmation-gate.ts';

/**
 * The taint of the turn an invocation context belongs to, so that providers
 * with their own confirmation workflow (first-party tools) can ask for the
 * user's confirmation once untrusted content entered the turn (S6).
 */
const taints = new WeakMap<InvocationContext, TurnTaint>();

export function attachTaint(ctx: InvocationContext, taint: TurnTaint): void {
  taints.set(ctx, taint);
}

export function isTurnTainted(ctx: InvocationContext): boolean {
  return taints.get(turnOf(ctx))?.tainted ?? false;
}
