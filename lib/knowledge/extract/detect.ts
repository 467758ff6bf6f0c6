import type { DocumentFormat } from './types.ts';

const BY_EXTENSION: Readonly<Record<string, DocumentFormat>> = {
  txt: 'text',
  text: 'text',
  log: 'text',
  rst: 'text',
  md: 'markdown',
  markdown: 'markdown',
  csv: 'csv',
  tsv: 'csv',
  json: 'json',
  xml: 'xml',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  pdf: 'pdf',
  docx: 'docx',
  pptx: 'pptx',
  xlsx: 'xlsx',
  png: 'image',
  jpg: 'image',
  jpeg: 'image',
  gif: 'image',
  webp: 'image',
  bmp: 'image',
  tif: 'image',
  tiff: 'image',
  heic: 'image',
  heif: 'image',
  avif: 'image',
  mp3: 'audio',
  wav: 'audio',
  ogg: 'audio',
  oga: 'audio',
  opus: 'audio',
  m4a: 'audio',
  aac: 'audio',
  flac: 'audio',
  weba: 'audio',
  webm: 'audio',
};

const BY_MIME: Readonly<Record<string, DocumentFormat>> = {
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/csv': 'csv',
  'text/tab-separated-values': 'csv',
  'application/json': 'json',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};

function extension(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot >= 0 ? name.slice(dot + 1).toLowerCase() : '';
}

function startsWith(bytes: Uint8Array, sig: number[]): boolean {
  return bytes.length >= sig.length && sig.every((b, i) => bytes[i] === b);
}

/** The format from the name, the declared type and the first bytes; the content wins where they disagree on PDF and zip. */
export function detectFormat(name: string, mimeType: string, bytes: Uint8Array): DocumentFormat {
  const mime = (mimeType.split(';')[0] ?? '').trim().toLowerCase();
  const byExt = BY_EXTENSION[extension(name)];
  const byMime =
    BY_MIME[mime] ??
    (mime.startsWith('image/') && mime !== 'image/svg+xml' ? 'image' : mime.startsWith('audio/') ? 'audio' : mime.startsWith('text/') ? 'text' : undefined);
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'pdf';
  // An OOXML name on something that is not a zip is reported as broken by its reader.
  for (const f of [byExt, byMime]) {
    if (f === 'docx' || f === 'pptx' || f === 'xlsx') return f;
  }
  if (byExt === 'pdf' || byMime === 'pdf') return 'pdf';
  return byExt ?? byMime ?? 'unsupported';
}

export function isTextFormat(f: DocumentFormat): boolean {
  return f === 'text' || f === 'markdown' || f === 'csv' || f === 'json' || f === 'xml' || f === 'html';
}

/** Formats local extraction can read (images and audio need a model). */
export function isExtractable(f: DocumentFormat): boolean {
  return isTextFormat(f) || f === 'pdf' || f === 'docx' || f === 'pptx' || f === 'xlsx';
}
