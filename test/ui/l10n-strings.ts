// The translatable strings of the app page: every t('educai', '…') and n('educai', '…', '…') in
// ex_app/src, as keys of Nextcloud's l10n files (plurals as "_singular_::_plural_"). Run this file
// to list what a language misses and to write its l10n/<lang>.js from l10n/<lang>.json:
//   node test/ui/l10n-strings.ts de
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const repoRoot = new URL('../..', import.meta.url).pathname;
export const SRC_DIR = join(repoRoot, 'ex_app', 'src');
export const L10N_DIR = join(repoRoot, 'ex_app', 'l10n');

const STRING = String.raw`'((?:[^'\\]|\\.)*)'`;
const CALL = new RegExp(String.raw`\b([tn])\(\s*'educai',\s*${STRING}(?:,\s*${STRING})?`, 'g');

function unquote(s: string): string {
  return JSON.parse(`"${s.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`) as string;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.(vue|ts)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

export interface SourceString {
  key: string;
  plural: boolean;
  file: string;
}

export function extractStrings(dir = SRC_DIR): SourceString[] {
  const out = new Map<string, SourceString>();
  for (const file of sources(dir)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(CALL)) {
      const singular = unquote(m[2]!);
      const plural = m[1] === 'n' && m[3] !== undefined ? unquote(m[3]) : null;
      const key = plural === null ? singular : `_${singular}_::_${plural}_`;
      if (!out.has(key)) out.set(key, { key, plural: plural !== null, file: file.slice(dir.length + 1) });
    }
  }
  return [...out.values()];
}

export interface L10nFile {
  translations: Record<string, string | string[]>;
  pluralForm: string;
}

export function readLanguage(language: string): L10nFile {
  return JSON.parse(readFileSync(join(L10N_DIR, `${language}.json`), 'utf8')) as L10nFile;
}

/** Nextcloud's l10n/<lang>.js, which AppAPI injects into the app page. */
export function jsFor(app: string, file: L10nFile): string {
  return `OC.L10N.register(\n    ${JSON.stringify(app)},\n    ${JSON.stringify(file.translations, null, 4).replace(/\n/g, '\n    ')},\n${JSON.stringify(file.pluralForm)});\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const language = process.argv[2] ?? 'de';
  const file = readLanguage(language);
  const missing = extractStrings().filter((s) => !(s.key in file.translations));
  for (const s of missing) console.log(`missing (${s.file}): ${JSON.stringify(s.key)}`);
  writeFileSync(join(L10N_DIR, `${language}.js`), jsFor('educai', file));
  console.log(`${missing.length} missing; wrote ex_app/l10n/${language}.js`);
}
