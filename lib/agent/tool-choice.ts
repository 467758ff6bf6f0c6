// The first model call's tool choice: voice-only → transcription, image-only → image analysis,
// a search request → a read-only search tool, an assignment with `force` → a tool call.

import { schemaProperties } from '../tools/json-schema.ts';
import type { ToolDefinition } from '../tools/tool-provider.ts';

export interface ToolChoicePlan {
  reason: 'voice' | 'image' | 'search' | 'config';
  /** OpenAI `tool_choice`. */
  toolChoice: unknown;
  /** The call the loop makes itself when the model ignores the choice; only ever a read-only tool. */
  fabricate: { name: string; args: Record<string, unknown> } | null;
}

export interface ToolChoiceInput {
  /** The tools offered to the model this turn. */
  tools: ReadonlyArray<ToolDefinition>;
  configOf(name: string): Record<string, unknown> | null;
  attachments: ReadonlyArray<{ kind: string; name: string }>;
  /** The message is only attachments (no text of its own). */
  attachmentOnly: boolean;
  /** The user's text, mention removed. */
  text: string;
  /** Admin-configured phrases (any language) that ask for a search. */
  forcedSearchPhrases: readonly string[];
}

export const TRANSCRIBE_TOOL = 'attachment_transcribe_audio';
export const IMAGE_TOOL = 'attachment_analyze_image';

function named(name: string): unknown {
  return { type: 'function', function: { name } };
}

function safeToFabricate(tool: ToolDefinition): boolean {
  return tool.policy.readOnly && !tool.policy.destructive;
}

function hasProperty(tool: ToolDefinition, name: string, type?: string): boolean {
  const props = schemaProperties(tool.schema);
  if (!Object.hasOwn(props, name)) return false;
  if (type === undefined) return true;
  const t = props[name]?.type;
  return t === type || (Array.isArray(t) && (t as readonly string[]).includes(type));
}

function attachmentTool(tools: ReadonlyArray<ToolDefinition>, exact: string, kind: string, words: RegExp): ToolDefinition | null {
  return tools.find((t) => t.name === exact) ?? tools.find((t) => t.policy.kind === kind && words.test(`${t.name} ${t.description}`)) ?? null;
}

function attachmentPlan(reason: 'voice' | 'image', tool: ToolDefinition, attachmentName: string): ToolChoicePlan {
  const args: Record<string, unknown> = {};
  if (hasProperty(tool, 'attachment_name')) args['attachment_name'] = attachmentName;
  return { reason, toolChoice: named(tool.name), fabricate: safeToFabricate(tool) ? { name: tool.name, args } : null };
}

/** Lowercased, NFC, whitespace collapsed: how user text and phrases are compared. */
export function normalizeForMatch(text: string): string {
  return text.normalize('NFC').toLowerCase().replace(/\s+/g, ' ').trim();
}

export function asksForSearch(text: string, phrases: readonly string[]): boolean {
  const haystack = normalizeForMatch(text);
  if (haystack === '') return false;
  return phrases.some((p) => {
    const needle = normalizeForMatch(p);
    return needle !== '' && haystack.includes(needle);
  });
}

/** Read-only, non-destructive search tools that take a string `query`, best first. */
export function searchCandidates(tools: ReadonlyArray<ToolDefinition>): ToolDefinition[] {
  const scored = tools
    .filter((t) => t.policy.readOnly && !t.policy.destructive && t.policy.kind === 'search' && hasProperty(t, 'query', 'string'))
    .map((t, i) => {
      const name = t.name.toLowerCase();
      const description = t.description.toLowerCase();
      let score = 0;
      if (name.includes('search')) score += 60;
      if (description.includes('search')) score += 40;
      for (const word of ['web', 'internet', 'online', 'lookup', 'browse']) if (name.includes(word) || description.includes(word)) score += 20;
      return { t, i, score };
    });
  scored.sort((a, b) => b.score - a.score || a.i - b.i);
  return scored.map((s) => s.t);
}

export function initialToolChoice(input: ToolChoiceInput): ToolChoicePlan | null {
  const { tools, attachments } = input;
  if (tools.length === 0) return null;

  if (input.attachmentOnly && attachments.length === 1) {
    const only = attachments[0];
    if (only?.kind === 'audio') {
      const tool = attachmentTool(tools, TRANSCRIBE_TOOL, 'transcribe', /audio|voice|speech|transcri/i);
      if (tool) return attachmentPlan('voice', tool, only.name);
    }
    if (only?.kind === 'image') {
      const tool = attachmentTool(tools, IMAGE_TOOL, 'analyze', /image|photo|picture|vision/i);
      if (tool) return attachmentPlan('image', tool, only.name);
    }
  }

  if (asksForSearch(input.text, input.forcedSearchPhrases)) {
    const best = searchCandidates(tools)[0];
    if (best) return { reason: 'search', toolChoice: named(best.name), fabricate: { name: best.name, args: { query: input.text.trim() } } };
  }

  const forced = tools.filter((t) => input.configOf(t.name)?.['force'] === true);
  if (forced.length === 1 && forced[0]) return { reason: 'config', toolChoice: named(forced[0].name), fabricate: null };
  if (forced.length > 1) return { reason: 'config', toolChoice: 'required', fabricate: null };
  return null;
}
