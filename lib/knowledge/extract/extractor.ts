// The app side of extraction: a small pool of child processes (S19: untrusted
// documents are parsed in a separate process) with a heap limit and a deadline
// per task, besides the size, page and pixel limits of the parsers. A process that
// runs out of memory or time is killed and replaced; the caller gets an ExtractionError.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { detectFormat, isExtractable } from './detect.ts';
import { DOCLING_FORMATS, type DoclingClient } from './docling.ts';
import type { WorkerReply, WorkerRequest } from './extract-worker.ts';
import { DEFAULT_EXTRACT_LIMITS, ExtractionError, type ExtractedText, type ExtractInput, type ExtractLimits, type TranscodedImage } from './types.ts';

export interface ExtractorOptions {
  limits?: Partial<ExtractLimits>;
  /** Extraction processes; default 1 (extraction is CPU-bound and the machine may be small). */
  workers?: number;
  docling?: DoclingClient | null;
}

type TaskRequest = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

interface Task {
  request: TaskRequest;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

interface Slot {
  child: ChildProcess;
  busy: { id: number; task: Task; timer: NodeJS.Timeout } | null;
}

const WORKER_PATH = fileURLToPath(new URL('./extract-worker.ts', import.meta.url));

export class Extractor {
  readonly limits: ExtractLimits;
  readonly #size: number;
  readonly #docling: DoclingClient | null;
  readonly #slots: Slot[] = [];
  readonly #queue: Task[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: ExtractorOptions = {}) {
    this.limits = { ...DEFAULT_EXTRACT_LIMITS, ...options.limits };
    this.#size = Math.max(1, options.workers ?? 1);
    this.#docling = options.docling ?? null;
  }

  /**
   * Text of a document. With Docling configured, PDF/Office/HTML/images go to
   * Docling first; if Docling fails, formats we read locally fall back to the
   * local reader with a warning.
   */
  async extract(input: ExtractInput): Promise<ExtractedText> {
    if (input.bytes.length > this.limits.maxInputBytes)
      throw new ExtractionError('limit', `the file is larger than ${Math.round(this.limits.maxInputBytes / (1024 * 1024))} MB`);
    const format = detectFormat(input.name, input.mimeType, input.bytes);
    let doclingProblem: string | null = null;
    if (this.#docling && DOCLING_FORMATS.has(format) && (await this.#docling.enabled())) {
      try {
        let text = (await this.#docling.convert(input)).normalize('NFC');
        const warnings: string[] = [];
        if (text.length > this.limits.maxOutputChars) {
          text = text.slice(0, this.limits.maxOutputChars);
          warnings.push(`the text was cut after ${this.limits.maxOutputChars} characters`);
        }
        return { format, text, warnings, via: 'docling' };
      } catch (err) {
        doclingProblem = err instanceof Error ? err.message : 'Docling failed';
        if (!isExtractable(format)) throw new ExtractionError('broken', doclingProblem);
      }
    }
    if (!isExtractable(format)) {
      throw new ExtractionError(
        'unsupported',
        format === 'image' ? 'images are read only through Docling (not configured)' : `files of this type cannot be read as text`,
      );
    }
    const result = (await this.#run({ op: 'extract', input, limits: this.limits })) as ExtractedText;
    if (doclingProblem) result.warnings.push(`${doclingProblem}; the file was read locally instead`);
    return result;
  }

  /** An image a vision model takes (transcoded and scaled in the worker). */
  async transcodeImage(bytes: Uint8Array, maxSide = 2048): Promise<TranscodedImage> {
    return (await this.#run({ op: 'image', bytes, maxSide, limits: this.limits })) as TranscodedImage;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#queue.splice(0)) t.reject(new ExtractionError('broken', 'extraction stopped'));
    await Promise.all(
      this.#slots.splice(0).map(async (s) => {
        if (s.busy) {
          clearTimeout(s.busy.timer);
          s.busy.task.reject(new ExtractionError('broken', 'extraction stopped'));
        }
        s.child.kill('SIGKILL');
      }),
    );
  }

  #run(request: TaskRequest): Promise<unknown> {
    if (this.#closed) return Promise.reject(new ExtractionError('broken', 'extraction stopped'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.busy === null);
      if (!slot && this.#slots.length < this.#size) slot = this.#spawn();
      if (!slot) return;
      const task = this.#queue.shift()!;
      const id = this.#nextId++;
      const timer = setTimeout(
        () => this.#fail(slot, new ExtractionError('timeout', `reading the file took longer than ${Math.round(this.limits.timeoutMs / 1000)} s`)),
        this.limits.timeoutMs,
      );
      slot.busy = { id, task, timer };
      slot.child.ref();
      slot.child.channel?.ref();
      slot.child.send({ ...task.request, id } as WorkerRequest);
    }
  }

  #spawn(): Slot {
    const child = fork(WORKER_PATH, [], {
      execArgv: [
        `--max-old-space-size=${this.limits.memoryMb}`,
        `--max-semi-space-size=${Math.max(1, Math.floor(this.limits.memoryMb / 64))}`,
        '--stack-size=4000',
      ],
      // No secrets in the child's environment (S1).
      env: {},
      // Uint8Arrays travel as they are.
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    const slot: Slot = { child, busy: null };
    const idle = () => {
      child.unref();
      child.channel?.unref();
    };
    idle();
    child.on('message', (reply: WorkerReply) => {
      const busy = slot.busy;
      if (!busy || busy.id !== reply.id) return;
      clearTimeout(busy.timer);
      slot.busy = null;
      idle();
      if (reply.ok) busy.task.resolve(reply.result);
      else busy.task.reject(new ExtractionError(reply.kind, reply.message));
      this.#pump();
    });
    child.on('error', () => this.#fail(slot, new ExtractionError('broken', 'the file could not be read')));
    child.on('exit', (code, signal) => {
      if (!this.#slots.includes(slot)) return;
      // V8 aborts when the heap limit is reached.
      const memory = signal === 'SIGABRT' || code === 134 || signal === 'SIGSEGV';
      this.#fail(
        slot,
        new ExtractionError(
          memory ? 'memory' : 'broken',
          memory ? `reading the file needed more than ${this.limits.memoryMb} MB of memory` : 'the file could not be read',
        ),
      );
    });
    this.#slots.push(slot);
    return slot;
  }

  #fail(slot: Slot, err: ExtractionError): void {
    const index = this.#slots.indexOf(slot);
    if (index >= 0) this.#slots.splice(index, 1);
    const busy = slot.busy;
    slot.busy = null;
    if (busy) {
      clearTimeout(busy.timer);
      busy.task.reject(err);
    }
    slot.child.kill('SIGKILL');
    if (!this.#closed) this.#pump();
  }
}
