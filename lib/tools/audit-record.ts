// What a tool call leaves in the audit log; the tool providers write it, agent-profiles stores it.
import type { ToolAuditTable } from '../storage/tables/agent-profile-tables.ts';

export type AuditOutcome = ToolAuditTable['outcome'];

export interface AuditRecord {
  mode: 'user' | 'agent';
  profileId: string | null;
  invokerUid: string | null;
  actingUid: string | null;
  botId: string;
  roomToken: string | null;
  tool: string;
  args: unknown;
  outcome: AuditOutcome;
  detail?: string;
  traceId?: string | null;
}
