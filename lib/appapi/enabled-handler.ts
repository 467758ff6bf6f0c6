import type { Logger } from '../log/logger.ts';

/** Something the app registers in Nextcloud on enable and removes on disable. */
export interface Registrar {
  name: string;
  register(): Promise<void>;
  unregister(): Promise<void>;
}

/**
 * PUT /enabled: on enable every registrar registers (a failure is returned as
 * AppAPI's error text, and AppAPI then disables the app); on disable every
 * registrar unregisters, and a failure of one does not stop the others.
 */
export class EnabledHandler {
  readonly #registrars: Registrar[];
  readonly #logger: Logger;
  #enabled = false;
  readonly #serialize: <T>(fn: () => Promise<T>) => Promise<T>;

  /**
   * `serialize`: runs one (un)registration at a time across replicas (scale-out: several web processes
   * may receive /enabled at once; AppAPI's Talk bot registration is idempotent only one call at a time).
   */
  constructor(registrars: Registrar[], logger: Logger, serialize: <T>(fn: () => Promise<T>) => Promise<T> = (fn) => fn()) {
    this.#registrars = registrars;
    this.#logger = logger;
    this.#serialize = serialize;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  setEnabled(enabled: boolean): Promise<string> {
    return this.#serialize(() => this.#setEnabled(enabled));
  }

  async #setEnabled(enabled: boolean): Promise<string> {
    if (enabled) {
      for (const r of this.#registrars) {
        try {
          await r.register();
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          this.#logger.error({ err, registrar: r.name }, 'registration on enable failed');
          return `Could not register ${r.name}: ${message}`;
        }
      }
      this.#enabled = true;
      this.#logger.info('app enabled');
      return '';
    }
    const errors: string[] = [];
    for (const r of [...this.#registrars].reverse()) {
      try {
        await r.unregister();
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.#logger.warn({ err, registrar: r.name }, 'unregistration on disable failed');
        errors.push(`${r.name}: ${message}`);
      }
    }
    this.#enabled = false;
    this.#logger.info('app disabled');
    return errors.length ? `Some registrations could not be removed: ${errors.join('; ')}` : '';
  }
}
