// A bot's create and update bodies read field by field, and merged onto a configuration.
import type { z } from 'zod';
import { validateQuestionTree, type QuestionTree } from './question-tree.ts';
import type { ToolAssignment } from '../tools/tool-registry.ts';
import type { BotConfig } from './bot-config.ts';
import type { BotUpdateBody } from './bot-schemas.ts';

export function asObject(input: unknown, fields: Record<string, string>): Record<string, unknown> {
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) return input as Record<string, unknown>;
  fields.input = 'Must be a JSON object';
  return {};
}

/** Each field on its own, so that one bad field does not hide the problems of the others. */
export function parseFields<S extends z.ZodRawShape>(
  shape: S,
  raw: Record<string, unknown>,
  fields: Record<string, string>,
): { [K in keyof S]?: z.output<S[K]> } {
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const result = (schema as z.ZodType).safeParse(raw[key]);
    if (result.success) {
      if (result.data !== undefined) out[key] = result.data;
      continue;
    }
    for (const issue of result.error.issues) fields[[key, ...issue.path.map(String)].join('.')] ??= issue.message;
  }
  return out as { [K in keyof S]?: z.output<S[K]> };
}

/** The checked (normalised) tree; errors go to `fields`. */
export function treeFields(value: unknown, fields: Record<string, string>): QuestionTree | null {
  if (value === null || value === undefined) return null;
  const result = validateQuestionTree(value);
  if (result.ok) return result.tree;
  const first = Object.entries(result.errors)[0];
  fields.onboardingQuestions = first ? `${first[0] || 'tree'}: ${first[1]}` : 'Invalid question tree';
  for (const [path, message] of Object.entries(result.errors)) if (path !== '') fields[`onboardingQuestions.${path}`] = message;
  return null;
}

export function mergeConfig(base: BotConfig, body: BotUpdateBody, tools: ToolAssignment[], tree: QuestionTree | null | undefined): BotConfig {
  return {
    displayName: body.displayName ?? base.displayName,
    description: body.description ?? base.description,
    systemPrompt: body.systemPrompt ?? base.systemPrompt,
    model: body.model !== undefined ? body.model : base.model,
    temperature: body.temperature !== undefined ? body.temperature : base.temperature,
    visibility: body.visibility ?? base.visibility,
    allowedGroups: body.allowedGroups ?? base.allowedGroups,
    allowedTeams: body.allowedTeams ?? base.allowedTeams,
    knowledgeEnabled: body.knowledgeEnabled ?? base.knowledgeEnabled,
    guestsAllowed: body.guestsAllowed ?? base.guestsAllowed,
    onboardingQuestions: tree !== undefined ? tree : base.onboardingQuestions,
    tools,
  };
}

/** The stored bot fields of a configuration (tools live in bot_tools). */
export function configFields(c: BotConfig) {
  return {
    displayName: c.displayName,
    description: c.description,
    systemPrompt: c.systemPrompt,
    model: c.model,
    temperature: c.temperature,
    visibility: c.visibility,
    allowedGroups: c.allowedGroups,
    allowedTeams: c.allowedTeams,
    knowledgeEnabled: c.knowledgeEnabled,
    guestsAllowed: c.guestsAllowed,
    onboardingQuestions: c.onboardingQuestions,
  };
}
