import type { MessagePort, Worker } from 'node:worker_threads';

type Port = Pick<MessagePort, 'postMessage' | 'on' | 'off'> | Pick<Worker, 'postMessage' | 'on' | 'off'>;
type Handler = (...args: unknown[]) => unknown;

interface CallMessage {
  rpc: 'call';
  id: number;
  method: string;
  args: unknown[];
}
interface ResultMessage {
  rpc: 'result';
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

/** Request/response calls between the HTTP thread and the processing thread. */
export class ThreadRpc {
  readonly #port: Port;
  readonly #handlers: Record<string, Handler>;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #nextId = 1;
  readonly #listener: (m: unknown) => void;

  constructor(port: Port, handlers: Record<string, Handler>) {
    this.#port = port;
    this.#handlers = handlers;
    this.#listener = (m) => void this.#onMessage(m);
    port.on('message', this.#listener);
  }

  call<T>(method: string, ...args: unknown[]): Promise<T> {
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#port.postMessage({ rpc: 'call', id, method, args } satisfies CallMessage);
    });
  }

  /** Rejects every call still waiting (the other side went away). */
  fail(reason: string): void {
    for (const p of this.#pending.values()) p.reject(new Error(reason));
    this.#pending.clear();
  }

  close(): void {
    this.#port.off('message', this.#listener);
    this.fail('closed');
  }

  async #onMessage(message: unknown): Promise<void> {
    const m = message as CallMessage | ResultMessage;
    if (m?.rpc === 'result') {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(m.error ?? 'failed'));
      return;
    }
    if (m?.rpc !== 'call') return;
    const handler = this.#handlers[m.method];
    try {
      if (!handler) throw new Error(`unknown method ${m.method}`);
      const value = await handler(...m.args);
      this.#port.postMessage({ rpc: 'result', id: m.id, ok: true, value } satisfies ResultMessage);
    } catch (err) {
      this.#port.postMessage({ rpc: 'result', id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies ResultMessage);
    }
  }
}
