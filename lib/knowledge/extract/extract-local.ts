// Local extraction, run inside the extraction worker (never on the main event loop).
import mammoth from 'mammoth';
import sharp from 'sharp';
import { extractText as pdfExtractText, getDocumentProxy } from 'unpdf';
import { decodeText } from './decode.ts';
import { detectFormat } from './detect.ts';
import { htmlToText, xmlToText } from './html.ts';
import { pptxText, readZip, xlsxText } from './ooxml.ts';
import { ExtractionError, type ExtractedText, type ExtractInput, type ExtractLimits, type TranscodedImage } from './types.ts';

function cap(text: string, limits: ExtractLimits, warnings: string[]): string {
  if (text.length <= limits.maxOutputChars) return text;
  warnings.push(`the text was cut after ${limits.maxOutputChars} characters`);
  return text.slice(0, limits.maxOutputChars);
}

async function pdfText(bytes: Uint8Array, limits: ExtractLimits): Promise<{ text: string; pages: number }> {
  let doc;
  try {
    doc = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, stopAtErrors: false, verbosity: 0 } as never);
  } catch {
    throw new ExtractionError('broken', 'the PDF is damaged or encrypted');
  }
  try {
    if (doc.numPages > limits.maxPages) throw new ExtractionError('limit', `the PDF has more than ${limits.maxPages} pages`);
    const { text, totalPages } = await pdfExtractText(doc, { mergePages: false });
    const pages = text.map((t, i) => `## Page ${i + 1}\n\n${t}`);
    return { text: pages.join('\n\n'), pages: totalPages };
  } finally {
    await Promise.resolve((doc as { destroy?: () => Promise<void> }).destroy?.()).catch(() => undefined);
  }
}

async function docxText(bytes: Uint8Array, limits: ExtractLimits): Promise<string> {
  // mammoth reads the whole archive itself; inflate it once under the budget first.
  readZip(bytes, () => false, limits, true);
  try {
    const result = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
    return result.value;
  } catch {
    throw new ExtractionError('broken', 'the Word document is damaged or not a .docx file');
  }
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export async function extractLocal(input: ExtractInput, limits: ExtractLimits): Promise<ExtractedText> {
  if (input.bytes.length > limits.maxInputBytes)
    throw new ExtractionError('limit', `the file is larger than ${Math.round(limits.maxInputBytes / (1024 * 1024))} MB`);
  const format = detectFormat(input.name, input.mimeType, input.bytes);
  const warnings: string[] = [];
  let text: string;
  let pages: number | undefined;
  switch (format) {
    case 'text':
    case 'markdown':
    case 'csv':
      text = decodeText(input.bytes);
      break;
    case 'json':
      text = prettyJson(decodeText(input.bytes));
      break;
    case 'xml':
      text = xmlToText(decodeText(input.bytes));
      break;
    case 'html':
      text = htmlToText(decodeText(input.bytes));
      break;
    case 'pdf': {
      const r = await pdfText(input.bytes, limits);
      text = r.text;
      pages = r.pages;
      break;
    }
    case 'docx':
      text = await docxText(input.bytes, limits);
      break;
    case 'pptx': {
      const r = pptxText(input.bytes, limits);
      text = r.text;
      pages = r.pages;
      break;
    }
    case 'xlsx': {
      const r = xlsxText(input.bytes, limits);
      text = r.text;
      pages = r.pages;
      break;
    }
    default:
      throw new ExtractionError(
        'unsupported',
        `files of this type (${input.name.includes('.') ? input.name.slice(input.name.lastIndexOf('.')) : input.mimeType || 'unknown'}) cannot be read as text`,
      );
  }
  text = cap(text.normalize('NFC'), limits, warnings);
  return { format, text, ...(pages !== undefined ? { pages } : {}), warnings, via: 'local' };
}

const VISION_READY = new Set(['png', 'jpeg', 'gif', 'webp']);

/**
 * Makes an image a vision model can take: PNG/JPEG/GIF/WebP pass through when
 * small enough, anything else (HEIC, TIFF, BMP, AVIF …) becomes PNG. Larger
 * than `maxSide` pixels is scaled down. Pixel bombs stop at `maxPixels`.
 */
export async function transcodeImage(bytes: Uint8Array, limits: ExtractLimits, maxSide = 2048): Promise<TranscodedImage> {
  if (bytes.length > limits.maxInputBytes)
    throw new ExtractionError('limit', `the image is larger than ${Math.round(limits.maxInputBytes / (1024 * 1024))} MB`);
  sharp.cache(false);
  sharp.concurrency(1);
  let meta;
  try {
    meta = await sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'error' }).metadata();
  } catch (err) {
    const m = err instanceof Error ? err.message : '';
    if (/pixel limit/i.test(m)) throw new ExtractionError('limit', `the image has more than ${limits.maxPixels} pixels`);
    throw new ExtractionError('broken', 'the image is damaged or in a format that cannot be read');
  }
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width * height > limits.maxPixels) throw new ExtractionError('limit', `the image has more than ${limits.maxPixels} pixels`);
  const format = meta.format ?? '';
  const needsResize = Math.max(width, height) > maxSide;
  if (VISION_READY.has(format) && !needsResize && (meta.pages ?? 1) === 1) {
    return { bytes, mimeType: `image/${format}`, width, height };
  }
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'error' })
      .rotate()
      .resize({ width: maxSide, height: maxSide, fit: 'inside', withoutEnlargement: true })
      .png()
      .toBuffer({ resolveWithObject: true });
    return { bytes: new Uint8Array(data), mimeType: 'image/png', width: info.width, height: info.height };
  } catch {
    throw new ExtractionError('broken', 'the image could not be converted');
  }
}
