// S6: a turn is tainted once content the invoker did not type enters it: this turn's tool
// results, or other people's messages brought back by memory (never the bot's own answers
// alone). From then on, tools that write or widen visibility need the invoker's confirmation.

import type { ToolPolicy } from './tool-policy.ts';

export type TaintSource =
  /** A tool's output (MCP, companion, files, search results…). */
  | 'tool-result'
  /** Messages of other participants in the conversation memory. */
  | 'other-participants';

export class TurnTaint {
  readonly #sources = new Set<TaintSource>();

  get tainted(): boolean {
    return this.#sources.size > 0;
  }

  get sources(): ReadonlySet<TaintSource> {
    return this.#sources;
  }

  add(source: TaintSource): void {
    this.#sources.add(source);
  }
}

export interface ProposedCall {
  name: string;
  args: Record<string, unknown>;
}

export type ConfirmationDecision =
  | { required: false }
  | {
      required: true;
      reason: 'untrusted-content';
      /** What the model is told instead of a tool result. */
      observation: string;
    };

function describe(sources: ReadonlySet<TaintSource>): string {
  const parts: string[] = [];
  if (sources.has('tool-result')) parts.push('tool results');
  if (sources.has('other-participants')) parts.push("other participants' messages");
  return parts.join(', ');
}

/**
 * The single hook that decides whether a call must wait for the invoker's
 * confirmation. Today the call is then not run and the model is told why; the
 * confirmation workflow (S7) replaces the observation with a pending action.
 */
export function requiresConfirmation(call: ProposedCall, policy: ToolPolicy, taint: TurnTaint): ConfirmationDecision {
  const changesThings = policy.readOnly !== true || policy.destructive === true;
  if (!changesThings || !taint.tainted) return { required: false };
  return {
    required: true,
    reason: 'untrusted-content',
    observation:
      `ACTION NOT RUN: ${call.name} can change data, and this conversation contains content the user did not write in this message (${describe(taint.sources)}). ` +
      "Such actions need the user's explicit confirmation, so it was not executed. Do not claim it was done. " +
      'Tell the user exactly what you intended to do and that it needs their confirmation.',
  };
}

export type ConfirmationHook = typeof requiresConfirmation;

/** A tool provider that runs its own confirmation workflow (S7): first-party tools, the wiki. */
export interface SelfConfirmingProvider {
  providesTool(name: string): boolean;
}

/**
 * The hook for an agent with providers that ask for the invoker's confirmation themselves:
 * their calls go through to them, every other call is judged by `base`. The list is read on
 * each call, so providers built after the agent can be added to it.
 */
export function exemptSelfConfirming(providers: ReadonlyArray<SelfConfirmingProvider>, base: ConfirmationHook = requiresConfirmation): ConfirmationHook {
  return (call, policy, taint) => (providers.some((p) => p.providesTool(call.name)) ? { required: false } : base(call, policy, taint));
}
