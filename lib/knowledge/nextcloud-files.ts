// Reading a user's Nextcloud files for knowledge: nodes are found by file id
// (DASL SEARCH, test/fixtures/nextcloud29/77-webdav-search.json), folders listed with PROPFIND Depth 1 (test/fixtures/nextcloud29/70-webdav-propfind-nextcloud-props.json)
// and read with GET (test/fixtures/nextcloud29/76-webdav-binary-get.json), always as one verified user. Hrefs come from
// the server's own answers in this run and are split into checked segments.
import { parseDocument } from 'htmlparser2';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import { getUserFile, propfindUserPath, searchFiles, userFilesHrefPrefix, userFilesSearchScope } from '../nextcloud/dav-files.ts';

export interface NodeInfo {
  fileId: string;
  /** Path below the user's home, without a leading slash. */
  path: string;
  name: string;
  folder: boolean;
  etag: string;
  size: number;
  mimeType: string;
  ownerId: string;
  /** Nextcloud's letters: R = may reshare, S = shared with the user, M = mounted … */
  permissions: string;
  /**
   * `nc:mount-type`: '' for the user's own home storage; 'shared', 'group', 'external', 'collective'…
   * for mounts, whose oc:owner-id may name the viewer too. null when the server did not report it.
   */
  mountType: string | null;
}

/** What knowledge needs from Nextcloud's files; the DAV implementation is below, tests may provide another. */
export interface FileAccess {
  /** The node with this id as `user` sees it, or null when it is gone or not visible to them. */
  findById(user: ActingUser, fileId: string): Promise<NodeInfo | null>;
  /** The node at a path below the user's home (the owner picks sources by path), or null. */
  findByPath?(user: ActingUser, path: string): Promise<NodeInfo | null>;
  /** Direct children of a folder. */
  list(user: ActingUser, folder: NodeInfo): Promise<NodeInfo[]>;
  /** File content; refuses files above `maxBytes` before downloading them. */
  read(user: ActingUser, node: NodeInfo, maxBytes: number): Promise<Uint8Array>;
}

export class FileTooLargeError extends Error {
  override name = 'FileTooLargeError';
}

interface XmlNode {
  type: string;
  name?: string;
  data?: string;
  children?: XmlNode[];
}

const PROPS = [
  'd:getetag',
  'd:getcontenttype',
  'd:getcontentlength',
  'd:resourcetype',
  'd:displayname',
  'oc:fileid',
  'oc:permissions',
  'oc:size',
  'oc:owner-id',
  'nc:mount-type',
];

const NS = 'xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"';

function local(name: string | undefined): string {
  const n = name ?? '';
  const colon = n.indexOf(':');
  return colon >= 0 ? n.slice(colon + 1) : n;
}

function children(n: XmlNode, name: string): XmlNode[] {
  return (n.children ?? []).filter((c) => c.type === 'tag' && local(c.name) === name);
}

function text(n: XmlNode | undefined): string {
  if (!n) return '';
  if (n.type === 'text') return n.data ?? '';
  return (n.children ?? []).map(text).join('');
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Parses a DAV multistatus into nodes below the user's files (`userFilesHrefPrefix`); entries outside them are dropped. */
export function parseMultistatus(xml: string, uid: string): NodeInfo[] {
  const doc = parseDocument(xml, { xmlMode: true, decodeEntities: true }) as unknown as XmlNode;
  const ms = (doc.children ?? []).find((c) => c.type === 'tag' && local(c.name) === 'multistatus');
  if (!ms) return [];
  const prefix = userFilesHrefPrefix(uid);
  const out: NodeInfo[] = [];
  for (const r of children(ms, 'response')) {
    const href = text(children(r, 'href')[0]).trim();
    const at = href.indexOf(prefix);
    if (at < 0) continue;
    const rest = href.slice(at + prefix.length).replace(/^\/+|\/+$/g, '');
    let path: string;
    try {
      path = rest === '' ? '' : rest.split('/').map(decodeURIComponent).join('/');
    } catch {
      continue;
    }
    const props = new Map<string, XmlNode>();
    for (const ps of children(r, 'propstat')) {
      if (!/ 200 /.test(` ${text(children(ps, 'status')[0])} `)) continue;
      for (const prop of children(ps, 'prop')) for (const p of prop.children ?? []) if (p.type === 'tag') props.set(local(p.name), p);
    }
    const fileId = text(props.get('fileid')).trim();
    if (fileId === '') continue;
    const resourcetype = props.get('resourcetype');
    const folder = resourcetype ? children(resourcetype, 'collection').length > 0 : false;
    const size = Number(text(props.get('getcontentlength')) || text(props.get('size')) || '0');
    out.push({
      fileId,
      path,
      name: text(props.get('displayname')) || path.split('/').pop() || '',
      folder,
      etag: text(props.get('getetag')).trim(),
      size: Number.isFinite(size) ? size : 0,
      mimeType: folder ? 'httpd/unix-directory' : text(props.get('getcontenttype')).trim(),
      ownerId: text(props.get('owner-id')).trim(),
      permissions: text(props.get('permissions')).trim(),
      mountType: props.has('mount-type') ? text(props.get('mount-type')).trim() : null,
    });
  }
  return out;
}

/**
 * S11: a shared bot may use a node only if its owner owns it or may reshare it. Owning means the
 * owner's own home storage: group folders, Collectives and external storage report the viewer as
 * oc:owner-id, so there only the reshare permission (R) counts.
 */
export function ownerMayShare(node: NodeInfo, ownerUid: string): boolean {
  return (node.ownerId === ownerUid && node.mountType === '') || node.permissions.includes('R');
}

export class DavFileAccess implements FileAccess {
  readonly #client: NextcloudClient;
  readonly #timeoutMs: number;

  constructor(client: NextcloudClient, options: { timeoutMs?: number } = {}) {
    this.#client = client;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  async findById(user: ActingUser, fileId: string): Promise<NodeInfo | null> {
    if (!/^\d{1,20}$/.test(fileId)) return null;
    const body =
      `<?xml version="1.0" encoding="UTF-8"?><d:searchrequest ${NS}><d:basicsearch><d:select><d:prop>${PROPS.map((p) => `<${p}/>`).join('')}</d:prop></d:select>` +
      `<d:from><d:scope><d:href>${escapeXml(userFilesSearchScope(user.uid))}</d:href><d:depth>infinity</d:depth></d:scope></d:from>` +
      `<d:where><d:eq><d:prop><oc:fileid/></d:prop><d:literal>${fileId}</d:literal></d:eq></d:where></d:basicsearch></d:searchrequest>`;
    const res = await searchFiles(this.#client.as(user), body, { timeoutMs: this.#timeoutMs });
    return parseMultistatus(res.text(), user.uid).find((n) => n.fileId === fileId) ?? null;
  }

  async findByPath(user: ActingUser, path: string): Promise<NodeInfo | null> {
    const clean = path.replace(/^\/+|\/+$/g, '');
    const body = `<?xml version="1.0"?><d:propfind ${NS}><d:prop>${PROPS.map((p) => `<${p}/>`).join('')}</d:prop></d:propfind>`;
    let res;
    try {
      res = await propfindUserPath(this.#client.as(user), user.uid, clean, 0, body, { timeoutMs: this.#timeoutMs });
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return null;
      throw err;
    }
    return parseMultistatus(res.text(), user.uid).find((n) => n.path === clean) ?? null;
  }

  async list(user: ActingUser, folder: NodeInfo): Promise<NodeInfo[]> {
    const body = `<?xml version="1.0"?><d:propfind ${NS}><d:prop>${PROPS.map((p) => `<${p}/>`).join('')}</d:prop></d:propfind>`;
    let res;
    try {
      res = await propfindUserPath(this.#client.as(user), user.uid, folder.path, 1, body, { timeoutMs: this.#timeoutMs });
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return [];
      throw err;
    }
    return parseMultistatus(res.text(), user.uid).filter((n) => n.path !== folder.path);
  }

  async read(user: ActingUser, node: NodeInfo, maxBytes: number): Promise<Uint8Array> {
    if (node.size > maxBytes) throw new FileTooLargeError(`the file is larger than ${Math.round(maxBytes / (1024 * 1024))} MB`);
    const res = await getUserFile(this.#client.as(user), user.uid, node.path, { timeoutMs: this.#timeoutMs });
    if (res.body.length > maxBytes) throw new FileTooLargeError(`the file is larger than ${Math.round(maxBytes / (1024 * 1024))} MB`);
    return res.body;
  }
}
