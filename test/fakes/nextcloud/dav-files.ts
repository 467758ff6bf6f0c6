// Users' files over WebDAV, stateful per user, as NC 29 answers them (captures 21, 70–77):
// PROPFIND/GET/HEAD/PUT/MKCOL/COPY/MOVE/DELETE with If-Match, If-None-Match and Overwrite,
// a trash bin, versions and DASL SEARCH. Another user's home looks like capture 75: an empty
// collection for PROPFIND, 404 inside it, 403 on the trash bin.
import { createHash, randomBytes } from 'node:crypto';
import type { FakeReply } from './ocs.ts';
import {
  DAV_HEADER_FILES,
  davError,
  destinationSegments,
  empty,
  escapeXml,
  header,
  hrefOf,
  httpDate,
  key,
  multistatus,
  p,
  requestedProps,
  xmlReply,
  type DavResource,
  type PropName,
} from './dav-xml.ts';

export interface FakeNode {
  fileId: number;
  name: string;
  folder: boolean;
  content: Buffer<ArrayBuffer>;
  mime: string;
  etag: string;
  mtime: number;
  children: Map<string, FakeNode>;
  versions: Array<{ id: string; content: Buffer<ArrayBuffer>; mtime: number; label: string }>;
  mountType: string;
  /** A folder someone else owns (a received share): reported as oc:owner-id instead of the viewer. */
  ownerId?: string;
  /** Per-user oc:permissions of a mount (a Collective), inherited by its children; writes need C or W. */
  permissionsFor?: Record<string, string>;
}

export interface FakeTrashItem {
  id: string;
  node: FakeNode;
  originalLocation: string;
  deletedAt: number;
}

const MIME: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  png: 'image/png',
  jpg: 'image/jpeg',
  wav: 'audio/wav',
  pdf: 'application/pdf',
  bin: 'application/octet-stream',
};

function mimeOf(name: string): string {
  const ext = name.includes('.') ? (name.split('.').pop() ?? '').toLowerCase() : '';
  return MIME[ext] ?? 'application/octet-stream';
}

function fileEtag(content: Buffer, salt: number): string {
  return `"${createHash('md5').update(content).update(String(salt)).digest('hex')}"`;
}

function folderEtag(): string {
  return `"${randomBytes(7).toString('hex').slice(0, 13)}"`;
}

const FILE_ALLPROP = [p('d', 'getlastmodified'), p('d', 'getcontentlength'), p('d', 'resourcetype'), p('d', 'getetag'), p('d', 'getcontenttype')];

/** `OCP\Files\Events\Node\*` as webhook_listeners serialises them (test/fixtures/nextcloud33/webhook-listeners.json). */
export interface FakeNodeEvent {
  class: 'NodeCreatedEvent' | 'NodeWrittenEvent' | 'NodeDeletedEvent' | 'NodeRenamedEvent';
  /** Who made the change (the DAV user). */
  uid: string;
  /** `node` for create/write/delete (no id once deleted), `source`/`target` for a rename. */
  data: Record<string, { id?: number; path: string }>;
}

const nodePath = (owner: string, segments: string[]): string => `/${owner}/files/${segments.join('/')}`;

export class FakeFiles {
  readonly #now: () => number;
  readonly #homes = new Map<string, FakeNode>();
  readonly #trash = new Map<string, FakeTrashItem[]>();
  #nextId = 25;
  #stamp = 0;
  /** Share types of a node, told by the sharing fake. */
  shareTypesOf: (owner: string, fileId: number) => number[] = () => [];
  /** Nextcloud's node events for changes over WebDAV, told to webhook_listeners (webhook-listeners.ts). */
  onNodeEvent: (e: FakeNodeEvent) => void = () => undefined;

  constructor(now: () => number) {
    this.#now = now;
  }

  #node(name: string, folder: boolean, content = Buffer.alloc(0)): FakeNode {
    const stamp = ++this.#stamp;
    return {
      fileId: this.#nextId++,
      name,
      folder,
      content,
      mime: folder ? 'httpd/unix-directory' : mimeOf(name),
      etag: folder ? folderEtag() : fileEtag(content, stamp),
      mtime: this.#now(),
      children: new Map(),
      versions: [],
      mountType: '',
    };
  }

  home(uid: string): FakeNode {
    let h = this.#homes.get(uid);
    if (!h) {
      h = this.#node(uid, true);
      this.#homes.set(uid, h);
    }
    return h;
  }

  /** The node at a path and its ancestors (home first), or null. */
  #walk(uid: string, segments: string[]): FakeNode[] | null {
    const chain = [this.home(uid)];
    for (const s of segments) {
      const cur = chain[chain.length - 1];
      const next = cur?.folder ? cur.children.get(s) : undefined;
      if (!next) return null;
      chain.push(next);
    }
    return chain;
  }

  node(uid: string, path: string): FakeNode | null {
    return this.#walk(uid, split(path))?.at(-1) ?? null;
  }

  /** Path segments of a node by file id in the user's home. */
  pathOf(uid: string, fileId: number): string[] | null {
    const visit = (n: FakeNode, trail: string[]): string[] | null => {
      if (n.fileId === fileId) return trail;
      for (const c of n.children.values()) {
        const hit = visit(c, [...trail, c.name]);
        if (hit) return hit;
      }
      return null;
    };
    return visit(this.home(uid), []);
  }

  #touch(chain: FakeNode[]): void {
    const now = this.#now();
    for (const n of chain) {
      n.mtime = now;
      if (n.folder) n.etag = folderEtag();
    }
  }

  // --- helpers for tests ---

  mkdir(uid: string, path: string): FakeNode {
    let cur = this.home(uid);
    for (const s of split(path)) {
      let next = cur.children.get(s);
      if (!next) {
        next = this.#node(s, true);
        cur.children.set(s, next);
      }
      cur = next;
    }
    return cur;
  }

  putFile(uid: string, path: string, content: string | Buffer, mime?: string): FakeNode {
    const segs = split(path);
    const name = segs.pop() ?? '';
    const parent = this.mkdir(uid, segs.join('/'));
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content);
    const existing = parent.children.get(name);
    if (existing && !existing.folder) {
      this.#writeVersion(existing, bytes);
      if (mime) existing.mime = mime;
      return existing;
    }
    const node = this.#node(name, false, bytes);
    if (mime) node.mime = mime;
    parent.children.set(name, node);
    return node;
  }

  /**
   * A Collective's folder (Collectives 2.x, capture 91) at `<folder>/<name>` for each member, one
   * shared tree; `members` maps uid → oc:permissions (e.g. `RGDNVCK` may edit, `RG` read only).
   * `folderOf` gives each member's Collectives folder (the `user_folder` setting: `Collectives` by
   * default, `Kollektive` for German users, '' for the home root). Its nc:mount-type is `collective`.
   */
  mountCollective(name: string, members: Record<string, string>, folderOf: (uid: string) => string = () => 'Collectives'): FakeNode {
    const node = this.#node(name, true);
    node.mountType = 'collective';
    node.permissionsFor = { ...members };
    for (const uid of Object.keys(members)) this.mkdir(uid, folderOf(uid)).children.set(name, node);
    return node;
  }

  /** A folder `owner` shared with `uid`, mounted at `path` in uid's files (nc:mount-type `shared`). */
  receiveShare(uid: string, path: string, owner: string, permissions = 'SRGDNVCK'): FakeNode {
    const segs = split(path);
    const name = segs.pop() ?? '';
    const parent = this.mkdir(uid, segs.join('/'));
    const node = this.#node(name, true);
    node.mountType = 'shared';
    node.ownerId = owner;
    node.permissionsFor = { [uid]: permissions };
    parent.children.set(name, node);
    return node;
  }

  read(uid: string, path: string): string | null {
    const n = this.node(uid, path);
    return n && !n.folder ? n.content.toString('utf8') : null;
  }

  trashOf(uid: string): FakeTrashItem[] {
    let t = this.#trash.get(uid);
    if (!t) {
      t = [];
      this.#trash.set(uid, t);
    }
    return t;
  }

  #writeVersion(node: FakeNode, content: Buffer<ArrayBuffer>): void {
    node.versions.push({ id: String(Math.floor(node.mtime / 1000) + node.versions.length), content: node.content, mtime: node.mtime, label: '' });
    node.content = content;
    node.etag = fileEtag(content, ++this.#stamp);
    node.mtime = this.#now();
  }

  #currentVersionId(node: FakeNode): string {
    return String(Math.floor(node.mtime / 1000) + node.versions.length);
  }

  #permissions(n: FakeNode, isHome: boolean): string {
    if (isHome) return 'GDNVCK';
    return n.folder ? 'RGDNVCK' : 'RGDNVW';
  }

  /** Permissions a mount gives `uid` at the end of `chain`, if any mount on the way sets them. */
  #mountPermissions(chain: FakeNode[] | null, uid: string): string | undefined {
    for (let i = (chain?.length ?? 0) - 1; i >= 0; i--) {
      const set = chain?.[i]?.permissionsFor?.[uid];
      if (set !== undefined) return set;
    }
    return undefined;
  }

  #denied(chain: FakeNode[] | null, uid: string): boolean {
    const set = this.#mountPermissions(chain, uid);
    return set !== undefined && !/[CW]/.test(set);
  }

  #resource(owner: string, segments: string[], n: FakeNode): DavResource {
    const props = new Map<string, string>();
    const set = (pn: PropName, v: string): void => void props.set(key(pn), v);
    set(p('d', 'getetag'), escapeXml(n.etag));
    set(p('d', 'getlastmodified'), httpDate(n.mtime));
    set(p('d', 'resourcetype'), n.folder ? '<d:collection/>' : '');
    set(p('d', 'displayname'), escapeXml(n.name));
    set(p('oc', 'fileid'), String(n.fileId));
    set(p('oc', 'id'), `${String(n.fileId).padStart(8, '0')}oc36kcuq1p4r`);
    const mounted = this.#mountPermissions(this.#walk(owner, segments), owner);
    set(
      p('oc', 'permissions'),
      mounted === undefined ? this.#permissions(n, segments.length === 0) : n.folder ? mounted : /[CW]/.test(mounted) ? 'RGDNVW' : mounted.replace(/[CK]/g, ''),
    );
    set(p('oc', 'size'), String(sizeOf(n)));
    set(p('oc', 'owner-id'), escapeXml(n.ownerId ?? owner));
    set(p('oc', 'owner-display-name'), escapeXml(n.ownerId ?? owner));
    set(p('oc', 'favorite'), '0');
    set(
      p('oc', 'share-types'),
      this.shareTypesOf(owner, n.fileId)
        .map((t) => `<oc:share-type>${t}</oc:share-type>`)
        .join(''),
    );
    set(p('nc', 'mount-type'), n.mountType);
    set(p('nc', 'has-preview'), n.folder ? 'false' : 'true');
    if (!n.folder) {
      set(p('d', 'getcontenttype'), escapeXml(n.mime));
      set(p('d', 'getcontentlength'), String(n.content.length));
    }
    return { href: hrefOf(['files', owner, ...segments], n.folder), props };
  }

  #headers(n: FakeNode): Record<string, string> {
    return { etag: n.etag, 'oc-etag': n.etag, 'oc-fileid': `${String(n.fileId).padStart(8, '0')}oc36kcuq1p4r` };
  }

  /** `/files/<owner>/<path…>` for `user`. */
  handleFiles(method: string, owner: string, segments: string[], user: string, headers: Record<string, string>, body: string, baseUrl: string): FakeReply {
    if (owner !== user) return this.#foreign(method, owner, segments);
    const chain = this.#walk(owner, segments);
    const target = chain?.at(-1) ?? null;
    const name = segments[segments.length - 1] ?? '';
    const where = `/${segments.join('/')}`;
    switch (method) {
      case 'PROPFIND': {
        if (!target) return davError(404, 'NotFound', `File with name /${where} could not be located`);
        const depth = header(headers, 'depth') ?? '1';
        const resources = [this.#resource(owner, segments, target)];
        if (depth !== '0' && target.folder)
          for (const c of [...target.children.values()].sort((a, b) => a.name.localeCompare(b.name)))
            resources.push(this.#resource(owner, [...segments, c.name], c));
        return xmlReply(207, multistatus(resources, requestedProps(body), FILE_ALLPROP), { dav: DAV_HEADER_FILES });
      }
      case 'HEAD':
      case 'GET': {
        if (!target) return davError(404, 'NotFound', `File with name ${where} could not be located`);
        if (target.folder) return davError(501, 'NotImplemented', 'GET is only implemented on File objects');
        return {
          status: 200,
          headers: {
            'content-type': target.mime.startsWith('text/') ? `${target.mime};charset=UTF-8` : target.mime,
            'last-modified': httpDate(target.mtime),
            ...this.#headers(target),
          },
          body: method === 'HEAD' ? '' : target.content,
        };
      }
      case 'PUT': {
        const parentChain = this.#walk(owner, segments.slice(0, -1));
        const parent = parentChain?.at(-1);
        if (!parent || !parent.folder) return davError(409, 'Conflict', 'Parent node does not exist');
        if (target?.folder) return davError(405, 'MethodNotAllowed', 'Cannot PUT on a folder');
        if (this.#denied(parentChain, owner)) return davError(403, 'Forbidden', 'You do not have permission to write here');
        const ifMatch = header(headers, 'if-match');
        const ifNoneMatch = header(headers, 'if-none-match');
        if (ifNoneMatch === '*' && target)
          return davError(
            412,
            'PreconditionFailed',
            'An If-None-Match header was specified, but the ETag matched (or * was specified).',
            '  <s:header>If-None-Match</s:header>\n',
          );
        if (ifMatch !== undefined && (!target || !etagMatches(ifMatch, target.etag))) {
          const reply = davError(
            412,
            'PreconditionFailed',
            'An If-Match header was specified, but none of the specified ETags matched.',
            '  <s:header>If-Match</s:header>\n',
          );
          if (target) reply.headers['etag'] = target.etag;
          return reply;
        }
        const bytes = Buffer.from(body, 'utf8');
        if (target) {
          this.#writeVersion(target, bytes);
          this.#touch(parentChain ?? []);
          this.onNodeEvent({ class: 'NodeWrittenEvent', uid: user, data: { node: { id: target.fileId, path: nodePath(owner, segments) } } });
          return empty(204, this.#headers(target));
        }
        const node = this.#node(name, false, bytes);
        parent.children.set(name, node);
        this.#touch(parentChain ?? []);
        // A new file: created, then written (as the real server sends them).
        for (const c of ['NodeCreatedEvent', 'NodeWrittenEvent'] as const)
          this.onNodeEvent({ class: c, uid: user, data: { node: { id: node.fileId, path: nodePath(owner, segments) } } });
        return empty(201, this.#headers(node));
      }
      case 'MKCOL': {
        if (target) return davError(405, 'MethodNotAllowed', 'The resource you tried to create already exists');
        const parentChain = this.#walk(owner, segments.slice(0, -1));
        const parent = parentChain?.at(-1);
        if (!parent || !parent.folder) return davError(409, 'Conflict', 'Parent node does not exist');
        if (this.#denied(parentChain, owner)) return davError(403, 'Forbidden', 'You do not have permission to create here');
        const node = this.#node(name, true);
        parent.children.set(name, node);
        this.#touch(parentChain ?? []);
        return empty(201, { 'oc-fileid': this.#headers(node)['oc-fileid'] ?? '' });
      }
      case 'COPY':
      case 'MOVE': {
        if (!target || !chain) return davError(404, 'NotFound', `File with name ${where} could not be located`);
        const ifMatch = header(headers, 'if-match');
        if (ifMatch !== undefined && !etagMatches(ifMatch, target.etag))
          return davError(
            412,
            'PreconditionFailed',
            'An If-Match header was specified, but none of the specified ETags matched.',
            '  <s:header>If-Match</s:header>\n',
          );
        const dest = destinationSegments(header(headers, 'destination'), baseUrl);
        if (!dest || dest[0] !== 'files' || dest[1] !== owner || dest.length < 3) return davError(502, 'BadGateway', 'The destination is not on this server');
        const destSegs = dest.slice(2);
        const destChain = this.#walk(owner, destSegs.slice(0, -1));
        const destParent = destChain?.at(-1);
        if (!destParent || !destParent.folder) return davError(409, 'Conflict', 'The destination node is not found');
        const destName = destSegs[destSegs.length - 1] ?? '';
        const existing = destParent.children.get(destName);
        if (existing) {
          if ((header(headers, 'overwrite') ?? 'T').toUpperCase() === 'F') {
            return davError(
              412,
              'PreconditionFailed',
              'The destination node already exists, and the overwrite header is set to false',
              '  <s:header>Overwrite</s:header>\n',
            );
          }
          destParent.children.delete(destName);
        }
        if (method === 'MOVE') {
          const parent = chain[chain.length - 2];
          parent?.children.delete(name);
          target.name = destName;
          destParent.children.set(destName, target);
          this.#touch(chain.slice(0, -1));
          this.#touch(destChain ?? []);
          this.onNodeEvent({
            class: 'NodeRenamedEvent',
            uid: user,
            data: { source: { path: nodePath(owner, segments) }, target: { id: target.fileId, path: nodePath(owner, destSegs) } },
          });
          return empty(existing ? 204 : 201, this.#headers(target));
        }
        const copy = this.#clone(target, destName);
        destParent.children.set(destName, copy);
        this.#touch(destChain ?? []);
        for (const c of ['NodeCreatedEvent', 'NodeWrittenEvent'] as const)
          this.onNodeEvent({ class: c, uid: user, data: { node: { id: copy.fileId, path: nodePath(owner, destSegs) } } });
        return empty(existing ? 204 : 201, { 'oc-fileid': this.#headers(copy)['oc-fileid'] ?? '' });
      }
      case 'DELETE': {
        if (!target || !chain || segments.length === 0) return davError(404, 'NotFound', `File with name ${where} could not be located`);
        const ifMatch = header(headers, 'if-match');
        if (ifMatch !== undefined && !etagMatches(ifMatch, target.etag))
          return davError(
            412,
            'PreconditionFailed',
            'An If-Match header was specified, but none of the specified ETags matched.',
            '  <s:header>If-Match</s:header>\n',
          );
        chain[chain.length - 2]?.children.delete(name);
        const trash = this.trashOf(owner);
        let deletedAt = Math.floor(this.#now() / 1000);
        // Trash ids are unique: the same name deleted twice in one second gets the next second.
        while (trash.some((t) => t.id === `${name}.d${deletedAt}`)) deletedAt += 1;
        trash.push({ id: `${name}.d${deletedAt}`, node: target, originalLocation: segments.join('/'), deletedAt });
        this.#touch(chain.slice(0, -1));
        this.onNodeEvent({ class: 'NodeDeletedEvent', uid: user, data: { node: { path: nodePath(owner, segments) } } });
        return empty(204);
      }
      default:
        return davError(501, 'NotImplemented', `There was no plugin in the system that was willing to handle this ${method} method.`);
    }
  }

  #clone(n: FakeNode, name: string): FakeNode {
    const copy = this.#node(name, n.folder, Buffer.from(n.content));
    copy.mime = n.mime;
    for (const [k, c] of n.children) copy.children.set(k, this.#clone(c, k));
    return copy;
  }

  /** Capture 75: another user's home answers like an empty collection; nothing inside exists. */
  #foreign(method: string, owner: string, segments: string[]): FakeReply {
    if (method === 'PROPFIND' && segments.length === 0) {
      return xmlReply(
        207,
        `<?xml version="1.0"?>\n<d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:response><d:href>/remote.php/dav/files/${encodeURIComponent(owner)}/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>\n`,
        { dav: DAV_HEADER_FILES },
      );
    }
    if (segments.length === 0) return davError(403, 'Forbidden', '');
    return davError(404, 'NotFound', `File not found: ${segments.join('/')} in '${owner}'`);
  }

  /** `/trashbin/<owner>/trash[/item]` and `/trashbin/<owner>/restore/<item>`. */
  handleTrash(method: string, owner: string, rest: string[], user: string, headers: Record<string, string>, body: string, baseUrl: string): FakeReply {
    if (owner !== user) return davError(403, 'Forbidden', '');
    const items = this.trashOf(owner);
    if (rest[0] !== 'trash') return davError(404, 'NotFound', 'Not found');
    const itemId = rest[1];
    if (method === 'PROPFIND' && itemId === undefined) {
      const asked = requestedProps(body);
      const resources: DavResource[] = [
        { href: hrefOf(['trashbin', owner, 'trash'], true), props: new Map([[key(p('d', 'resourcetype')), '<d:collection/>']]) },
      ];
      for (const it of items) {
        const props = new Map<string, string>();
        const set = (pn: PropName, v: string): void => void props.set(key(pn), v);
        set(p('nc', 'trashbin-filename'), escapeXml(it.node.name));
        set(p('nc', 'trashbin-original-location'), escapeXml(it.originalLocation));
        set(p('nc', 'trashbin-deletion-time'), String(it.deletedAt));
        set(p('nc', 'trashbin-title'), escapeXml(it.originalLocation));
        set(p('oc', 'fileid'), String(it.node.fileId));
        set(p('oc', 'size'), String(sizeOf(it.node)));
        set(p('d', 'getlastmodified'), httpDate(it.node.mtime));
        set(p('d', 'getetag'), String(it.deletedAt));
        set(p('d', 'resourcetype'), it.node.folder ? '<d:collection/>' : '');
        set(p('oc', 'permissions'), 'GD');
        if (!it.node.folder) {
          set(p('d', 'getcontentlength'), String(it.node.content.length));
          set(p('d', 'getcontenttype'), escapeXml(it.node.mime));
        }
        resources.push({ href: hrefOf(['trashbin', owner, 'trash', it.id], it.node.folder), props });
      }
      return xmlReply(207, multistatus(resources, asked, []), { dav: DAV_HEADER_FILES });
    }
    if (method === 'DELETE' && itemId === undefined) {
      items.length = 0;
      return empty(204);
    }
    const index = items.findIndex((i) => i.id === itemId);
    if (index < 0) return davError(404, 'NotFound', 'Not found');
    const it = items[index] as FakeTrashItem;
    if (method === 'DELETE') {
      items.splice(index, 1);
      return empty(204);
    }
    if (method === 'MOVE') {
      const dest = destinationSegments(header(headers, 'destination'), baseUrl);
      if (!dest || dest[0] !== 'trashbin' || dest[1] !== owner || dest[2] !== 'restore') return davError(502, 'BadGateway', 'Bad destination');
      const segs = it.originalLocation.split('/');
      const name = segs.pop() ?? it.node.name;
      const parent = this.mkdir(owner, segs.join('/'));
      let finalName = name;
      for (let n = 1; parent.children.has(finalName); n++) finalName = `${name} (restored${n > 1 ? ` ${n}` : ''})`;
      it.node.name = finalName;
      parent.children.set(finalName, it.node);
      items.splice(index, 1);
      return empty(201);
    }
    return davError(501, 'NotImplemented', `${method} is not implemented here`);
  }

  /** `/versions/<owner>/versions/<fileId>[/<version>]` and the restore target. */
  handleVersions(method: string, owner: string, rest: string[], user: string, headers: Record<string, string>, body: string, baseUrl: string): FakeReply {
    if (owner !== user) return davError(403, 'Forbidden', '');
    if (rest[0] !== 'versions' || rest[1] === undefined) return davError(404, 'NotFound', 'Not found');
    const fileId = Number(rest[1]);
    const path = Number.isSafeInteger(fileId) ? this.pathOf(owner, fileId) : null;
    const node = path ? this.node(owner, path.join('/')) : null;
    if (!node || node.folder) return davError(404, 'NotFound', 'Versions not found');
    const versionId = rest[2];
    if (method === 'PROPFIND' && versionId === undefined) {
      const resources: DavResource[] = [
        { href: hrefOf(['versions', owner, 'versions', String(fileId)], true), props: new Map([[key(p('d', 'resourcetype')), '<d:collection/>']]) },
      ];
      // Like NC 29 (capture 74), the current version is listed too.
      const all = [...node.versions, { id: this.#currentVersionId(node), content: node.content, mtime: node.mtime, label: '' }];
      for (const v of all) {
        const props = new Map<string, string>();
        props.set(key(p('d', 'getcontentlength')), String(v.content.length));
        props.set(key(p('d', 'getcontenttype')), escapeXml(node.mime));
        props.set(key(p('d', 'getlastmodified')), httpDate(v.mtime));
        props.set(key(p('d', 'getetag')), v.id);
        props.set(key(p('d', 'resourcetype')), '');
        props.set(key(p('nc', 'version-author')), escapeXml(owner));
        if (v.label) props.set(key(p('nc', 'version-label')), escapeXml(v.label));
        resources.push({ href: hrefOf(['versions', owner, 'versions', String(fileId), v.id], false), props });
      }
      return xmlReply(207, multistatus(resources, requestedProps(body), []), { dav: DAV_HEADER_FILES });
    }
    const version =
      node.versions.find((v) => v.id === versionId) ??
      (versionId === this.#currentVersionId(node) ? { id: versionId, content: node.content, mtime: node.mtime, label: '' } : undefined);
    if (!version) return davError(404, 'NotFound', 'Version not found');
    if (method === 'GET') return { status: 200, headers: { 'content-type': node.mime, etag: version.id }, body: version.content };
    if (method === 'MOVE') {
      const dest = destinationSegments(header(headers, 'destination'), baseUrl);
      if (!dest || dest[0] !== 'versions' || dest[1] !== owner || dest[2] !== 'restore') return davError(502, 'BadGateway', 'Bad destination');
      const restored = version.content;
      this.#writeVersion(node, restored);
      return empty(201);
    }
    return davError(501, 'NotImplemented', `${method} is not implemented here`);
  }

  /** DASL SEARCH on `/remote.php/dav/` (capture 77): by file id, or displayname/getcontenttype LIKE. */
  handleSearch(user: string, body: string): FakeReply {
    const scope = /<d:href>\/files\/([^<]+)<\/d:href>/.exec(body);
    const owner = scope ? decodeURIComponent(scope[1] ?? '') : '';
    if (owner !== user) return xmlReply(207, multistatus([], [], []));
    const eq = /<d:eq><d:prop><oc:fileid\/><\/d:prop><d:literal>([^<]*)<\/d:literal><\/d:eq>/.exec(body);
    const like = /<d:like><d:prop><d:(displayname|getcontenttype)\/><\/d:prop><d:literal>([^<]*)<\/d:literal><\/d:like>/.exec(body);
    const out: DavResource[] = [];
    const visit = (n: FakeNode, trail: string[]): void => {
      for (const c of n.children.values()) {
        const segs = [...trail, c.name];
        let hit = false;
        if (eq) hit = String(c.fileId) === eq[1];
        else if (like) {
          const re = new RegExp(`^${(like[2] ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%/g, '.*')}$`, 'i');
          hit = re.test(like[1] === 'displayname' ? c.name : c.mime);
        }
        if (hit) out.push(this.#resource(owner, segs, c));
        if (c.folder) visit(c, segs);
      }
    };
    visit(this.home(owner), []);
    return { ...xmlReply(207, multistatus(out, requestedProps(body), [])), headers: { 'content-type': 'application/xml; charset="utf-8"' } };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function sizeOf(n: FakeNode): number {
  if (!n.folder) return n.content.length;
  let total = 0;
  for (const c of n.children.values()) total += sizeOf(c);
  return total;
}

function etagMatches(given: string, current: string): boolean {
  return given
    .split(',')
    .map((s) => s.trim())
    .some((t) => t === '*' || t === current || `"${t}"` === current);
}
