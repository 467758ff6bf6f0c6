// Stops an agent loop that repeats the same tool batch or runs past its iteration cap.

import { batchLoopThreshold, unknownPolicy } from '../tools/tool-policy.ts';
import type { ToolPolicy } from '../tools/tool-policy.ts';

export const MAX_TOOL_ITERATIONS = 50;

const MAX_STRING_CHARS = 250;
const MAX_ARGS_JSON_CHARS = 400;
const MAX_DEPTH = 32;

export interface LoopGuardOptions {
  maxIterations: number;
}

export interface SignatureCall {
  name: string;
  args: unknown;
}

export type LoopStopReason = 'repeat' | 'cap';

export interface LoopDecision {
  stop: boolean;
  reason: LoopStopReason | null;
}

function firstChars(text: string, max: number): string {
  let count = 0;
  let index = 0;
  while (index < text.length) {
    if (count === max) return text.slice(0, index);
    const code = text.codePointAt(index) ?? 0;
    index += code > 0xffff ? 2 : 1;
    count++;
  }
  return text;
}

function roundNumber(value: number): number | null {
  if (!Number.isFinite(value)) return null;
  if (Number.isInteger(value)) return value === 0 ? 0 : value;
  const rounded = Math.round(value * 1e6) / 1e6;
  return Number.isFinite(rounded) ? rounded + 0 : value;
}

function normalizeValue(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return firstChars(value.replace(/\s+/g, ' ').trim(), MAX_STRING_CHARS);
  if (typeof value === 'number') return roundNumber(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean' || value === null) return value;
  if (typeof value !== 'object') return null;
  if (depth > MAX_DEPTH || seen.has(value)) return null;
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((item) => normalizeValue(item, depth + 1, seen));
  } else {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const child: unknown = (value as Record<string, unknown>)[key];
      if (child === undefined || typeof child === 'function' || typeof child === 'symbol') continue;
      // defineProperty keeps a "__proto__" key an ordinary key.
      Object.defineProperty(sorted, key, { value: normalizeValue(child, depth + 1, seen), enumerable: true, writable: true, configurable: true });
    }
    out = sorted;
  }
  seen.delete(value);
  return out;
}

function parsedArgs(args: unknown): unknown {
  if (typeof args !== 'string') return args ?? {};
  const trimmed = args.trim();
  if (trimmed === '') return {};
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return args;
  }
}

function callPart(call: unknown): [string, string] {
  const record = call !== null && typeof call === 'object' ? (call as Record<string, unknown>) : {};
  const name = typeof record['name'] === 'string' ? record['name'].trim() : '';
  let json: string;
  try {
    json = JSON.stringify(normalizeValue(parsedArgs(record['args']), 0, new WeakSet())) ?? 'null';
  } catch {
    json = 'null';
  }
  return [name, firstChars(json, MAX_ARGS_JSON_CHARS)];
}

/**
 * Stable signature of one batch: names plus normalised arguments. The calls of a
 * batch are sorted, since a model may emit the same parallel calls in any order.
 */
export function callSignature(calls: ReadonlyArray<SignatureCall>): string {
  const list: unknown[] = Array.isArray(calls) ? calls : [];
  const parts = list.map(callPart).sort((a, b) => {
    const x = JSON.stringify(a);
    const y = JSON.stringify(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return JSON.stringify(parts);
}

function clampIterations(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return MAX_TOOL_ITERATIONS;
  return Math.max(1, Math.min(MAX_TOOL_ITERATIONS, Math.floor(value)));
}

export class LoopGuard {
  readonly maxIterations: number;
  #iterations = 0;
  #lastSignature: string | null = null;
  #repeats = 0;

  constructor(options: LoopGuardOptions) {
    this.maxIterations = clampIterations(options?.maxIterations);
  }

  get iterations(): number {
    return this.#iterations;
  }

  /** Consecutive batches, ending with the latest, that share its signature. */
  get repeats(): number {
    return this.#repeats;
  }

  /**
   * Records one executed batch. `policies[i]` belongs to `calls[i]`; a call without a
   * policy counts as a tool that may change things.
   */
  recordBatch(calls: ReadonlyArray<SignatureCall>, policies: readonly ToolPolicy[]): LoopDecision {
    const callList = Array.isArray(calls) ? calls : [];
    const policyList = Array.isArray(policies) ? policies.slice(0, callList.length) : [];
    while (policyList.length < callList.length) policyList.push(unknownPolicy());

    this.#iterations++;
    if (callList.length === 0) {
      this.#lastSignature = null;
      this.#repeats = 0;
    } else {
      const signature = callSignature(callList);
      this.#repeats = signature === this.#lastSignature ? this.#repeats + 1 : 1;
      this.#lastSignature = signature;
      if (this.#repeats >= batchLoopThreshold(policyList)) return { stop: true, reason: 'repeat' };
    }
    if (this.#iterations >= this.maxIterations) return { stop: true, reason: 'cap' };
    return { stop: false, reason: null };
  }
}
