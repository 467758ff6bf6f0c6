// Shapes of the API answers the user views read (docs/openapi.json: BotAnswer, ToolCatalogue,
// KnowledgeSourceList, TraceList, Approvals). Only the fields the page uses.
import type { Bot, Visibility } from './api.ts';

export interface ToolAssignment {
  name: string;
  config: Record<string, unknown>;
}

export interface QuestionAnswer {
  id: string;
  text: string;
  next: string | null;
  type?: 'choice' | 'free_text';
}

export interface Question {
  id: string;
  text: string;
  answers: QuestionAnswer[];
}

export interface QuestionTree {
  start: string;
  questions: Question[];
}

/** The configuration part of a bot, live or pending (botConfigOut). */
export interface BotConfig {
  displayName: string;
  description: string;
  systemPrompt: string;
  model: string | null;
  temperature: number | null;
  visibility: Visibility;
  allowedGroups: string[];
  allowedTeams: string[];
  knowledgeEnabled: boolean;
  guestsAllowed: boolean;
  onboardingQuestions: QuestionTree | null;
  tools: ToolAssignment[];
}

export interface BotDetail extends Bot, BotConfig {
  submittedAt: number | null;
  approvedBy: string | null;
  hasPendingChanges: boolean;
  pendingChanges: BotConfig | null;
  testerUid: string | null;
  questionnaire: { reason: string; capabilities: string; knowledgeDescription: string; testingNotes: string } | null;
}

export interface ApprovalItem extends BotDetail {
  reviewTarget: BotConfig;
  isUpdate: boolean;
}

export interface CatalogueTool {
  name: string;
  label: string;
  summary: string;
  family: string | null;
  provider: string;
  available: boolean;
  reason?: string;
  pendingApproval?: boolean;
}

/** A scope of one tool assignment (lib/tools/resource-scope.ts); a kind left out is unrestricted. */
export interface ToolScope {
  folders?: string[];
  calendars?: string[];
  boards?: number[];
  collectives?: number[];
}

/** An agent profile this bot may act as (GET /api/v1/bots/{id}/agent-profiles, BotAgentProfiles). */
export interface AgentProfileOption {
  id: string;
  label: string;
  accountUid: string;
  scopeDescription: string;
  toolFamilies: string[];
  maxScope: ToolScope;
}

export interface Group {
  id: string;
  displayName: string;
  canPublish: boolean;
}

export interface Team {
  id: string;
  displayName: string;
  level: number;
  canPublish: boolean;
}

export interface KnowledgeSource {
  id: number;
  kind: 'file' | 'folder' | 'url';
  label: string;
  status: 'pending' | 'indexing' | 'ready' | 'error';
  stage: string | null;
  progress: { current: number; total: number; percent: number };
  message: string | null;
  files: number;
  errors: number;
  chunks: number;
  needsReindex: boolean;
}

export type TraceStatus = 'running' | 'success' | 'partial' | 'error';

export interface TraceRun {
  id: string;
  botId: string | null;
  botMention: string;
  roomToken: string | null;
  source: string;
  status: TraceStatus;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  toolCallCount: number;
  eventCount: number;
  totalTokens: number;
  preview?: string;
  errorSummary?: string | null;
}

export interface TraceEvent {
  seq: number;
  type: string;
  toolName: string | null;
  status: string | null;
  durationMs: number | null;
  preview: string | null;
  createdAt: number;
}
