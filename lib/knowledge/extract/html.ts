// Readable text of a web page: the main content without navigation chrome,
// scripts or styles; block elements become line breaks.
import { parseDocument } from 'htmlparser2';

interface DomNode {
  type: string;
  name?: string;
  data?: string;
  attribs?: Record<string, string>;
  children?: DomNode[];
}

const SKIP = new Set([
  'script',
  'style',
  'nav',
  'footer',
  'header',
  'aside',
  'noscript',
  'iframe',
  'svg',
  'template',
  'button',
  'select',
  'option',
  'canvas',
  'object',
  'embed',
  'head',
  'menu',
  'dialog',
]);
const SKIP_ROLES = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search', 'menu', 'menubar', 'dialog']);
const BLOCK = new Set([
  'p',
  'div',
  'section',
  'article',
  'main',
  'ul',
  'ol',
  'table',
  'thead',
  'tbody',
  'tr',
  'pre',
  'blockquote',
  'dl',
  'dt',
  'dd',
  'figure',
  'figcaption',
  'hr',
  'address',
  'details',
  'summary',
  'body',
  'html',
]);

function isElement(n: DomNode): boolean {
  return n.type === 'tag' || n.type === 'script' || n.type === 'style';
}

function hidden(n: DomNode): boolean {
  const a = n.attribs ?? {};
  if ('hidden' in a || a['aria-hidden'] === 'true') return true;
  if (a.role && SKIP_ROLES.has(a.role.toLowerCase())) return true;
  return /display\s*:\s*none|visibility\s*:\s*hidden/i.test(a.style ?? '');
}

function findAll(n: DomNode, pred: (n: DomNode) => boolean, out: DomNode[] = []): DomNode[] {
  for (const c of n.children ?? []) {
    if (!isElement(c)) continue;
    if (pred(c)) out.push(c);
    else findAll(c, pred, out);
  }
  return out;
}

function render(n: DomNode, out: string[]): void {
  if (n.type === 'text') {
    out.push((n.data ?? '').replace(/\s+/g, ' '));
    return;
  }
  if (n.type === 'cdata') {
    for (const c of n.children ?? []) render(c, out);
    return;
  }
  if (!isElement(n)) return;
  const name = (n.name ?? '').toLowerCase();
  if (SKIP.has(name) || hidden(n)) return;
  if (name === 'br') return void out.push('\n');
  const heading = /^h([1-6])$/.exec(name);
  if (heading) {
    out.push('\n\n', '#'.repeat(Number(heading[1])), ' ');
    for (const c of n.children ?? []) render(c, out);
    out.push('\n\n');
    return;
  }
  if (name === 'li') out.push('\n- ');
  else if (name === 'td' || name === 'th') out.push(' | ');
  else if (name === 'img' && n.attribs?.alt) out.push(` ${n.attribs.alt} `);
  else if (BLOCK.has(name)) out.push('\n');
  if (name === 'p' || name === 'pre' || name === 'blockquote' || name === 'table') out.push('\n');
  for (const c of n.children ?? []) render(c, out);
  if (BLOCK.has(name) || name === 'li') out.push('\n');
}

function tidy(text: string): string {
  return text
    .split('\n')
    .map((l) =>
      l
        .replace(/[ \t]+/g, ' ')
        .replace(/^ \| /, '')
        .trim(),
    )
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export function htmlToText(html: string): string {
  const doc = parseDocument(html, { decodeEntities: true, lowerCaseTags: true }) as unknown as DomNode;
  const title = findAll(doc, (n) => n.name === 'title')[0];
  const titleText = title ? tidy((title.children ?? []).map((c) => c.data ?? '').join(' ')) : '';
  // Main-content heuristic: <main> or role=main, else the articles, else the body.
  let roots = findAll(doc, (n) => n.name === 'main' || n.attribs?.role === 'main');
  if (roots.length === 0) roots = findAll(doc, (n) => n.name === 'article');
  if (roots.length === 0) roots = findAll(doc, (n) => n.name === 'body');
  if (roots.length === 0) roots = [doc];
  const out: string[] = [];
  for (const r of roots) {
    if (r === doc) for (const c of doc.children ?? []) render(c, out);
    else render(r, out);
    out.push('\n\n');
  }
  const body = tidy(out.join(''));
  if (titleText !== '' && !body.startsWith(titleText)) return `${titleText}\n\n${body}`.trim();
  return body;
}

/** Text nodes of an XML document, one element's text per line. */
export function xmlToText(xml: string): string {
  const doc = parseDocument(xml, { xmlMode: true, decodeEntities: true }) as unknown as DomNode;
  const lines: string[] = [];
  const walk = (n: DomNode): void => {
    if (n.type === 'text' || n.type === 'cdata') {
      const t = n.type === 'cdata' ? (n.children ?? []).map((c) => c.data ?? '').join('') : (n.data ?? '');
      const s = t.replace(/\s+/g, ' ').trim();
      if (s !== '') lines.push(s);
      return;
    }
    for (const c of n.children ?? []) walk(c);
  };
  walk(doc);
  return lines.join('\n');
}
