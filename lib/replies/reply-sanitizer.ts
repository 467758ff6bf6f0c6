// S8: filters every reply chunk before it is sent. Talk resolves links on the
// server as soon as a chat is opened, so a link in a reply is a zero-click
// exfiltration channel; mentions notify people the user never addressed.
// Streamed chunks cannot be taken back, hence per chunk, before sending.

export interface ReplySanitizerOptions {
  nextcloudOrigin: string;
  allowedHosts: string[];
  /**
   * The user's own message, with Talk's mention placeholders rendered as the
   * user typed them (`@alice`, `@"guest/abc"`), so echoed mentions survive.
   */
  userText: string;
  /** Tool results and other model-visible text the user did not write. */
  untrustedTexts?: string[];
}

type Verdict =
  | { kind: 'keep' }
  | { kind: 'strip'; text: string } // shown as text without a scheme: not fetched
  | { kind: 'drop' }; // carries untrusted text, or a script/data URL

export const LINK_REMOVED = '[link removed]';
const FULLWIDTH_AT = '\uFF20';
// A URL carrying this much of a tool result is treated as exfiltration.
const TAINT_MIN_CHARS = 12;

const LINK = new RegExp(
  [
    // 1-4: [label](target "title") and ![alt](target); one level of parentheses in the target
    String.raw`(!?)\[([^\[\]\n]*)\]\(\s*((?:[^()\s]|\([^()\s]*\))*)((?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*)\)`,
    // 5: <scheme:…> autolinks
    String.raw`<((?:https?|ftp):\/\/[^\s<>]*|(?:javascript|vbscript|data):[^\s<>]*)>`,
    // 6: bare http(s) URLs, anywhere (also glued to other text)
    String.raw`(https?:\/\/[^\s<>"'\x60]+)`,
    // 7: script and data URLs in plain text
    String.raw`(\b(?:javascript|vbscript):[^\s<>]+|\bdata:(?:[\w.+-]+\/[\w.+-]+)?(?:;[\w=.+-]+)*,[^\s<>]*)`,
  ].join('|'),
  'gi',
);

// Talk parses `@"…"` and `@word` (user ids may hold . - _ @ '); an `@` glued to a
// word is an e-mail address, not a mention.
const MENTION = /(?<![\p{L}\p{N}_])@(?:"[^"\n]+"|[\p{L}\p{N}_][\p{L}\p{N}_.\-@']*)/gu;

function mentionKey(token: string): string {
  return token.startsWith('@"') ? token : token.replace(/[.\-'@]+$/, '');
}

function normalizeHost(entry: string): string | null {
  const trimmed = entry
    .trim()
    .toLowerCase()
    .replace(/^\*?\./, '');
  if (trimmed === '') return null;
  try {
    const url = new URL(trimmed.includes('://') ? trimmed : `http://${trimmed}`);
    return url.hostname.replace(/\.$/, '') || null;
  } catch {
    return null;
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// Schemes anywhere in the text, so "evil.example/?u=https://x" stays unfetchable too.
function withoutSchemes(url: string): string {
  return url
    .replace(/^https?:[\\/]*/i, '') // also "https:evil.example", which URL parsers accept
    .replace(/[a-z][a-z0-9+.-]*:\/\//gi, '')
    .replace(/^\/\//, '');
}

// GFM autolink rule: trailing punctuation and an unbalanced ")" belong to the prose.
function splitTrailing(url: string): [string, string] {
  let end = url.length;
  while (end > 0) {
    const ch = url[end - 1] ?? '';
    if ('.,;:!?*_~'.includes(ch)) {
      end--;
      continue;
    }
    if (ch === ')') {
      const head = url.slice(0, end);
      if (head.split(')').length > head.split('(').length) {
        end--;
        continue;
      }
    }
    break;
  }
  return [url.slice(0, end), url.slice(end)];
}

export class ReplySanitizer {
  readonly #origin: URL;
  readonly #allowed: string[];
  readonly #userMentions: Set<string>;
  readonly #untrusted: string[] = [];

  constructor(options: ReplySanitizerOptions) {
    this.#origin = new URL(options.nextcloudOrigin);
    this.#allowed = options.allowedHosts.map(normalizeHost).filter((host): host is string => host !== null);
    this.#userMentions = new Set(Array.from(options.userText.matchAll(MENTION), (m) => mentionKey(m[0])));
    for (const text of options.untrustedTexts ?? []) this.addUntrustedText(text);
  }

  /** Tool results arrive during a turn; later chunks are checked against them too. */
  addUntrustedText(text: string): void {
    if (text.length >= TAINT_MIN_CHARS) this.#untrusted.push(text.toLowerCase());
  }

  sanitize(chunk: string): string {
    let out = '';
    let last = 0;
    for (const match of chunk.matchAll(LINK)) {
      out += this.#escapeMentions(chunk.slice(last, match.index));
      out += this.#link(match);
      last = match.index + match[0].length;
    }
    return out + this.#escapeMentions(chunk.slice(last));
  }

  #link(match: RegExpExecArray | RegExpMatchArray): string {
    const [whole, bang = '', label, target, title = '', autolink, bare, script] = match;
    if (label !== undefined && target !== undefined) {
      const safeLabel = this.sanitize(label);
      const verdict = this.#judge(target);
      if (verdict.kind === 'keep') return `${bang}[${safeLabel}](${target}${title})`;
      if (verdict.kind === 'drop') return LINK_REMOVED;
      if (verdict.text === '') return safeLabel;
      return safeLabel.trim() === '' ? verdict.text : `${safeLabel} (${verdict.text})`;
    }
    if (autolink !== undefined) return this.#render(this.#judge(autolink), whole);
    if (bare !== undefined) {
      const [url, tail] = splitTrailing(bare);
      return this.#render(this.#judge(url), url) + this.#escapeMentions(tail);
    }
    if (script !== undefined) return LINK_REMOVED;
    return whole;
  }

  #render(verdict: Verdict, original: string): string {
    if (verdict.kind === 'keep') return original;
    if (verdict.kind === 'drop') return LINK_REMOVED;
    return verdict.text;
  }

  #judge(raw: string): Verdict {
    // Browsers ignore control characters and spaces inside a scheme ("java\tscript:").
    const compact = raw.replace(/[\u0000-\u0020\u007f]/g, '').replace(/^<(.*)>$/, '$1');
    if (/^(?:javascript|vbscript|data|file):/i.test(compact)) return { kind: 'drop' };
    let url: URL;
    try {
      const hasScheme = /^[a-z][a-z0-9+.-]*:/i.test(compact);
      // Relative targets resolve against Nextcloud, like Talk's own links.
      url = compact.startsWith('//') ? new URL(`https:${compact}`) : new URL(compact, hasScheme ? undefined : this.#origin);
    } catch {
      return this.#tainted(compact) ? { kind: 'drop' } : { kind: 'strip', text: this.#escapeMentions(withoutSchemes(compact)) };
    }
    if (this.#tainted(url.pathname + url.search + url.hash)) return { kind: 'drop' };
    const web = url.protocol === 'https:' || url.protocol === 'http:';
    // Credentials in the authority are how "allowed.host@evil.example" tricks parsers.
    if (web && url.username === '' && url.password === '' && this.#isAllowedHost(url.hostname)) return { kind: 'keep' };
    return { kind: 'strip', text: this.#escapeMentions(withoutSchemes(compact)) };
  }

  #isAllowedHost(hostname: string): boolean {
    const host = hostname.toLowerCase().replace(/\.$/, '');
    if (host === this.#origin.hostname.toLowerCase().replace(/\.$/, '')) return true;
    return this.#allowed.some((entry) => host === entry || host.endsWith(`.${entry}`));
  }

  // Any 12-character window of the URL part (raw or decoded) found in an untrusted text.
  #tainted(part: string): boolean {
    if (this.#untrusted.length === 0) return false;
    const forms = new Set([part, safeDecode(part), safeDecode(part.replace(/\+/g, ' '))].map((s) => s.toLowerCase()));
    for (const form of forms) {
      for (let i = 0; i + TAINT_MIN_CHARS <= form.length; i++) {
        const window = form.slice(i, i + TAINT_MIN_CHARS);
        if (this.#untrusted.some((text) => text.includes(window))) return true;
      }
    }
    return false;
  }

  #escapeMentions(text: string): string {
    return text.replace(MENTION, (token) => (this.#userMentions.has(mentionKey(token)) ? token : FULLWIDTH_AT + token.slice(1)));
  }
}
