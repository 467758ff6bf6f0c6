// The trace store's public shapes.
import type { TraceEventType, TraceRunsTable, TraceSource, TraceStatus } from '../storage/tables/trace-tables.ts';

export interface StartRunInput {
  uid: string;
  botId: string | null;
  botMention: string;
  roomToken: string | null;
  messageId: string | null;
  source: TraceSource;
  /** The invoker's own message; only a redacted preview is kept. */
  userText: string;
  /** The invoker's opt-in to keep tool results in full (S20). */
  storeToolContent?: boolean;
}

export interface ChatMessageLike {
  role: string;
  content?: unknown;
}

export interface TokenUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
}

export type TraceEventInput =
  | { type: 'user_message'; text: string }
  | { type: 'llm_request'; model?: string | null; messages: readonly ChatMessageLike[]; tools?: readonly unknown[] }
  | {
      type: 'llm_response';
      model?: string | null;
      usage?: TokenUsage | null;
      finishReason?: string | null;
      content?: string | null;
      toolCalls?: readonly { name: string }[];
      durationMs?: number | null;
    }
  | { type: 'tool_call'; toolName: string; args: unknown }
  | { type: 'tool_result'; toolName: string; result: unknown; isError?: boolean; durationMs?: number | null }
  | { type: 'error'; stage: string; message: string }
  | { type: 'assistant_response'; text: string };

export interface TraceRunMetadata extends Omit<StartRunInput, 'userText' | 'storeToolContent'> {
  id: string;
  status: TraceStatus;
  storeToolContent: boolean;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  toolCallCount: number;
  eventCount: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface TraceRun extends TraceRunMetadata {
  preview: string;
  errorSummary: string | null;
}

export interface TraceEvent {
  seq: number;
  type: TraceEventType;
  toolName: string | null;
  status: string | null;
  durationMs: number | null;
  payload: unknown;
  preview: string | null;
  createdAt: number;
}

export interface TraceFilters {
  /** Case-insensitive text in the preview, the error summary or the mention. */
  q?: string | null;
  status?: TraceStatus | null;
  botId?: string | null;
  botMention?: string | null;
  /** started_at bounds in ms, inclusive. */
  from?: number | null;
  to?: number | null;
  onlyErrors?: boolean;
  onlyWithTools?: boolean;
  /** 1..100, default 25. */
  limit?: number;
  offset?: number;
}

export interface AdminTraceFilters extends Omit<TraceFilters, 'q'> {
  uid?: string | null;
  /** Case-insensitive text in the uid or the mention (never in content). */
  q?: string | null;
}

export interface TraceAuditEntry {
  id: number;
  adminUid: string;
  runId: string;
  ownerUid: string;
  at: number;
}

export interface TraceLogger {
  warn(obj: object, msg?: string): void;
}

export interface TraceStoreOptions {
  now?: () => number;
  logger?: TraceLogger;
}

/** A run made by TraceStore.newRun and not written yet. */
export interface PendingRun {
  readonly id: string;
  readonly storeContent: boolean;
  /** The columns known when the turn starts; the outcome and counters come when it is written. */
  readonly row: Pick<
    TraceRunsTable,
    'uid' | 'bot_id' | 'bot_mention' | 'room_token' | 'message_id' | 'source' | 'preview' | 'store_tool_content' | 'started_at'
  >;
}
