/** Row types of the trace tables; `storage/schema.ts` composes them into `Database`. */
import type { Generated } from 'kysely';

export type TraceSource = 'talk' | 'ui' | 'queue';
export type TraceStatus = 'running' | 'success' | 'partial' | 'error';
export type TraceEventType = 'llm_request' | 'llm_response' | 'tool_call' | 'tool_result' | 'error' | 'assistant_response' | 'user_message';

export interface TraceRunsTable {
  id: string;
  uid: string;
  bot_id: string | null;
  bot_mention: string;
  room_token: string | null;
  message_id: string | null;
  source: TraceSource;
  status: TraceStatus;
  /** At most 500 characters of the invoker's own text, redacted. */
  preview: string;
  error_summary: string | null;
  /** 1 when the invoker opted in to keeping tool results (S20). */
  store_tool_content: number;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  tool_call_count: number;
  event_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface TraceEventsTable {
  id: Generated<number>;
  run_id: string;
  seq: number;
  type: TraceEventType;
  tool_name: string | null;
  status: string | null;
  duration_ms: number | null;
  /** Redacted JSON; never a system prompt or, unless opted in, tool output. */
  payload: string;
  preview: string | null;
  created_at: number;
}

export interface TraceAuditTable {
  id: Generated<number>;
  admin_uid: string;
  run_id: string;
  owner_uid: string;
  at: number;
}

export interface TraceTables {
  trace_runs: TraceRunsTable;
  trace_events: TraceEventsTable;
  trace_audit: TraceAuditTable;
}
