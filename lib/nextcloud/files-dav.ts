// A small WebDAV layer for the user's files, trash and versions on NextcloudSession.dav:
// every URL comes from a template with the session's own uid and checked segments.
import type { NextcloudSession } from './client.ts';
import { errorForStatus } from './errors.ts';
import { hrefSegments, isCollection, parseMultistatus, propList, propText, sabreMessage, type DavEntry } from './multistatus.ts';

/** A path below the user's home whose segments were checked (S2) before it gets here. */
export interface UserPath {
  segments: string[];
  /** `a/b/c.txt` (no leading slash); '' for the home folder. */
  relative: string;
}

export interface FileInfo {
  /** Relative to the user's home, without a leading slash. */
  path: string;
  name: string;
  type: 'file' | 'folder';
  size: number | null;
  modified: string | null;
  etag: string;
  fileId: string;
  /** Nextcloud's permission letters (R share, G read, D delete, N rename, V move, W write, C create, K mkdir). */
  permissions: string;
  contentType: string | null;
  ownerId: string | null;
  shareTypes: number[];
  mountType: string;
}

export interface TrashItem {
  /** The handle to restore it by, e.g. `report.txt.d1796011647`. */
  id: string;
  name: string;
  originalLocation: string;
  deletedAt: string | null;
  type: 'file' | 'folder';
  size: number | null;
  fileId: string;
}

export interface VersionInfo {
  /** e.g. `1796011649`. */
  id: string;
  modified: string | null;
  size: number | null;
  label: string;
  author: string;
  etag: string;
}

export type DavFailure = { status: number; message: string };

const FILE_PROPS =
  '<d:getetag/><d:getlastmodified/><d:getcontenttype/><d:getcontentlength/><d:resourcetype/><d:displayname/>' +
  '<oc:fileid/><oc:permissions/><oc:size/><oc:owner-id/><oc:share-types/><nc:mount-type/>';
const TRASH_PROPS =
  '<nc:trashbin-filename/><nc:trashbin-original-location/><nc:trashbin-deletion-time/><oc:fileid/><oc:size/>' +
  '<d:getcontentlength/><d:getlastmodified/><d:getetag/><d:resourcetype/>';
const VERSION_PROPS = '<d:getcontentlength/><d:getcontenttype/><d:getlastmodified/><d:getetag/><d:resourcetype/><nc:version-label/><nc:version-author/>';

function propfindBody(props: string): string {
  return `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>${props}</d:prop></d:propfind>`;
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function isoDate(httpDate: string): string | null {
  if (httpDate === '') return null;
  const ms = Date.parse(httpDate);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

function num(s: string): number | null {
  if (!/^\d+$/.test(s)) return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}

const ALL_ERRORS = Array.from({ length: 200 }, (_, i) => 400 + i);

export class FilesDav {
  readonly #session: NextcloudSession;

  constructor(session: NextcloudSession) {
    this.#session = session;
  }

  get uid(): string {
    return this.#session.user;
  }

  /** Template and parameters of a path in the user's files. */
  #file(path: UserPath): { template: string; params: Record<string, string> } {
    return path.segments.length === 0
      ? { template: '/files/{uid}/', params: { uid: this.uid } }
      : { template: '/files/{uid}/{*path}', params: { uid: this.uid, path: path.relative } };
  }

  fileUrl(path: UserPath): string {
    const f = this.#file(path);
    return this.#session.davUrl(f.template, f.params);
  }

  /** Metadata of one node, or null when it does not exist. */
  async stat(path: UserPath): Promise<FileInfo | null> {
    const f = this.#file(path);
    const res = await this.#session.dav('PROPFIND', f.template, {
      params: f.params,
      headers: { Depth: '0', 'Content-Type': 'application/xml; charset=utf-8' },
      body: propfindBody(FILE_PROPS),
      allowStatuses: [404],
    });
    if (res.status === 404) return null;
    const first = parseMultistatus(res.text())[0];
    return first ? this.#fileInfo(first) : null;
  }

  /** The folder itself and its children. */
  async list(path: UserPath): Promise<{ folder: FileInfo; children: FileInfo[] } | null> {
    const f = this.#file(path);
    const res = await this.#session.dav('PROPFIND', f.template, {
      params: f.params,
      headers: { Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' },
      body: propfindBody(FILE_PROPS),
      allowStatuses: [404],
    });
    if (res.status === 404) return null;
    const entries = parseMultistatus(res.text())
      .map((e) => this.#fileInfo(e))
      .filter((e): e is FileInfo => e !== null);
    const self = entries.find((e) => e.path === path.relative);
    if (!self) return null;
    return { folder: self, children: entries.filter((e) => e !== self) };
  }

  async get(path: UserPath): Promise<{ status: number; body: Uint8Array; etag: string; contentType: string }> {
    const f = this.#file(path);
    const res = await this.#session.dav('GET', f.template, { params: f.params });
    return { status: res.status, body: res.body, etag: res.headers.get('etag') ?? '', contentType: res.headers.get('content-type') ?? '' };
  }

  /** PUT with a precondition: `ifNoneMatch: '*'` creates only; `ifMatch` overwrites only that revision. */
  async put(
    path: UserPath,
    body: string,
    pre: { ifMatch?: string; ifNoneMatch?: '*' },
    contentType = 'text/plain; charset=utf-8',
  ): Promise<{ status: number; etag: string; fileId: string } | DavFailure> {
    const f = this.#file(path);
    const headers: Record<string, string> = { 'Content-Type': contentType };
    if (pre.ifMatch !== undefined) headers['If-Match'] = pre.ifMatch;
    if (pre.ifNoneMatch !== undefined) headers['If-None-Match'] = pre.ifNoneMatch;
    const res = await this.#session.dav('PUT', f.template, { params: f.params, headers, body, allowStatuses: [404, 409, 412, 423, 507] });
    if (res.status >= 400) return { status: res.status, message: sabreMessage(res.text()) };
    return { status: res.status, etag: res.headers.get('etag') ?? res.headers.get('oc-etag') ?? '', fileId: ocFileId(res.headers.get('oc-fileid')) };
  }

  async mkcol(path: UserPath): Promise<{ status: number; fileId: string } | DavFailure> {
    const f = this.#file(path);
    const res = await this.#session.dav('MKCOL', f.template, { params: f.params, allowStatuses: [405, 409] });
    if (res.status >= 400) return { status: res.status, message: sabreMessage(res.text()) };
    return { status: res.status, fileId: ocFileId(res.headers.get('oc-fileid')) };
  }

  /** COPY or MOVE, never onto an existing node (`Overwrite: F`); `ifMatch` pins the source revision. */
  async transfer(method: 'COPY' | 'MOVE', from: UserPath, to: UserPath, ifMatch?: string): Promise<{ status: number } | DavFailure> {
    const f = this.#file(from);
    const headers: Record<string, string> = { Destination: this.fileUrl(to), Overwrite: 'F', Depth: 'infinity' };
    if (ifMatch !== undefined) headers['If-Match'] = ifMatch;
    const res = await this.#session.dav(method, f.template, { params: f.params, headers, allowStatuses: [404, 409, 412, 423, 507] });
    if (res.status >= 400) return { status: res.status, message: sabreMessage(res.text()) };
    return { status: res.status };
  }

  async delete(path: UserPath, ifMatch?: string): Promise<{ status: number } | DavFailure> {
    const f = this.#file(path);
    const headers: Record<string, string> = {};
    if (ifMatch !== undefined) headers['If-Match'] = ifMatch;
    const res = await this.#session.dav('DELETE', f.template, { params: f.params, headers, allowStatuses: [404, 412, 423] });
    if (res.status >= 400) return { status: res.status, message: sabreMessage(res.text()) };
    return { status: res.status };
  }

  async trash(): Promise<TrashItem[]> {
    const res = await this.#session.dav('PROPFIND', '/trashbin/{uid}/trash', {
      params: { uid: this.uid },
      headers: { Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' },
      body: propfindBody(TRASH_PROPS),
    });
    const out: TrashItem[] = [];
    for (const e of parseMultistatus(res.text())) {
      const segs = hrefSegments(e.href);
      const i = segs ? segs.lastIndexOf('trash') : -1;
      // Only top-level items: children of a trashed folder are restored with it.
      if (!segs || i < 0 || segs.length !== i + 2) continue;
      const id = segs[i + 1] ?? '';
      out.push({
        id,
        name: propText(e, 'trashbin-filename') || id,
        originalLocation: propText(e, 'trashbin-original-location'),
        deletedAt: unixIso(propText(e, 'trashbin-deletion-time')),
        type: isCollection(e) ? 'folder' : 'file',
        size: num(propText(e, 'size')) ?? num(propText(e, 'getcontentlength')),
        fileId: propText(e, 'fileid'),
      });
    }
    return out;
  }

  async restoreFromTrash(itemId: string): Promise<{ status: number } | DavFailure> {
    const res = await this.#session.dav('MOVE', '/trashbin/{uid}/trash/{item}', {
      params: { uid: this.uid, item: itemId },
      headers: { Destination: this.#session.davUrl('/trashbin/{uid}/restore/{item}', { uid: this.uid, item: itemId }), Overwrite: 'F' },
      allowStatuses: [404, 409, 412],
    });
    if (res.status >= 400) return { status: res.status, message: sabreMessage(res.text()) };
    return { status: res.status };
  }

  async versions(fileId: string): Promise<VersionInfo[] | null> {
    const res = await this.#session.dav('PROPFIND', '/versions/{uid}/versions/{fileId}', {
      params: { uid: this.uid, fileId },
      headers: { Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' },
      body: propfindBody(VERSION_PROPS),
      allowStatuses: [404],
    });
    if (res.status === 404) return null;
    const out: VersionInfo[] = [];
    for (const e of parseMultistatus(res.text())) {
      const segs = hrefSegments(e.href);
      if (!segs || segs[segs.length - 2] !== fileId) continue;
      out.push({
        id: segs[segs.length - 1] ?? '',
        modified: isoDate(propText(e, 'getlastmodified')),
        size: num(propText(e, 'getcontentlength')),
        label: propText(e, 'version-label'),
        author: propText(e, 'version-author'),
        etag: propText(e, 'getetag'),
      });
    }
    return out;
  }

  async restoreVersion(fileId: string, versionId: string): Promise<{ status: number } | DavFailure> {
    const res = await this.#session.dav('MOVE', '/versions/{uid}/versions/{fileId}/{version}', {
      params: { uid: this.uid, fileId, version: versionId },
      headers: { Destination: this.#session.davUrl('/versions/{uid}/restore/target', { uid: this.uid }) },
      allowStatuses: [404, 409, 412],
    });
    if (res.status >= 400) return { status: res.status, message: sabreMessage(res.text()) };
    return { status: res.status };
  }

  /** DASL SEARCH by file id in the user's own files (S15: attachments by id, never by path). */
  async findById(fileId: string): Promise<FileInfo | null> {
    const body =
      '<?xml version="1.0" encoding="UTF-8"?><d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns">' +
      `<d:basicsearch><d:select><d:prop>${FILE_PROPS}</d:prop></d:select>` +
      `<d:from><d:scope><d:href>/files/${xmlEscape(encodeURIComponent(this.uid))}</d:href><d:depth>infinity</d:depth></d:scope></d:from>` +
      `<d:where><d:eq><d:prop><oc:fileid/></d:prop><d:literal>${xmlEscape(fileId)}</d:literal></d:eq></d:where></d:basicsearch></d:searchrequest>`;
    const res = await this.#session.dav('SEARCH', '/', { headers: { 'Content-Type': 'text/xml' }, body, allowStatuses: ALL_ERRORS });
    if (res.status >= 400) throw errorForStatus('SEARCH /', res.status, `HTTP ${res.status}`);
    const first = parseMultistatus(res.text())[0];
    return first ? this.#fileInfo(first) : null;
  }

  #fileInfo(e: DavEntry): FileInfo | null {
    const segs = hrefSegments(e.href);
    // Expect /remote.php/dav/files/<uid>/<path...>; anything else is not ours.
    const i = segs ? segs.indexOf('files') : -1;
    if (!segs || i < 0 || segs[i + 1] !== this.uid) return null;
    const rel = segs.slice(i + 2);
    const folder = isCollection(e);
    return {
      path: rel.join('/'),
      name: rel[rel.length - 1] ?? '',
      type: folder ? 'folder' : 'file',
      size: num(propText(e, 'size')) ?? num(propText(e, 'getcontentlength')),
      modified: isoDate(propText(e, 'getlastmodified')),
      etag: propText(e, 'getetag'),
      fileId: propText(e, 'fileid'),
      permissions: propText(e, 'permissions'),
      contentType: folder ? null : propText(e, 'getcontenttype') || null,
      ownerId: propText(e, 'owner-id') || null,
      shareTypes: propList(e, 'share-types', 'share-type')
        .map(Number)
        .filter((n) => Number.isInteger(n)),
      mountType: propText(e, 'mount-type'),
    };
  }
}

function unixIso(s: string): string | null {
  const n = num(s);
  return n === null ? null : new Date(n * 1000).toISOString();
}

/** `00000031oc36kcuq1p4r` → `31`. */
function ocFileId(header: string | null): string {
  const m = /^0*(\d+)oc/.exec(header ?? '');
  return m?.[1] ?? '';
}

export function isFailure(x: object): x is DavFailure {
  return 'message' in x && (x as DavFailure).status >= 400;
}
