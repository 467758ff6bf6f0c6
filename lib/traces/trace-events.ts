// Trace events and runs as rows: what a trace may keep of each event (S11, S20), and rows back to the public shapes.
import { createHash } from 'node:crypto';
import type { TraceEventType, TraceRunsTable } from '../storage/tables/trace-tables.ts';
import type { TraceEvent, TraceEventInput, TraceRun, TraceRunMetadata } from './trace-types.ts';
import { clip, sanitizeForTrace, sanitizeText } from './trace-redaction.ts';

export const RUN_PREVIEW_CHARS = 500;
export const EVENT_PREVIEW_CHARS = 1000;
export const ERROR_CHARS = 1000;
export const TOOL_CONTENT_CHARS = 64 * 1024;
export const DAY_MS = 86_400_000;

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

function toolNameOf(tool: unknown): string | null {
  if (typeof tool === 'string') return tool;
  if (tool && typeof tool === 'object') {
    const t = tool as { name?: unknown; function?: { name?: unknown } };
    if (typeof t.name === 'string') return t.name;
    if (typeof t.function?.name === 'string') return t.function.name;
  }
  return null;
}

function count(n: number | null | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

/** An event as stored, before its sequence number and time are known. */
export interface PreparedEvent extends Omit<TraceEvent, 'seq' | 'createdAt'> {
  errorSummary: string | null;
  usage: { prompt: number; completion: number; total: number };
  toolCall: boolean;
}

/** Reduces an event to what a trace may keep (S11, S20). Payloads are redacted once, where they are written (eventRow). */
export function prepareEvent(e: TraceEventInput, storeToolContent: boolean): PreparedEvent {
  const base: PreparedEvent = {
    type: e.type,
    toolName: null,
    status: null,
    durationMs: null,
    payload: {},
    preview: null,
    errorSummary: null,
    usage: { prompt: 0, completion: 0, total: 0 },
    toolCall: false,
  };
  switch (e.type) {
    case 'user_message':
    case 'assistant_response': {
      const text = sanitizeText(e.text);
      return { ...base, payload: { length: e.text.length }, preview: clip(text, EVENT_PREVIEW_CHARS) };
    }
    case 'llm_request': {
      // Counts and sizes only: a system prompt or retrieved context never reaches a trace.
      const byRole: Record<string, { count: number; chars: number }> = {};
      let chars = 0;
      for (const m of e.messages) {
        const size = asText(m.content ?? '').length;
        chars += size;
        const slot = (byRole[m.role] ??= { count: 0, chars: 0 });
        slot.count++;
        slot.chars += size;
      }
      const tools = (e.tools ?? []).map(toolNameOf).filter((n): n is string => n !== null);
      return { ...base, payload: { model: e.model ?? null, messageCount: e.messages.length, totalChars: chars, byRole, tools } };
    }
    case 'llm_response': {
      const usage = { prompt: count(e.usage?.prompt_tokens), completion: count(e.usage?.completion_tokens), total: count(e.usage?.total_tokens) };
      if (usage.total === 0) usage.total = usage.prompt + usage.completion;
      const payload = {
        model: e.model ?? null,
        finishReason: e.finishReason ?? null,
        usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.total },
        contentLength: e.content?.length ?? 0,
        toolCalls: (e.toolCalls ?? []).map((c) => c.name),
      };
      return { ...base, durationMs: e.durationMs ?? null, payload, usage };
    }
    case 'tool_call': {
      const text = asText(e.args);
      const args = e.args && typeof e.args === 'object' && !Array.isArray(e.args) ? Object.keys(e.args) : [];
      const payload: Record<string, unknown> = { argumentNames: args, size: Buffer.byteLength(text), sha256: sha256(text) };
      // Redacted here too: below the payload's root, the depth limit of the write-time pass would stop earlier.
      if (storeToolContent) payload.arguments = sanitizeForTrace(e.args);
      return { ...base, toolName: clip(e.toolName, 128), payload, toolCall: true };
    }
    case 'tool_result': {
      const text = asText(e.result);
      const payload: Record<string, unknown> = { size: Buffer.byteLength(text), sha256: sha256(text), isError: e.isError === true };
      let preview: string | null = null;
      if (storeToolContent) {
        const kept = clip(sanitizeText(text), TOOL_CONTENT_CHARS);
        payload.content = kept;
        payload.truncated = kept.length < text.length;
        preview = clip(kept, EVENT_PREVIEW_CHARS);
      }
      return { ...base, toolName: clip(e.toolName, 128), status: e.isError ? 'error' : 'ok', durationMs: e.durationMs ?? null, payload, preview };
    }
    case 'error': {
      const message = clip(sanitizeText(e.message), ERROR_CHARS);
      const stage = clip(sanitizeText(e.stage), 64);
      return { ...base, status: 'error', payload: { stage, message }, preview: message, errorSummary: clip(`${stage}: ${message}`, RUN_PREVIEW_CHARS) };
    }
  }
}

export function eventRow(runId: string, seq: number, e: PreparedEvent, now: number) {
  return {
    run_id: runId,
    seq,
    type: e.type,
    tool_name: e.toolName,
    status: e.status,
    duration_ms: e.durationMs === null ? null : Math.round(e.durationMs),
    payload: JSON.stringify(sanitizeForTrace(e.payload)),
    preview: e.preview,
    created_at: now,
  };
}

export function toMetadata(r: TraceRunsTable): TraceRunMetadata {
  return {
    id: r.id,
    uid: r.uid,
    botId: r.bot_id,
    botMention: r.bot_mention,
    roomToken: r.room_token,
    messageId: r.message_id,
    source: r.source,
    status: r.status,
    storeToolContent: r.store_tool_content === 1,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    durationMs: r.duration_ms,
    toolCallCount: r.tool_call_count,
    eventCount: r.event_count,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    totalTokens: r.total_tokens,
  };
}

export function toRun(r: TraceRunsTable): TraceRun {
  return { ...toMetadata(r), preview: r.preview, errorSummary: r.error_summary };
}

export function toEvent(e: {
  seq: number;
  type: TraceEventType;
  tool_name: string | null;
  status: string | null;
  duration_ms: number | null;
  payload: string;
  preview: string | null;
  created_at: number;
}): TraceEvent {
  let payload: unknown;
  try {
    payload = JSON.parse(e.payload);
  } catch {
    payload = null;
  }
  return { seq: e.seq, type: e.type, toolName: e.tool_name, status: e.status, durationMs: e.duration_ms, payload, preview: e.preview, createdAt: e.created_at };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
