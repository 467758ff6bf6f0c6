// Vision (chat completions with an image) and speech-to-text (audio
// transcriptions) on OpenAI-compatible endpoints, through the egress module.
// Models receive bytes (data URIs, uploads), never URLs (S18). Admin tests
// report a status, never the provider's body.
import type { ResolvedEndpoint } from './knowledge-settings.ts';

type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export class MediaError extends Error {
  override name = 'MediaError';
  readonly status: number;
  constructor(message: string, status = 0) {
    super(message);
    this.status = status;
  }
}

export interface EndpointTestResult {
  ok: boolean;
  status: number | null;
  message: string;
}

function url(endpoint: string, path: string): string {
  return `${endpoint.replace(/\/+$/, '')}${path}`;
}

function authHeaders(e: ResolvedEndpoint): Record<string, string> {
  return e.key ? { authorization: `Bearer ${e.key}` } : {};
}

export const IMAGE_MEMORY_PROMPT =
  'Describe this image for later search. Name what it shows: user interface elements, visible text (quote it exactly), error messages, charts, diagrams, objects and people. ' +
  'Be factual and specific; do not guess what is not visible.';

// A 1×1 PNG for the admin test.
const TEST_PNG = Uint8Array.from(atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='), (c) =>
  c.charCodeAt(0),
);

/** One second of 8 kHz 8-bit mono silence as WAV, for the admin test. */
function silentWav(): Uint8Array {
  const samples = 8000;
  const buf = new Uint8Array(44 + samples);
  const v = new DataView(buf.buffer);
  const ascii = (off: number, s: string) => [...s].forEach((c, i) => v.setUint8(off + i, c.charCodeAt(0)));
  ascii(0, 'RIFF');
  v.setUint32(4, 36 + samples, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true);
  v.setUint16(22, 1, true);
  v.setUint32(24, 8000, true);
  v.setUint32(28, 8000, true);
  v.setUint16(32, 1, true);
  v.setUint16(34, 8, true);
  ascii(36, 'data');
  v.setUint32(40, samples, true);
  buf.fill(128, 44);
  return buf;
}

export class VisionClient {
  readonly #endpoint: () => Promise<ResolvedEndpoint | null>;
  readonly #fetch: Fetch;

  constructor(options: { endpoint: () => Promise<ResolvedEndpoint | null>; fetch: Fetch }) {
    this.#endpoint = options.endpoint;
    this.#fetch = options.fetch;
  }

  async model(): Promise<string | null> {
    return (await this.#endpoint())?.model ?? null;
  }

  /** The model's answer about one image (already in a format the model takes). */
  async analyze(image: { bytes: Uint8Array; mimeType: string; name: string }, prompt: string, signal?: AbortSignal): Promise<{ text: string; model: string }> {
    const e = await this.#endpoint();
    if (!e) throw new MediaError('image analysis is not configured: set a vision model in the admin settings');
    const dataUrl = `data:${image.mimeType};base64,${Buffer.from(image.bytes).toString('base64')}`;
    const res = await this.#post(
      e,
      {
        model: e.model,
        temperature: 0.2,
        max_tokens: 1200,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: `${prompt}\nFilename: ${image.name.replace(/[\r\n]+/g, ' ').slice(0, 200)}` },
              { type: 'image_url', image_url: { url: dataUrl } },
            ],
          },
        ],
      },
      signal,
    );
    const body = (await res.json().catch(() => null)) as { choices?: Array<{ message?: { content?: unknown } }> } | null;
    const content = body?.choices?.[0]?.message?.content;
    const text =
      typeof content === 'string'
        ? content
        : Array.isArray(content)
          ? content.map((p) => (typeof p === 'object' && p && 'text' in p ? String((p as { text: unknown }).text) : '')).join('')
          : '';
    if (text.trim() === '') throw new MediaError('the vision model returned no text');
    return { text: text.trim(), model: e.model };
  }

  async #post(e: ResolvedEndpoint, payload: unknown, signal?: AbortSignal): Promise<Response> {
    const timeout = AbortSignal.timeout(e.timeoutMs);
    let res: Response;
    try {
      res = await this.#fetch(url(e.endpoint, '/chat/completions'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...authHeaders(e) },
        body: JSON.stringify(payload),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new MediaError(
        timeout.aborted
          ? 'the vision model did not answer in time'
          : `the vision endpoint could not be reached${err instanceof Error && err.message ? `: ${err.message}` : ''}`,
      );
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new MediaError(`the vision endpoint answered HTTP ${res.status}`, res.status);
    }
    return res;
  }

  /** Admin test: a 1×1 PNG and "Reply with OK"; reports the status only. */
  async test(): Promise<EndpointTestResult> {
    const e = await this.#endpoint();
    if (!e) return { ok: false, status: null, message: 'no vision model is configured' };
    try {
      await this.analyze({ bytes: TEST_PNG, mimeType: 'image/png', name: 'test.png' }, 'Reply with OK.');
      return { ok: true, status: 200, message: `the vision model ${e.model} answered` };
    } catch (err) {
      return {
        ok: false,
        status: err instanceof MediaError && err.status ? err.status : null,
        message: err instanceof Error ? err.message.slice(0, 200) : 'the test failed',
      };
    }
  }
}

export class SpeechClient {
  readonly #endpoint: () => Promise<ResolvedEndpoint | null>;
  readonly #fetch: Fetch;

  /** `endpoint` is the API base; `/audio/transcriptions` is appended. */
  constructor(options: { endpoint: () => Promise<ResolvedEndpoint | null>; fetch: Fetch }) {
    this.#endpoint = options.endpoint;
    this.#fetch = options.fetch;
  }

  async model(): Promise<string | null> {
    return (await this.#endpoint())?.model ?? null;
  }

  async transcribe(audio: { bytes: Uint8Array; mimeType: string; name: string }, signal?: AbortSignal): Promise<string> {
    const e = await this.#endpoint();
    if (!e) throw new MediaError('transcription is not configured: set a speech model in the admin settings');
    const form = new FormData();
    form.append('model', e.model);
    form.append('file', new Blob([audio.bytes as Uint8Array<ArrayBuffer>], { type: audio.mimeType || 'application/octet-stream' }), audio.name || 'audio');
    const timeout = AbortSignal.timeout(e.timeoutMs);
    let res: Response;
    try {
      res = await this.#fetch(url(e.endpoint, '/audio/transcriptions'), {
        method: 'POST',
        headers: { accept: 'application/json', ...authHeaders(e) },
        body: form,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new MediaError(
        timeout.aborted
          ? 'the transcription endpoint did not answer in time'
          : `the transcription endpoint could not be reached${err instanceof Error && err.message ? `: ${err.message}` : ''}`,
      );
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new MediaError(`the transcription endpoint answered HTTP ${res.status}`, res.status);
    }
    const body = (await res.json().catch(() => null)) as { text?: unknown; transcript?: unknown } | null;
    const text = typeof body?.text === 'string' ? body.text : typeof body?.transcript === 'string' ? body.transcript : null;
    if (text === null) throw new MediaError('the transcription endpoint returned no text');
    return text.trim();
  }

  /** Admin test: one second of silence; reports the status only. */
  async test(): Promise<EndpointTestResult> {
    const e = await this.#endpoint();
    if (!e) return { ok: false, status: null, message: 'no speech model is configured' };
    try {
      await this.transcribe({ bytes: silentWav(), mimeType: 'audio/wav', name: 'silence.wav' });
      return { ok: true, status: 200, message: `the speech model ${e.model} answered` };
    } catch (err) {
      return {
        ok: false,
        status: err instanceof MediaError && err.status ? err.status : null,
        message: err instanceof Error ? err.message.slice(0, 200) : 'the test failed',
      };
    }
  }
}
