// Entry of an extraction process: parsing untrusted documents and images
// happens here, under the heap limit and the deadline the pool sets (S19).
import { extractLocal, transcodeImage } from './extract-local.ts';
import { ExtractionError, type ExtractInput, type ExtractLimits } from './types.ts';

export type WorkerRequest =
  | { id: number; op: 'extract'; input: ExtractInput; limits: ExtractLimits }
  | { id: number; op: 'image'; bytes: Uint8Array; maxSide: number; limits: ExtractLimits };

export type WorkerReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; kind: ExtractionError['kind']; message: string };

const send = process.send?.bind(process);
if (send) {
  process.on('message', (req: WorkerRequest) => {
    void (async () => {
      try {
        const result = req.op === 'extract' ? await extractLocal(req.input, req.limits) : await transcodeImage(req.bytes, req.limits, req.maxSide);
        send({ id: req.id, ok: true, result } satisfies WorkerReply);
      } catch (err) {
        const e = err instanceof ExtractionError ? err : new ExtractionError('broken', 'the file could not be read');
        send({ id: req.id, ok: false, kind: e.kind, message: e.message } satisfies WorkerReply);
      }
    })();
  });
  // The app went away: so does this process.
  process.on('disconnect', () => process.exit(0));
}
