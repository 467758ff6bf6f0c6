// A cookie jar for ONE tool call of ONE user. Collectives 2.x (Nextcloud 29) serves its API as
// CSRF-protected web routes (test/fixtures/nextcloud29/91-collectives.json): they need a session cookie and the session's request
// token. Nextcloud's controllers then act as the *session's* user, so a cookie that outlives
// its call would make a later call run as the earlier user. The jar therefore lives only inside
// `NextcloudSession.withCookieSession()`, accepts cookies only from Nextcloud's origin, and is
// emptied and closed when that call ends; a closed jar refuses any further use.

const COOKIE_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const MAX_COOKIES = 20;
const MAX_VALUE_CHARS = 4096;

export class CookieJarClosedError extends Error {
  override name = 'CookieJarClosedError';
}

export class CookieJar {
  /** The only origin whose responses may set cookies here and whose requests carry them. */
  readonly origin: string;
  readonly #cookies = new Map<string, string>();
  #closed = false;

  constructor(origin: string) {
    this.origin = new URL(origin).origin;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get size(): number {
    return this.#cookies.size;
  }

  #assertOpen(): void {
    if (this.#closed) throw new CookieJarClosedError('this cookie jar belonged to a finished call and cannot be used again');
  }

  /** The `Cookie` header for a request to `url`, or undefined when there is nothing to send. */
  headerFor(url: URL): string | undefined {
    this.#assertOpen();
    if (url.origin !== this.origin) throw new CookieJarClosedError("cookies are only sent to Nextcloud's origin");
    if (this.#cookies.size === 0) return undefined;
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** Takes the `Set-Cookie` lines of a response from `url`; anything from another origin is ignored. */
  store(url: URL, setCookies: readonly string[]): void {
    this.#assertOpen();
    if (url.origin !== this.origin) return;
    for (const line of setCookies) this.#storeOne(url, line);
  }

  #storeOne(url: URL, line: string): void {
    const [pair = '', ...attributes] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) return;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (!COOKIE_NAME.test(name) || value.length > MAX_VALUE_CHARS || /[\u0000-\u001f\u007f;,\s]/.test(value)) return;
    let expired = false;
    for (const attr of attributes) {
      const i = attr.indexOf('=');
      const key = (i < 0 ? attr : attr.slice(0, i)).trim().toLowerCase();
      const val = i < 0 ? '' : attr.slice(i + 1).trim();
      // A cookie for another host is not ours to keep (the jar is host-only).
      if (key === 'domain' && val.replace(/^\./, '').toLowerCase() !== url.hostname.toLowerCase()) return;
      if (key === 'max-age' && /^-?\d+$/.test(val) && Number(val) <= 0) expired = true;
      if (key === 'expires') {
        const at = Date.parse(val);
        if (Number.isFinite(at) && at <= Date.now()) expired = true;
      }
    }
    if (expired || value === 'deleted') {
      this.#cookies.delete(name);
      return;
    }
    if (!this.#cookies.has(name) && this.#cookies.size >= MAX_COOKIES) return;
    this.#cookies.set(name, value);
  }

  /** Forgets every cookie and refuses further use. Safe to call twice. */
  discard(): void {
    this.#cookies.clear();
    this.#closed = true;
  }
}
