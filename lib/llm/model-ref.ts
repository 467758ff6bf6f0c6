// Model references: `primary:<id>` / `secondary:<id>`, or a bare id that the
// catalog resolves against the endpoints' model lists. Also the root of the
// LLM error family, so the catalog and the chat client share it without a cycle.

export type EndpointName = 'primary' | 'secondary';

export const ENDPOINTS: readonly EndpointName[] = ['primary', 'secondary'];

export interface ModelRef {
  /** null for a bare id. */
  endpoint: EndpointName | null;
  id: string;
}

const MAX_REF_LENGTH = 256;
// Control characters and whitespace have no place in a model id.
const BAD_CHARS = /[\u0000-\u0020\u007f-\u009f]/;

/** Why a string is not a usable model reference, or null when it is. */
export function modelRefProblem(value: string): string | null {
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_REF_LENGTH) return `must be at most ${MAX_REF_LENGTH} characters`;
  if (BAD_CHARS.test(value)) return 'must not contain spaces or control characters';
  const ref = parseModelRef(value);
  if (ref.id.length === 0) return 'needs a model id after the endpoint prefix';
  return null;
}

/** Splits the endpoint prefix; ids like `llama3:8b` stay bare because only our two prefixes count. */
export function parseModelRef(value: string): ModelRef {
  for (const endpoint of ENDPOINTS) {
    const prefix = `${endpoint}:`;
    if (value.startsWith(prefix)) return { endpoint, id: value.slice(prefix.length) };
  }
  return { endpoint: null, id: value };
}

export function formatModelRef(endpoint: EndpointName, id: string): string {
  return `${endpoint}:${id}`;
}

export function modelLabel(endpoint: EndpointName, id: string): string {
  return `${endpoint === 'primary' ? 'Primary' : 'Secondary'} · ${id}`;
}

export interface LlmErrorOptions {
  /** Text for users and bot owners; never an endpoint URL, a key or provider text. */
  publicMessage: string;
  code: string;
  status?: number;
  /** Worth one retry on the fallback model. */
  transient?: boolean;
  model?: string;
  cause?: unknown;
}

/** Every failure of the model-provider layer. `message` is for logs; show `publicMessage` to people. */
export class LlmError extends Error {
  override name = 'LlmError';
  readonly publicMessage: string;
  readonly code: string;
  readonly status: number | undefined;
  readonly transient: boolean;
  readonly model: string | undefined;

  constructor(message: string, options: LlmErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.publicMessage = options.publicMessage;
    this.code = options.code;
    this.status = options.status;
    this.transient = options.transient ?? false;
    this.model = options.model;
  }
}

/** The admin's allowed-model list refuses this model. */
export class ModelNotAllowedError extends LlmError {
  override name = 'ModelNotAllowedError';

  constructor(model: string) {
    super(`model "${model}" is not in the allowed list`, {
      publicMessage: 'This model is not available. Please choose another model or ask your administrator.',
      code: 'model_not_allowed',
      model,
    });
  }
}

/** The endpoint a model needs has no URL configured. */
export class LlmNotConfiguredError extends LlmError {
  override name = 'LlmNotConfiguredError';

  constructor(what: string, model?: string) {
    super(`${what} is not configured`, {
      publicMessage: 'The AI service is not configured yet. Please ask your administrator.',
      code: 'llm_not_configured',
      ...(model === undefined ? {} : { model }),
    });
  }
}
