// Users' Nextcloud files in memory, with owners, shares and reshare rights, for
// knowledge tests (the DAV client itself is tested against the captures).
// Serialisable, so a child process can see the same files.
import { createHash } from 'node:crypto';
import type { ActingUser } from '../../../lib/nextcloud/identity.ts';
import { FileTooLargeError, type FileAccess, type NodeInfo } from '../../../lib/knowledge/nextcloud-files.ts';

interface MemNode {
  id: number;
  owner: string;
  /** Path in the owner's home. */
  path: string;
  folder: boolean;
  content: string; // base64
  mime: string;
  etag: string;
}

interface Share {
  fileId: number;
  withUid: string;
  reshare: boolean;
  /** Where the share appears in the recipient's home (default: its name at the top). */
  mountPath?: string;
}

export class MemoryFiles implements FileAccess {
  nodes: MemNode[] = [];
  shares: Share[] = [];
  reads: Array<{ uid: string; fileId: string }> = [];
  #nextId = 100;
  #stamp = 0;

  static fromJSON(json: string): MemoryFiles {
    const data = JSON.parse(json) as { nodes: MemNode[]; shares: Share[]; nextId: number };
    const m = new MemoryFiles();
    m.nodes = data.nodes;
    m.shares = data.shares;
    m.#nextId = data.nextId;
    return m;
  }

  toJSON(): string {
    return JSON.stringify({ nodes: this.nodes, shares: this.shares, nextId: this.#nextId });
  }

  #etag(content: string): string {
    return createHash('md5').update(content).update(String(++this.#stamp)).digest('hex');
  }

  folder(owner: string, path: string): string {
    const n: MemNode = { id: this.#nextId++, owner, path, folder: true, content: '', mime: 'httpd/unix-directory', etag: this.#etag(path) };
    this.nodes.push(n);
    return String(n.id);
  }

  file(owner: string, path: string, bytes: Uint8Array | string, mime = 'application/octet-stream'): string {
    const content = Buffer.from(typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes).toString('base64');
    const n: MemNode = { id: this.#nextId++, owner, path, folder: false, content, mime, etag: this.#etag(content) };
    this.nodes.push(n);
    return String(n.id);
  }

  write(fileId: string, bytes: Uint8Array | string): void {
    const n = this.nodes.find((x) => String(x.id) === fileId)!;
    n.content = Buffer.from(typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes).toString('base64');
    n.etag = this.#etag(n.content);
  }

  /** A new etag with the same bytes (e.g. a metadata change). */
  touch(fileId: string): void {
    const n = this.nodes.find((x) => String(x.id) === fileId)!;
    n.etag = this.#etag(n.content + 'touch');
  }

  remove(fileId: string): void {
    const n = this.nodes.find((x) => String(x.id) === fileId);
    if (!n) return;
    this.nodes = this.nodes.filter((x) => !(x.owner === n.owner && (x.id === n.id || x.path.startsWith(`${n.path}/`))));
  }

  share(fileId: string, withUid: string, reshare: boolean, mountPath?: string): void {
    this.shares.push({ fileId: Number(fileId), withUid, reshare, ...(mountPath ? { mountPath } : {}) });
  }

  /** How `uid` sees a node: own files under their path, shared ones at the share's name. */
  #view(uid: string, n: MemNode): NodeInfo | null {
    const base = (path: string, ownerId: string, permissions: string, mountType: string): NodeInfo => ({
      fileId: String(n.id),
      path,
      name: path.split('/').pop() ?? '',
      folder: n.folder,
      etag: `"${n.etag}"`,
      size: n.folder ? 0 : Buffer.from(n.content, 'base64').length,
      mimeType: n.mime,
      ownerId,
      permissions,
      mountType,
    });
    if (n.owner === uid) return base(n.path, uid, n.folder ? 'RGDNVCK' : 'RGDNVW', '');
    for (const s of this.shares) {
      if (s.withUid !== uid) continue;
      const root = this.nodes.find((x) => x.id === s.fileId);
      if (!root || root.owner !== n.owner) continue;
      if (n.id !== root.id && !n.path.startsWith(`${root.path}/`)) continue;
      const name = s.mountPath ?? root.path.split('/').pop() ?? '';
      const rel = n.id === root.id ? name : `${name}/${n.path.slice(root.path.length + 1)}`;
      return base(rel, n.owner, `S${s.reshare ? 'R' : ''}${n.folder ? 'GDNVCK' : 'GDNVW'}${n.id === root.id ? 'M' : ''}`, 'shared');
    }
    return null;
  }

  async findById(user: ActingUser, fileId: string): Promise<NodeInfo | null> {
    const n = this.nodes.find((x) => String(x.id) === fileId);
    return n ? this.#view(user.uid, n) : null;
  }

  async list(user: ActingUser, folder: NodeInfo): Promise<NodeInfo[]> {
    const out: NodeInfo[] = [];
    for (const n of this.nodes) {
      const v = this.#view(user.uid, n);
      if (!v || v.fileId === folder.fileId) continue;
      const parent = v.path.includes('/') ? v.path.slice(0, v.path.lastIndexOf('/')) : '';
      if (parent === folder.path) out.push(v);
    }
    return out;
  }

  async read(user: ActingUser, node: NodeInfo, maxBytes: number): Promise<Uint8Array> {
    const n = this.nodes.find((x) => String(x.id) === node.fileId);
    if (!n || !this.#view(user.uid, n)) throw new Error('not found');
    const bytes = Buffer.from(n.content, 'base64');
    if (bytes.length > maxBytes) throw new FileTooLargeError('the file is too large');
    this.reads.push({ uid: user.uid, fileId: node.fileId });
    return new Uint8Array(bytes);
  }
}
