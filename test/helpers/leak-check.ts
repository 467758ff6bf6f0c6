// Where a secret could end up after a scenario: logs, trace rows, the tool audit, stored confirmations and
// what the model was sent. Tests add their API answers and assert the secret is in none of them.
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { TalkScenario } from './talk-scenario.ts';

export interface PersistedTexts {
  logs: string;
  traceEvents: string;
  traceRuns: string;
  audit: string;
  confirmations: string;
  model: string;
}

export async function persistedTexts(s: TalkScenario): Promise<PersistedTexts> {
  const db = s.h.application.database.db;
  const rows = async (table: string) => JSON.stringify((await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db)).rows);
  return {
    logs: s.h.logLines.join('\n'),
    traceEvents: await rows('trace_events'),
    traceRuns: await rows('trace_runs'),
    audit: await rows('tool_audit'),
    confirmations: await rows('pending_confirmations'),
    model: JSON.stringify(s.llm.chatRequests().map((r) => r.body)),
  };
}

export function assertNowhere(secret: string, texts: PersistedTexts & Record<string, string>): void {
  for (const [where, text] of Object.entries(texts)) assert.equal(text.includes(secret), false, `the secret leaked into ${where}`);
}
