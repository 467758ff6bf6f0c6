// What a chat request sends: messages merged and cleaned for strict providers, and the body for the model's family.
import type { LlmSettings } from './llm-settings.ts';
import type { ResolvedModel } from './model-catalog.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null | Array<unknown>;
  tool_calls?: unknown[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatRequest {
  /** A model reference (`primary:<id>`, `secondary:<id>` or a bare id). */
  model: string;
  messages: ChatMessage[];
  /** undefined: the admin's default temperature; null: send none. */
  temperature?: number | null;
  maxTokens?: number;
  tools?: unknown[];
  toolChoice?: unknown;
  signal?: AbortSignal;
}

const GPT5 = /(^|\/)gpt-5([.-]|$)/i;

export function isGpt5Family(modelId: string): boolean {
  return GPT5.test(modelId);
}

/** Replaces lone surrogates everywhere, so the JSON body is valid UTF-8. */
export function wellFormedDeep<T>(value: T): T {
  if (typeof value === 'string') return value.toWellFormed() as T;
  if (Array.isArray(value)) return value.map((v) => wellFormedDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k.toWellFormed()] = wellFormedDeep(v);
    return out as T;
  }
  return value;
}

function textOf(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .filter((t) => t !== '')
    .join('\n\n');
}

function asParts(content: ChatMessage['content']): unknown[] {
  if (Array.isArray(content)) return content;
  return content ? [{ type: 'text', text: content }] : [];
}

function mergeContent(a: ChatMessage['content'], b: ChatMessage['content']): ChatMessage['content'] {
  if (Array.isArray(a) || Array.isArray(b)) return [...asParts(a), ...asParts(b)];
  return [a ?? '', b ?? ''].filter((t) => t !== '').join('\n\n');
}

function mergeable(m: ChatMessage): boolean {
  return (m.role === 'user' || m.role === 'assistant') && !(m.tool_calls && m.tool_calls.length > 0);
}

/**
 * Upstream's message rules: the leading system messages become one system
 * prompt; later `system` messages become `user`; consecutive user (or
 * assistant) messages merge with a blank line; a history that starts with the
 * assistant gets an empty user message first; strings become well-formed.
 */
export function prepareMessages(messages: ChatMessage[]): ChatMessage[] {
  let i = 0;
  const system: string[] = [];
  while (i < messages.length && messages[i]?.role === 'system') {
    const text = textOf(messages[i]?.content ?? null);
    if (text !== '') system.push(text);
    i++;
  }
  const out: ChatMessage[] = [];
  for (const original of messages.slice(i)) {
    const m: ChatMessage = { ...original, role: original.role === 'system' ? 'user' : original.role };
    const prev = out.at(-1);
    if (prev && prev.role === m.role && mergeable(prev) && mergeable(m) && prev.name === m.name) {
      prev.content = mergeContent(prev.content, m.content);
      continue;
    }
    out.push(m);
  }
  if (out[0]?.role === 'assistant') out.unshift({ role: 'user', content: '' });
  if (system.length > 0) out.unshift({ role: 'system', content: system.join('\n\n') });
  return wellFormedDeep(out);
}

/** The JSON body (without `stream`) for one model. */
export function buildChatBody(model: ResolvedModel, req: ChatRequest, settings: LlmSettings): Record<string, unknown> {
  const body: Record<string, unknown> = { model: model.id, messages: prepareMessages(req.messages) };
  const maxTokens = req.maxTokens ?? settings.maxTokens;
  if (isGpt5Family(model.id)) {
    body.max_completion_tokens = maxTokens;
  } else {
    body.max_tokens = maxTokens;
    const temperature = req.temperature === undefined ? settings.defaultTemperature : req.temperature;
    if (temperature !== null) body.temperature = temperature;
  }
  if (req.tools && req.tools.length > 0) {
    body.tools = wellFormedDeep(req.tools);
    if (req.toolChoice !== undefined && req.toolChoice !== 'auto') body.tool_choice = wellFormedDeep(req.toolChoice);
  }
  return body;
}
