// A Collectives page's Markdown file over WebDAV, as the user. Its path comes only from the
// server's page data (collectivePath/filePath/fileName, PageInfo::fromFile), never from arguments,
// and the file found there must carry the page's id (test/fixtures/nextcloud29/91-collectives.json: page 262 ↔ oc-fileid 262).
// These names are real file names: Collectives keeps `#` and `%` in them (NodeHelper::sanitiseFilename
// only drops */|\:"<>?), so each segment is encoded as it is. The model-path checks of
// url-template.ts (which decode and refuse `#`) are for paths a model typed, not for these.
import { errorForStatus } from '../errors.ts';
import { isCollection, parseMultistatus, propText } from '../multistatus.ts';
import { InvalidArgumentError } from '../invalid-argument.ts';
import type { NextcloudSession } from '../client.ts';
import type { PageInfo } from './api.ts';

/** The user's session is all these calls need (a tool's ToolEnv has one). */
export interface PageFileEnv {
  readonly session: NextcloudSession;
}

/** Quoted strong form of an ETag, so `W/"x"`, `"x"` and `x` compare and send alike. */
export function normalizeEtag(etag: string): string {
  const bare = etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
  return `"${bare}"`;
}

/** Thrown for a page whose file cannot be used as it is (wrong id, odd path): the model sees the message. */
export class PageFileError extends InvalidArgumentError {
  override name = 'PageFileError';
}

export interface PageFile {
  /** DAV path template below `/remote.php/dav` with `{uid}`; the rest is already encoded. */
  davPath: string;
  fileId: string;
  etag: string;
  size: number | null;
}

const UNUSABLE_SEGMENT = /[/\\\p{Cc}]/u;
const PROPS =
  '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:getetag/><d:getcontentlength/><d:resourcetype/><oc:fileid/></d:prop></d:propfind>';
const ERRORS = Array.from({ length: 200 }, (_, i) => 400 + i);

/**
 * One path segment Nextcloud reported (a real file or folder name), percent-encoded exactly as it
 * is, never decoded first: `50% rule.md` → `50%25%20rule.md`, `a%2Fb` stays one segment. Only what
 * no real name can be, or what could change the path, is refused: '', '.', '..', '/', '\', controls.
 */
export function encodeServerSegment(segment: string): string | null {
  if (segment === '' || segment === '.' || segment === '..' || UNUSABLE_SEGMENT.test(segment)) return null;
  return encodeURIComponent(segment);
}

/** `/files/{uid}/<collectivePath>/<filePath>/<fileName>` with every segment encoded. */
export function pageDavPath(page: PageInfo): string {
  if (page.collectivePath === null || !/\.md$/i.test(page.fileName)) throw new PageFileError(`page ${page.id} has no Markdown file Nextcloud told us about`);
  const parts = [...page.collectivePath.split('/'), ...(page.filePath === '' ? [] : page.filePath.split('/')), page.fileName];
  const encoded = parts.map(encodeServerSegment);
  if (encoded.some((s) => s === null)) throw new PageFileError(`the file of page ${page.id} has a path these tools cannot use`);
  return `/files/{uid}/${encoded.join('/')}`;
}

function failed(method: string, status: number): Error {
  return errorForStatus(`${method} page file`, status, `HTTP ${status}`);
}

/** Stats the page's file as the user; it must exist and be the page's own file. */
export async function statPageFile(env: PageFileEnv, page: PageInfo): Promise<PageFile> {
  const davPath = pageDavPath(page);
  const res = await env.session.dav('PROPFIND', davPath, {
    params: { uid: env.session.user },
    headers: { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' },
    body: PROPS,
    allowStatuses: ERRORS,
  });
  if (res.status === 404) throw new PageFileError(`the file of page ${page.id} ("${page.title}") is missing`);
  if (res.status >= 400) throw failed('PROPFIND', res.status);
  const entry = parseMultistatus(res.text())[0];
  if (!entry || isCollection(entry)) throw new PageFileError(`the file of page ${page.id} ("${page.title}") is missing`);
  const fileId = propText(entry, 'fileid');
  if (fileId !== String(page.id)) throw new PageFileError(`the file at the path of page ${page.id} is not that page's file`);
  const size = Number.parseInt(propText(entry, 'getcontentlength'), 10);
  return { davPath, fileId, etag: propText(entry, 'getetag'), size: Number.isSafeInteger(size) ? size : null };
}

export async function readPageText(env: PageFileEnv, file: PageFile): Promise<{ text: string; etag: string }> {
  const res = await env.session.dav('GET', file.davPath, { params: { uid: env.session.user }, allowStatuses: ERRORS });
  if (res.status >= 400) throw failed('GET', res.status);
  return { text: new TextDecoder('utf-8', { fatal: false }).decode(res.body), etag: res.headers.get('etag') || file.etag };
}

export type PutResult = { ok: true; etag: string } | { ok: false; status: number };

/** PUT with If-Match: only the revision the action is bound to is replaced. */
export async function putPageText(env: PageFileEnv, file: PageFile, text: string, etag: string): Promise<PutResult> {
  const res = await env.session.dav('PUT', file.davPath, {
    params: { uid: env.session.user },
    headers: { 'Content-Type': 'text/markdown; charset=utf-8', 'If-Match': normalizeEtag(etag) },
    body: text,
    allowStatuses: ERRORS,
  });
  if (res.status >= 400) return { ok: false, status: res.status };
  return { ok: true, etag: res.headers.get('etag') ?? res.headers.get('oc-etag') ?? '' };
}
