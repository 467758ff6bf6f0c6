// Office Open XML (docx, pptx, xlsx) are zip archives of XML parts. The zip is
// read as a stream, counting what is actually inflated, so a zip bomb stops at
// the budget instead of at the declared sizes, which an attacker writes.
import { Unzip, UnzipInflate } from 'fflate';
import { Parser } from 'htmlparser2';
import { decodeText } from './decode.ts';
import { ExtractionError, type ExtractLimits } from './types.ts';

// Compressed bytes pushed per step: deflate expands at most ~1032×, so one step inflates a bounded amount.
const PUSH_STEP = 16 * 1024;

export interface ZipBudget {
  maxDecompressedBytes: number;
  maxZipEntries: number;
}

/**
 * Reads the entries `wanted` accepts; every entry counts against the entry
 * limit, and the wanted ones against the decompressed-byte budget. With
 * `countAll`, unwanted entries are inflated and counted too (then discarded),
 * so a library that later reads the whole archive stays inside the budget.
 */
export function readZip(bytes: Uint8Array, wanted: (name: string) => boolean, budget: ZipBudget, countAll = false): Map<string, Uint8Array> {
  if (!(bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04)) {
    throw new ExtractionError('broken', 'the file is not a valid Office document (not a zip archive)');
  }
  const files = new Map<string, Uint8Array>();
  let entries = 0;
  let total = 0;
  let failure: Error | null = null;
  const unzip = new Unzip((file) => {
    if (failure) return;
    entries++;
    if (entries > budget.maxZipEntries) {
      failure = new ExtractionError('limit', `the document has more than ${budget.maxZipEntries} parts`);
      return;
    }
    const keep = wanted(file.name);
    if (!keep && !countAll) return;
    const parts: Uint8Array[] = [];
    file.ondata = (err, chunk, final) => {
      if (failure) return;
      if (err) {
        failure = new ExtractionError('broken', `the document is damaged (${file.name.slice(0, 80)})`);
        return;
      }
      total += chunk.length;
      if (total > budget.maxDecompressedBytes) {
        failure = new ExtractionError('limit', `the document expands to more than ${Math.round(budget.maxDecompressedBytes / (1024 * 1024))} MB when unpacked`);
        return;
      }
      if (keep) parts.push(chunk);
      if (final && keep) {
        const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        let off = 0;
        for (const p of parts) {
          out.set(p, off);
          off += p.length;
        }
        files.set(file.name, out);
      }
    };
    try {
      file.start();
    } catch {
      failure = new ExtractionError('broken', `the document uses an unsupported compression (${file.name.slice(0, 80)})`);
    }
  });
  unzip.register(UnzipInflate);
  try {
    for (let off = 0; off < bytes.length && !failure; off += PUSH_STEP) {
      unzip.push(bytes.subarray(off, Math.min(bytes.length, off + PUSH_STEP)), off + PUSH_STEP >= bytes.length);
    }
  } catch (err) {
    if (failure) throw failure;
    throw err instanceof ExtractionError ? err : new ExtractionError('broken', 'the document is damaged (cannot unpack it)');
  }
  if (failure) throw failure;
  return files;
}

interface SaxHandlers {
  open?(name: string, attrs: Record<string, string>): void;
  close?(name: string): void;
  text?(data: string): void;
}

function sax(xml: Uint8Array, h: SaxHandlers): void {
  const parser = new Parser(
    { onopentag: (name, attrs) => h.open?.(name, attrs), onclosetag: (name) => h.close?.(name), ontext: (data) => h.text?.(data) },
    { xmlMode: true, decodeEntities: true },
  );
  parser.write(decodeText(xml));
  parser.end();
}

/** Relationship id → target path (resolved against the part's folder). */
function relationships(files: Map<string, Uint8Array>, relsPath: string, baseDir: string): Map<string, string> {
  const out = new Map<string, string>();
  const rels = files.get(relsPath);
  if (!rels) return out;
  sax(rels, {
    open(name, a) {
      if (name.endsWith('Relationship') && a.Id && a.Target) {
        const target = a.Target.startsWith('/') ? a.Target.slice(1) : `${baseDir}${a.Target}`;
        out.set(a.Id, normalizePath(target));
      }
    },
  });
  return out;
}

function normalizePath(p: string): string {
  const parts: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '..') parts.pop();
    else if (seg !== '.' && seg !== '') parts.push(seg);
  }
  return parts.join('/');
}

function numericOrder(a: string, b: string): number {
  const na = Number(/(\d+)\.xml$/.exec(a)?.[1] ?? 0);
  const nb = Number(/(\d+)\.xml$/.exec(b)?.[1] ?? 0);
  return na - nb;
}

export function pptxText(bytes: Uint8Array, limits: ExtractLimits): { text: string; pages: number } {
  const files = readZip(
    bytes,
    (n) => /^ppt\/slides\/slide\d+\.xml$/.test(n) || n === 'ppt/presentation.xml' || n === 'ppt/_rels/presentation.xml.rels',
    limits,
  );
  const rels = relationships(files, 'ppt/_rels/presentation.xml.rels', 'ppt/');
  const ordered: string[] = [];
  const pres = files.get('ppt/presentation.xml');
  if (pres) {
    sax(pres, {
      open(name, a) {
        const rid = a['r:id'];
        if (name.endsWith('sldId') && rid) {
          const target = rels.get(rid);
          if (target && files.has(target)) ordered.push(target);
        }
      },
    });
  }
  const slides = ordered.length > 0 ? ordered : [...files.keys()].filter((n) => n.startsWith('ppt/slides/')).sort(numericOrder);
  if (slides.length === 0) throw new ExtractionError('broken', 'the presentation has no slides');
  if (slides.length > limits.maxPages) throw new ExtractionError('limit', `the presentation has more than ${limits.maxPages} slides`);
  const out: string[] = [];
  slides.forEach((path, i) => {
    const paragraphs: string[] = [];
    let current = '';
    let inText = false;
    sax(files.get(path)!, {
      open(name) {
        if (name === 'a:t') inText = true;
        else if (name === 'a:br') current += '\n';
      },
      close(name) {
        if (name === 'a:t') inText = false;
        else if (name === 'a:p') {
          if (current.trim() !== '') paragraphs.push(current.trim());
          current = '';
        }
      },
      text(data) {
        if (inText) current += data;
      },
    });
    out.push(`## Slide ${i + 1}\n\n${paragraphs.join('\n')}`);
  });
  return { text: out.join('\n\n'), pages: slides.length };
}

function columnIndex(ref: string): number {
  const letters = /^[A-Z]+/.exec(ref)?.[0] ?? '';
  let n = 0;
  for (const ch of letters) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

export function xlsxText(bytes: Uint8Array, limits: ExtractLimits): { text: string; pages: number } {
  const files = readZip(
    bytes,
    (n) => /^xl\/worksheets\/sheet\d+\.xml$/.test(n) || n === 'xl/workbook.xml' || n === 'xl/_rels/workbook.xml.rels' || n === 'xl/sharedStrings.xml',
    limits,
  );
  const shared: string[] = [];
  const sst = files.get('xl/sharedStrings.xml');
  if (sst) {
    let inSi = false;
    let inT = false;
    let cur = '';
    sax(sst, {
      open(name) {
        if (name === 'si') {
          inSi = true;
          cur = '';
        } else if (name === 't' && inSi) inT = true;
      },
      close(name) {
        if (name === 't') inT = false;
        else if (name === 'si') {
          inSi = false;
          shared.push(cur);
        }
      },
      text(d) {
        if (inT) cur += d;
      },
    });
  }
  const rels = relationships(files, 'xl/_rels/workbook.xml.rels', 'xl/');
  const sheets: Array<{ name: string; path: string }> = [];
  const wb = files.get('xl/workbook.xml');
  if (wb) {
    sax(wb, {
      open(name, a) {
        const rid = a['r:id'];
        if (name === 'sheet' && rid) {
          const path = rels.get(rid);
          if (path && files.has(path)) sheets.push({ name: a.name ?? path, path });
        }
      },
    });
  }
  if (sheets.length === 0) {
    for (const path of [...files.keys()].filter((n) => n.startsWith('xl/worksheets/')).sort(numericOrder))
      sheets.push({ name: path.replace(/^.*\//, ''), path });
  }
  if (sheets.length === 0) throw new ExtractionError('broken', 'the workbook has no sheets');
  const out: string[] = [];
  let chars = 0;
  for (const sheet of sheets) {
    const rows: string[] = [];
    let row: string[] = [];
    let cellType = '';
    let cellCol = -1;
    let value = '';
    let inValue = false;
    sax(files.get(sheet.path)!, {
      open(name, a) {
        if (name === 'row') row = [];
        else if (name === 'c') {
          cellType = a.t ?? 'n';
          cellCol = a.r ? columnIndex(a.r) : row.length;
          value = '';
        } else if (name === 'v' || name === 't') inValue = true;
      },
      close(name) {
        if (name === 'v' || name === 't') inValue = false;
        else if (name === 'c') {
          let text = value;
          if (cellType === 's') text = shared[Number(value)] ?? '';
          else if (cellType === 'b') text = value === '1' ? 'TRUE' : 'FALSE';
          while (row.length < cellCol) row.push('');
          row[cellCol] = text.replace(/\s+/g, ' ').trim();
        } else if (name === 'row') {
          if (row.some((c) => c !== '')) {
            const line = row.join(' | ');
            rows.push(line);
            chars += line.length;
          }
        }
      },
      text(d) {
        if (inValue) value += d;
      },
    });
    out.push(`## Sheet: ${sheet.name}\n\n${rows.join('\n')}`);
    if (chars > limits.maxOutputChars) break;
  }
  return { text: out.join('\n\n'), pages: sheets.length };
}
