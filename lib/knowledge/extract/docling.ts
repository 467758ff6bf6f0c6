// Optional Docling conversion (docling-serve API): bytes go out as a multipart
// upload through the egress module; Docling never receives a URL (S18).
import type { EgressFetch } from '../../egress/egress-fetch.ts';
import { ExtractionError, type DocumentFormat, type ExtractInput } from './types.ts';

export interface DoclingConfig {
  endpoint: string;
  key: string | null;
  timeoutSeconds: number;
}

export const DOCLING_FORMATS: ReadonlySet<DocumentFormat> = new Set(['pdf', 'docx', 'pptx', 'xlsx', 'image', 'html']);

export interface DoclingTestResult {
  ok: boolean;
  /** HTTP status when one came back. */
  status: number | null;
  message: string;
}

/** A tiny one-page PDF ("Docling test") for the admin test action. */
const TEST_PDF = `%PDF-1.4
1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj
2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj
3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>endobj
4 0 obj<</Length 44>>stream
BT /F1 12 Tf 20 50 Td (Docling test) Tj ET
endstream endobj
5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj
trailer<</Root 1 0 R>>
%%EOF
`;

export class DoclingClient {
  readonly #fetch: EgressFetch;
  readonly #config: () => Promise<DoclingConfig | null>;

  constructor(options: { fetch: EgressFetch; config: () => Promise<DoclingConfig | null> }) {
    this.#fetch = options.fetch;
    this.#config = options.config;
  }

  async enabled(): Promise<boolean> {
    return (await this.#config()) !== null;
  }

  async #post(config: DoclingConfig, input: ExtractInput): Promise<Response> {
    const form = new FormData();
    form.append('files', new Blob([input.bytes as Uint8Array<ArrayBuffer>], { type: input.mimeType || 'application/octet-stream' }), input.name || 'document');
    form.append('to_formats', 'md');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (config.key) {
      headers.authorization = `Bearer ${config.key}`;
      headers['x-api-key'] = config.key;
    }
    return this.#fetch(`${config.endpoint.replace(/\/+$/, '')}/v1/convert/file`, {
      method: 'POST',
      headers,
      body: form,
      signal: AbortSignal.timeout(config.timeoutSeconds * 1000),
    });
  }

  /** Markdown of the document. Errors carry the status, never Docling's body. */
  async convert(input: ExtractInput): Promise<string> {
    const config = await this.#config();
    if (!config) throw new ExtractionError('unsupported', 'Docling is not configured');
    let res: Response;
    try {
      res = await this.#post(config, input);
    } catch (err) {
      throw new Error(`Docling could not be reached: ${err instanceof Error ? err.message : 'network error'}`, { cause: err });
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(`Docling answered HTTP ${res.status}`);
    }
    let data: unknown;
    try {
      data = await res.json();
    } catch {
      throw new Error('Docling answered something that is not JSON');
    }
    const doc = (data as { document?: { md_content?: unknown; text_content?: unknown } } | null)?.document;
    const text = typeof doc?.md_content === 'string' ? doc.md_content : typeof doc?.text_content === 'string' ? doc.text_content : null;
    if (text === null) throw new Error('Docling returned no document text');
    return text;
  }

  /** Admin test: converts a built-in one-page PDF and reports the status only (S18). */
  async test(): Promise<DoclingTestResult> {
    const config = await this.#config();
    if (!config) return { ok: false, status: null, message: 'Docling is not configured' };
    try {
      const res = await this.#post(config, { bytes: new TextEncoder().encode(TEST_PDF), name: 'docling-test.pdf', mimeType: 'application/pdf' });
      await res.body?.cancel().catch(() => undefined);
      return res.ok
        ? { ok: true, status: res.status, message: 'Docling converted the test document' }
        : { ok: false, status: res.status, message: `Docling answered HTTP ${res.status}` };
    } catch (err) {
      return { ok: false, status: null, message: err instanceof Error ? err.message.slice(0, 200) : 'Docling could not be reached' };
    }
  }
}
