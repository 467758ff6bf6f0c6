// Text helpers of the wiki: titles, the managed index section, log
// entries and the initial files. Paging is in tools/page-text.ts.

export const EXISTING_FILES_HEADING = '## Existing Files';
const MANAGED_NOTE = '<!-- Maintained by Talk AI: this section is rewritten after every change. Edit the rest of the page freely. -->';

/** The first `# ` heading, else the file name without its extension. */
export function titleOf(text: string, fileName: string): string {
  for (const line of text.split(/\r?\n/, 200)) {
    const m = /^#\s+(.+?)\s*#*\s*$/.exec(line);
    if (m && m[1]) return m[1].slice(0, 200);
  }
  return fileName.replace(/\.[^.]+$/, '');
}

export interface IndexEntry {
  path: string;
  title: string;
  size: number;
}

function escapeLinkText(s: string): string {
  return s.replace(/[[\]\\]/g, '\\$&').replace(/[\r\n]+/g, ' ');
}

function linkTarget(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/** The managed section: one line per file (link, title, path, size in bytes), sorted by path. */
export function renderExistingFiles(entries: ReadonlyArray<IndexEntry>): string {
  const lines = [EXISTING_FILES_HEADING, '', MANAGED_NOTE, ''];
  const sorted = [...entries].sort((a, b) => a.path.localeCompare(b.path));
  if (sorted.length === 0) lines.push('_No pages yet._');
  for (const e of sorted) lines.push(`- [${escapeLinkText(e.title)}](${linkTarget(e.path)}) — \`${e.path.replace(/`/g, "'")}\` (${e.size} bytes)`);
  return lines.join('\n') + '\n';
}

/** `index.md` with its managed section replaced (or appended); the rest of the page is kept. */
export function withExistingFiles(index: string, entries: ReadonlyArray<IndexEntry>): string {
  const section = renderExistingFiles(entries);
  const lines = index.split('\n');
  const start = lines.findIndex((l) => l.trim() === EXISTING_FILES_HEADING);
  if (start < 0) {
    const base = index.replace(/\s*$/, '');
    return `${base === '' ? '' : `${base}\n\n`}${section}`;
  }
  let end = lines.length;
  for (let i = start + 1; i < lines.length; i++) {
    if (/^#{1,2}\s/.test(lines[i] ?? '')) {
      end = i;
      break;
    }
  }
  const before = lines.slice(0, start).join('\n').replace(/\s*$/, '');
  const after = lines.slice(end).join('\n').replace(/^\s*/, '');
  return `${before === '' ? '' : `${before}\n\n`}${section}${after === '' ? '' : `\n${after}`}`;
}

export function initialIndex(botName: string): string {
  return `# ${botName} wiki\n\nThe pages this bot maintains. Add your own notes above or below the list.\n\n${renderExistingFiles([])}`;
}

export function initialLog(botName: string): string {
  return `# ${botName} wiki log\n\nWhat the bot changed and why, newest last.\n`;
}

/** Explains the upkeep to people reading the wiki. The rules the bot follows are server-side (S16), not read from here. */
export function initialSchema(botName: string): string {
  return [
    `# How ${botName} maintains this wiki`,
    '',
    '- `index.md` lists every page; its "Existing Files" section is kept up to date automatically.',
    '- `log.md` records each change the bot makes, with a date.',
    '- Pages are Markdown (`.md`), text (`.txt`) or JSON (`.json`), at most 512 KiB each.',
    '- `sources/` holds source material; the bot searches it separately from the wiki pages.',
    '- The bot searches before writing, only saves when asked, and never deletes pages.',
    '',
    "This file is informational: the bot's rules come from its configuration on the server, not from this page.",
    '',
  ].join('\n');
}

/** `## [2026-11-30 08:55] Title` plus details, as appended to log.md (UTC). */
export function logEntry(now: number, title: string, details: string): string {
  const d = new Date(now).toISOString();
  const stamp = `${d.slice(0, 10)} ${d.slice(11, 16)}`;
  const cleanTitle = Array.from(title.replace(/[\r\n]+/g, ' ').trim())
    .slice(0, 160)
    .join('');
  const body = details.trim();
  return `\n## [${stamp}] ${cleanTitle}\n${body === '' ? '' : `\n${body}\n`}`;
}
