import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LINK_REMOVED, ReplySanitizer } from '../../lib/replies/reply-sanitizer.ts';

const SECRET = 'ZXCVBNMASDFGHJKL';

function sanitizer(overrides: Partial<ConstructorParameters<typeof ReplySanitizer>[0]> = {}): ReplySanitizer {
  return new ReplySanitizer({
    nextcloudOrigin: 'https://cloud.example.org',
    allowedHosts: ['docs.example.com', '*.wiki.example', 'https://Intranet.Example.net/'],
    userText: 'hi @alice, please ask @"guest/abc123" and @all',
    untrustedTexts: [`tool result: the api token is ${SECRET} keep it safe`],
    ...overrides,
  });
}

describe('ReplySanitizer links', () => {
  const cases: Array<[string, string, string]> = [
    ['bare link to Nextcloud stays', 'Open https://cloud.example.org/apps/files now', 'Open https://cloud.example.org/apps/files now'],
    ['Nextcloud on another port is still the Nextcloud host', 'http://cloud.example.org:8080/x', 'http://cloud.example.org:8080/x'],
    ['allow-listed exact host stays', 'see https://docs.example.com/guide', 'see https://docs.example.com/guide'],
    ['subdomain of an allow-listed host stays', 'https://a.b.docs.example.com/x', 'https://a.b.docs.example.com/x'],
    ['wildcard entry allows the host and subdomains', 'https://wiki.example/p https://en.wiki.example/p', 'https://wiki.example/p https://en.wiki.example/p'],
    ['URL-shaped allow-list entry matches its host', 'https://intranet.example.net/a', 'https://intranet.example.net/a'],
    ['other host loses its scheme', 'See https://evil.example/x.', 'See evil.example/x.'],
    ['lookalike suffix is not a subdomain', 'https://docs.example.com.evil.example/x', 'docs.example.com.evil.example/x'],
    ['host ending like an entry is not a subdomain', 'https://notdocs.example.com/x', 'notdocs.example.com/x'],
    ['credentials trick the host check no more', 'https://cloud.example.org@evil.example/', 'cloud.example.org@evil.example/'],
    ['nested scheme is removed as well', 'https://evil.example/?u=https://evil2.example', 'evil.example/?u=evil2.example'],
    ['Markdown link to other host', '[t](https://evil.example/x)', 't (evil.example/x)'],
    ['Markdown image to other host', '![chart](https://evil.example/p.png?d=1)', 'chart (evil.example/p.png?d=1)'],
    ['Markdown link to allowed host stays', '[doc](https://docs.example.com/p "Title")', '[doc](https://docs.example.com/p "Title")'],
    ['relative Markdown link stays (Nextcloud)', '[files](/apps/files)', '[files](/apps/files)'],
    ['protocol-relative Markdown link', '[t](//evil.example/x)', 't (evil.example/x)'],
    ['angle-bracket Markdown target', '[t](<https://evil.example>)', 't (evil.example)'],
    ['scheme without slashes', '[t](https:evil.example)', 't (evil.example)'],
    ['Markdown target with parentheses', '[w](https://evil.example/a_(b))', 'w (evil.example/a_(b))'],
    ['URL in a Markdown label is sanitized too', '[https://evil.example/l](https://cloud.example.org/x)', '[evil.example/l](https://cloud.example.org/x)'],
    ['autolink to other host', '<https://evil.example/x>', 'evil.example/x'],
    ['autolink to allowed host stays', '<https://docs.example.com/x>', '<https://docs.example.com/x>'],
    ['trailing punctuation stays outside', '(https://evil.example/a), **https://evil.example**!', '(evil.example/a), **evil.example**!'],
    ['scheme glued to a word', 'xhttps://evil.example', 'xevil.example'],
    ['upper-case scheme', 'HTTPS://EVIL.example/x', 'EVIL.example/x'],
    ['javascript Markdown link', '[x](javascript:alert(1))', LINK_REMOVED],
    ['control character hidden in the scheme', '[x](java\u0001script:alert(1))', LINK_REMOVED],
    ['VBScript and file targets', '[a](vbscript:msgbox) [b](file:///etc/passwd)', `${LINK_REMOVED} ${LINK_REMOVED}`],
    ['other schemes are no longer links', '[f](ftp://evil.example/f) [m](mailto:x@evil.example)', 'f (evil.example/f) m (mailto:x@evil.example)'],
    ['data Markdown link', '[x](data:text/html;base64,PGgxPg==)', LINK_REMOVED],
    ['bare data URL', 'img data:image/png;base64,iVBORw0 end', `img ${LINK_REMOVED} end`],
    ['bare javascript URL', 'run javascript:alert(document.cookie) now', `run ${LINK_REMOVED} now`],
    ['javascript autolink', '<javascript:alert(1)>', LINK_REMOVED],
    ['prose mentioning javascript: stays', 'javascript: a language; data: the values', 'javascript: a language; data: the values'],
    ['other Markdown stays intact', '# Title\n\n- **bold** _it_ `code`\n\n```js\nx()\n```', '# Title\n\n- **bold** _it_ `code`\n\n```js\nx()\n```'],
  ];
  for (const [name, input, expected] of cases) {
    it(name, () => assert.equal(sanitizer().sanitize(input), expected));
  }
});

describe('ReplySanitizer untrusted text in links', () => {
  const cases: Array<[string, string, string]> = [
    ['allowed host with a tool-result secret in the query', `https://cloud.example.org/?q=${SECRET}`, LINK_REMOVED],
    ['allowed host with the secret in the path', `https://docs.example.com/${SECRET.slice(2, 14)}/x`, LINK_REMOVED],
    ['other host with the secret', `https://evil.example/c?d=${SECRET}`, LINK_REMOVED],
    ['Markdown link carrying the secret', `[ok](https://docs.example.com/?t=${SECRET})`, LINK_REMOVED],
    ['percent-encoded untrusted text', 'https://docs.example.com/?q=api%20token%20is', LINK_REMOVED],
    ['case-changed untrusted text', `https://docs.example.com/?q=${SECRET.toLowerCase()}`, LINK_REMOVED],
    ['11 characters are not enough', `https://docs.example.com/?q=${SECRET.slice(0, 11)}`, `https://docs.example.com/?q=${SECRET.slice(0, 11)}`],
    ['untrusted text outside a link stays', `The token starts with ${SECRET.slice(0, 4)}`, `The token starts with ${SECRET.slice(0, 4)}`],
  ];
  for (const [name, input, expected] of cases) {
    it(name, () => assert.equal(sanitizer().sanitize(input), expected));
  }

  it('checks texts added during the turn', () => {
    const s = sanitizer({ untrustedTexts: [] });
    const link = 'https://docs.example.com/p?x=late-tool-output-value';
    assert.equal(s.sanitize(link), link);
    s.addUntrustedText('result: late-tool-output-value');
    assert.equal(s.sanitize(link), LINK_REMOVED);
  });
});

describe('ReplySanitizer mentions', () => {
  const cases: Array<[string, string, string]> = [
    ['@all kept when the user wrote it', 'Hey @all', 'Hey @all'],
    ['unknown @word escaped', 'ask @bob.', 'ask ＠bob.'],
    ['user-written @word kept, with trailing punctuation', '@alice, thanks', '@alice, thanks'],
    ['quoted mention the user wrote is kept', 'cc @"guest/abc123"', 'cc @"guest/abc123"'],
    ['other quoted mention escaped', 'cc @"group/staff team"', 'cc ＠"group/staff team"'],
    ['e-mail address untouched', 'mail bob@example.com', 'mail bob@example.com'],
    ['mention at line start and in parentheses', '@carol\n(@dave)', '＠carol\n(＠dave)'],
    ['mention inside a Markdown label', '[@erin](https://cloud.example.org/u/erin)', '[＠erin](https://cloud.example.org/u/erin)'],
    ['mention in code is escaped too (Talk parses raw text)', '`@property`', '`＠property`'],
    ['lone @ untouched', 'meet @ 5pm', 'meet @ 5pm'],
    ['longer token than the user wrote is escaped', '@alice.smith', '＠alice.smith'],
  ];
  for (const [name, input, expected] of cases) {
    it(name, () => assert.equal(sanitizer().sanitize(input), expected));
  }

  it('escapes @all when the user did not write it', () => {
    assert.equal(sanitizer({ userText: 'hello bot' }).sanitize('Hey @all and @alice'), 'Hey ＠all and ＠alice');
  });

  it('does not touch an allowed URL containing @', () => {
    const url = 'https://docs.example.com/@team/page';
    assert.equal(sanitizer().sanitize(url), url);
  });
});

describe('ReplySanitizer setup', () => {
  it('rejects an invalid Nextcloud origin and skips invalid allow-list entries', () => {
    assert.throws(() => sanitizer({ nextcloudOrigin: 'not a url' }));
    const s = sanitizer({ allowedHosts: ['', '  ', 'http://', 'docs.example.com'] });
    assert.equal(s.sanitize('https://docs.example.com/x'), 'https://docs.example.com/x');
  });

  it('normalizes internationalized allow-list entries', () => {
    const s = sanitizer({ allowedHosts: ['Bücher.example'] });
    assert.equal(s.sanitize('https://www.bücher.example/x'), 'https://www.bücher.example/x');
    assert.equal(s.sanitize('https://xn--bcher-kva.example/x'), 'https://xn--bcher-kva.example/x');
  });

  it('sanitizes chunk by chunk with the same result as the whole text', () => {
    const s = sanitizer();
    const chunks = ['First: https://evil.example/a.', 'Second: [d](https://docs.example.com/d) @bob'];
    assert.equal(chunks.map((c) => s.sanitize(c)).join('\n\n'), s.sanitize(chunks.join('\n\n')));
  });
});
