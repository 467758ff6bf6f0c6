// Shared shapes of text extraction; the worker and the main thread both use them.

export type DocumentFormat = 'text' | 'markdown' | 'csv' | 'json' | 'xml' | 'html' | 'pdf' | 'docx' | 'pptx' | 'xlsx' | 'image' | 'audio' | 'unsupported';

export interface ExtractLimits {
  /** Input size refused before parsing. */
  maxInputBytes: number;
  /** Sum of decompressed bytes read from an OOXML archive (zip bomb guard). */
  maxDecompressedBytes: number;
  maxZipEntries: number;
  maxPages: number;
  /** Width × height an image may have (pixel bomb guard). */
  maxPixels: number;
  /** Longer text is cut, with a warning. */
  maxOutputChars: number;
  /** Wall time of one task in the worker. */
  timeoutMs: number;
  /** V8 heap of the worker. */
  memoryMb: number;
}

export const DEFAULT_EXTRACT_LIMITS: Readonly<ExtractLimits> = Object.freeze({
  maxInputBytes: 50 * 1024 * 1024,
  maxDecompressedBytes: 200 * 1024 * 1024,
  maxZipEntries: 20_000,
  maxPages: 2_000,
  maxPixels: 50_000_000,
  maxOutputChars: 5_000_000,
  timeoutMs: 60_000,
  memoryMb: 512,
});

export interface ExtractInput {
  bytes: Uint8Array;
  name: string;
  mimeType: string;
}

export interface ExtractedText {
  format: DocumentFormat;
  /** UTF-8 (a JS string), whitespace not yet normalised. */
  text: string;
  pages?: number;
  warnings: string[];
  /** 'local' or 'docling'. */
  via: 'local' | 'docling';
}

export interface TranscodedImage {
  bytes: Uint8Array;
  mimeType: string;
  width: number;
  height: number;
}

/** A problem with the document itself (broken, too big, unsupported): shown per file, not retried. */
export class ExtractionError extends Error {
  override name = 'ExtractionError';
  readonly kind: 'unsupported' | 'broken' | 'limit' | 'timeout' | 'memory';

  constructor(kind: ExtractionError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}
